//===- ClassicalML.cpp - ai.onnx.ml ops -> dlgraph ------------------------===//
//
// The ai.onnx.ml (version 1) ops that are tensor arithmetic: Binarizer (a
// compare and a cast) and ArrayFeatureExtractor (a gather on the last axis).
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;

LogicalResult Importer::binarizer() {
  float threshold = attrFloat("threshold", 0.0f);
  if (attrFailed)
    return failure();
  Value x = floatOperand(0);
  if (!x)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  Value above = gr::CompareOp::create(
      builder, nodeLoc, "gt", x,
      splatOf(RankedTensorType::get({}, xt.getElementType()), threshold));
  return define(0, gr::CastOp::create(builder, nodeLoc, xt, above));
}

LogicalResult Importer::arrayFeatureExtractor() {
  Value x = floatOperand(0);
  Slot *is = input(1);
  if (!x || !is)
    return failure();
  if (!is->type().getElementType().isInteger(64))
    return nodeError() << "indices (input '" << node->input(1)
                       << "') must be int64";
  auto xt = cast<RankedTensorType>(x.getType());
  if (xt.getRank() < 1)
    return nodeError() << "input 0 must have rank >= 1";
  // The indices, flattened, select along the last axis; a vector input
  // gives one row ([1, n]), as onnxruntime and the ONNX reference do.
  int64_t n = is->type().getNumElements();
  Value idx = reshapeIfNeeded(materialize(*is), {n});
  if (xt.getRank() == 1)
    x = reshapeIfNeeded(x, {1, xt.getDimSize(0)});
  int64_t axis = cast<RankedTensorType>(x.getType()).getRank() - 1;
  return define(0, gr::GatherOp::create(builder, nodeLoc, x, idx,
                                        builder.getI64IntegerAttr(axis)));
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

ArrayRef<OpMapping> Importer::classicalMLOps() {
  static const OpMapping ops[] = {
      {"ai.onnx.ml.ArrayFeatureExtractor", 1,
       &Importer::arrayFeatureExtractor},
      {"ai.onnx.ml.Binarizer", 1, &Importer::binarizer},
  };
  return ops;
}
