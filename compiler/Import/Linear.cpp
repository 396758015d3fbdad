//===- Linear.cpp - ONNX Gemm and MatMul -> dlgraph -----------------------===//
//
// Gemm (transposes, alpha, beta, bias) and MatMul (N-D, batch broadcasting).
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;
namespace semantics = dlc::semantics;

LogicalResult Importer::gemm() {
  float alpha = attrFloat("alpha", 1.0f), beta = attrFloat("beta", 1.0f);
  int64_t transA = attrInt("transA", 0), transB = attrInt("transB", 0);
  if (attrFailed)
    return failure();
  Value a = operand(0), b = a ? operand(1) : Value();
  if (!b)
    return failure();
  Value c;
  if (hasInput(2) && !(c = operand(2)))
    return failure();
  auto at = cast<RankedTensorType>(a.getType()),
       bt = cast<RankedTensorType>(b.getType());
  if (at.getRank() != 2 || bt.getRank() != 2)
    return nodeError() << "A and B must be 2-D, got shapes "
                       << shapeStr(at.getShape()) << " and "
                       << shapeStr(bt.getShape());
  int64_t m = transA ? at.getDimSize(1) : at.getDimSize(0);
  int64_t ka = transA ? at.getDimSize(0) : at.getDimSize(1);
  int64_t kb = transB ? bt.getDimSize(1) : bt.getDimSize(0);
  int64_t n = transB ? bt.getDimSize(0) : bt.getDimSize(1);
  if (ka != kb)
    return nodeError() << "inner dimensions differ: op(A) is [" << m << ", "
                       << ka << "], op(B) is [" << kb << ", " << n << "]";
  if (c) {
    auto ct = cast<RankedTensorType>(c.getType());
    if (!semantics::broadcastsTo(ct.getShape(), ArrayRef<int64_t>{m, n}))
      return nodeError() << "C of shape " << shapeStr(ct.getShape())
                         << " does not broadcast to [" << m << ", " << n << "]";
  }
  return define(0, gr::GemmOp::create(builder, nodeLoc, a, b, c,
                                      builder.getF32FloatAttr(alpha),
                                      builder.getF32FloatAttr(beta),
                                      builder.getBoolAttr(transA != 0),
                                      builder.getBoolAttr(transB != 0)));
}

LogicalResult Importer::matmul() {
  Value a = operand(0), b = a ? operand(1) : Value();
  if (!b)
    return failure();
  auto at = cast<RankedTensorType>(a.getType()),
       bt = cast<RankedTensorType>(b.getType());
  if (at.getRank() < 1 || bt.getRank() < 1)
    return nodeError() << "MatMul operands must have rank >= 1, got shapes "
                       << shapeStr(at.getShape()) << " and "
                       << shapeStr(bt.getShape());
  if (!at.getElementType().isF32() || !bt.getElementType().isF32())
    return nodeError() << "MatMul supports f32 operands, got "
                       << at.getElementType() << " and " << bt.getElementType();
  // numpy.matmul semantics (dlgraph.matmul has them too).
  ArrayRef<int64_t> as = at.getShape(), bs = bt.getShape();
  int64_t ka = as.back(), kb = bs.size() == 1 ? bs[0] : bs[bs.size() - 2];
  if (ka != kb)
    return nodeError() << "contracting dimensions differ: "
                       << shapeStr(as) << " x " << shapeStr(bs);
  ArrayRef<int64_t> aBatch = as.drop_back(std::min<size_t>(as.size(), 2));
  ArrayRef<int64_t> bBatch = bs.drop_back(std::min<size_t>(bs.size(), 2));
  if (!semantics::broadcastShapes(aBatch, bBatch))
    return nodeError() << "MatMul batch dimensions do not broadcast: "
                       << shapeStr(as) << " x " << shapeStr(bs);
  return define(0, gr::MatMulOp::create(builder, nodeLoc, a, b));
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

ArrayRef<OpMapping> Importer::linearOps() {
  static const OpMapping ops[] = {
      {"Gemm", 6, &Importer::gemm},
      {"MatMul", 1, &Importer::matmul},
  };
  return ops;
}
