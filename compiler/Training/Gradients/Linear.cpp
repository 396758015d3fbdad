//===- Linear.cpp - gradients of gemm and matmul --------------------------===//
//
// dA and dB of dlgraph.gemm (ONNX Gemm) and dlgraph.matmul (numpy.matmul,
// broadcast batch dims), built from GEMMs and matmuls.
//
//===----------------------------------------------------------------------===//
#include "compiler/Training/Gradients/GradientUtils.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::gradients;

static LogicalResult gemmGrad(OpBuilder &b, Operation *op, RGrads dy,
                              Grads dx) {
  // Y = alpha * op(A) op(B) + beta * C.
  // d op(A) = alpha * dY op(B)^T, d op(B) = alpha * op(A)^T dY.
  auto gemm = cast<GemmOp>(op);
  Location loc = op->getLoc();
  Value a = gemm.getA(), bm = gemm.getB(), g = dy[0];
  bool ta = gemm.getTransA(), tb = gemm.getTransB();
  APFloat alpha = gemm.getAlpha(), one(1.0f);
  auto mk = [&](Type type, Value x, Value y, bool tx, bool ty) -> Value {
    return GemmOp::create(b, loc, type, x, y, /*c=*/Value(), alpha, one, tx,
                          ty);
  };
  if (!ta)
    dx[0] = mk(a.getType(), g, bm, false, !tb);
  else
    dx[0] = mk(a.getType(), bm, g, tb, true);
  if (!tb)
    dx[1] = mk(bm.getType(), a, g, !ta, false);
  else
    dx[1] = mk(bm.getType(), g, a, true, ta);
  if (Value c = gemm.getC()) {
    Value gc = g;
    double beta = gemm.getBeta().convertToDouble();
    if (beta != 1.0)
      gc = binary<MulOp>(b, loc, tensorType(g), g,
                         splat(b, loc, tensorType(g), beta));
    dx[2] = reduceTo(b, loc, gc, tensorType(c));
  }
  return success();
}

/// |v| with its last two dims swapped.
static Value transposeLast2(OpBuilder &b, Location loc, Value v) {
  auto t = tensorType(v);
  int64_t r = t.getRank();
  SmallVector<int64_t> perm, shape(t.getShape());
  for (int64_t i = 0; i < r; ++i)
    perm.push_back(i);
  std::swap(perm[r - 2], perm[r - 1]);
  std::swap(shape[r - 2], shape[r - 1]);
  return TransposeOp::create(
      b, loc, RankedTensorType::get(shape, t.getElementType()), v, perm);
}

static Value reshapeTo(OpBuilder &b, Location loc, Value v,
                       ArrayRef<int64_t> shape) {
  auto t = tensorType(v);
  if (t.getShape() == shape)
    return v;
  return ReshapeOp::create(b, loc,
                           RankedTensorType::get(shape, t.getElementType()), v);
}

static LogicalResult matmulGrad(OpBuilder &b, Operation *op, RGrads dy,
                                Grads dx) {
  // numpy.matmul: Y[..., M, N] = A[..., M, K] B[..., K, N] with broadcast
  // batch dims. dA = dY B^T and dB = A^T dY, each summed over the batch dims
  // along which its operand was broadcast (reduceTo).
  auto mm = cast<MatMulOp>(op);
  Location loc = op->getLoc();
  Value a = mm.getLhs(), bm = mm.getRhs();
  auto at = tensorType(a), bt = tensorType(bm);
  Type et = at.getElementType();
  // Promote 1-D operands ([K] -> [1, K] on the left, [K, 1] on the right)
  // and give dY the promoted result shape.
  SmallVector<int64_t> as(at.getShape()), bs(bt.getShape());
  if (as.size() == 1)
    as.insert(as.begin(), 1);
  if (bs.size() == 1)
    bs.push_back(1);
  Value a2 = reshapeTo(b, loc, a, as), b2 = reshapeTo(b, loc, bm, bs);
  SmallVector<int64_t> ys(tensorType(op->getResult(0)).getShape());
  if (at.getRank() == 1)
    ys.insert(ys.end() - (bt.getRank() == 1 ? 0 : 1), 1);
  if (bt.getRank() == 1)
    ys.push_back(1);
  Value g = reshapeTo(b, loc, dy[0], ys);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  APFloat one(1.0f);
  auto gemm = [&](ArrayRef<int64_t> shape, Value x, Value y, bool tx,
                  bool ty) -> Value {
    return GemmOp::create(b, loc, RankedTensorType::get(shape, et), x, y,
                          Value(), one, one, tx, ty);
  };
  Value da, db;
  if (as.size() == 2 && bs.size() == 2) {
    da = gemm({m, k}, g, b2, false, true);
    db = gemm({k, n}, a2, g, true, false);
  } else if (bs.size() == 2) {
    // B is shared by every batch (a linear layer on [..., M, K]): flatten
    // the batch into the rows and use single GEMMs.
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < ys.size(); ++i)
      rows *= ys[i];
    Value g2 = reshapeTo(b, loc, g, {rows, n});
    Value af = reshapeTo(b, loc, a2, {rows, k});
    da = reshapeTo(b, loc, gemm({rows, k}, g2, b2, false, true), as);
    db = gemm({k, n}, af, g2, true, false);
  } else {
    SmallVector<int64_t> batch(ys.begin(), ys.end() - 2);
    SmallVector<int64_t> daShape(batch), dbShape(batch);
    daShape.append({m, k});
    dbShape.append({k, n});
    da = MatMulOp::create(b, loc, RankedTensorType::get(daShape, et), g,
                          transposeLast2(b, loc, b2));
    db = MatMulOp::create(b, loc, RankedTensorType::get(dbShape, et),
                          transposeLast2(b, loc, a2), g);
    da = reduceTo(b, loc, da, RankedTensorType::get(as, et));
    db = reduceTo(b, loc, db, RankedTensorType::get(bs, et));
  }
  dx[0] = reshapeTo(b, loc, da, at.getShape());
  dx[1] = reshapeTo(b, loc, db, bt.getShape());
  return success();
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void dlc::gradients::registerLinearGradients(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, GraphDialect *) {
    attachGradient<GemmOp, gemmGrad>(ctx);
    attachGradient<MatMulOp, matmulGrad>(ctx);
  });
}
