//===- Sampling.cpp - ONNX resampling ops -> dlgraph -----------------------===//
//
// Resampling decomposed into existing dlgraph ops, so that gradients and
// lowering are those of the ops they decompose into: the separable form of
// Resize (cubic, antialiasing, half_pixel_symmetric, tf_crop_and_resize),
// one constant interpolation matrix per resized axis applied with
// dlgraph.matmul.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;
namespace semantics = dlc::semantics;

/// A dlgraph.constant of f32 |type| holding |values| (double, rounded).
static Value f32Constant(OpBuilder &b, Location loc, RankedTensorType type,
                         ArrayRef<double> values) {
  SmallVector<float> v(values.begin(), values.end());
  return gr::ConstantOp::create(
      b, loc, cast<ElementsAttr>(DenseElementsAttr::get(type, ArrayRef(v))));
}

FailureOr<Value>
Importer::resizeSeparable(Value x, ArrayRef<int64_t> shape,
                          ArrayRef<double> scales,
                          const semantics::ResizeAxisRule &rule,
                          ArrayRef<double> roi, double extrapolation) {
  auto xt = cast<RankedTensorType>(x.getType());
  if (!xt.getElementType().isF32())
    return nodeError() << "input 0 ('" << node->input(0)
                       << "') has element type "
                       << elementTypeName(xt.getElementType())
                       << ", which is not supported with mode '" << rule.mode
                       << "', coordinate_transformation_mode '" << rule.coord
                       << "' or antialias yet; supported: float (f32)";
  int64_t rank = xt.getRank();
  Value y = x;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t in = xt.getDimSize(d), out = shape[d];
    semantics::ResizeAxisRule axisRule = rule;
    if (!roi.empty()) {
      axisRule.roiStart = roi[d];
      axisRule.roiEnd = roi[rank + d];
    }
    if (boundedNumElements({in, out}, kMaxFoldElements) < 0)
      return nodeError() << "resizing axis " << d << " from " << in << " to "
                         << out << " needs a " << out << " x " << in
                         << " interpolation matrix, beyond the importer's "
                            "constant limit of "
                         << kMaxFoldElements << " elements";
    std::vector<double> w;
    std::vector<bool> extrapolated;
    semantics::resizeAxisWeights(axisRule, in, out, scales[d], w,
                                 extrapolated);
    bool extrapolates = llvm::is_contained(extrapolated, true);
    bool identity = in == out && !extrapolates;
    for (int64_t o = 0; identity && o < out; ++o)
      for (int64_t i = 0; identity && i < in; ++i)
        identity = w[o * in + i] == (o == i ? 1.0 : 0.0);
    if (identity)
      continue;
    // y viewed as [pre, in, post]; the [out, in] matrix broadcasts over pre.
    auto yt = cast<RankedTensorType>(y.getType());
    int64_t pre = product(yt.getShape().take_front(d));
    int64_t post = product(yt.getShape().drop_front(d + 1));
    Value v = reshapeIfNeeded(y, {pre, in, post});
    Value m = f32Constant(builder, nodeLoc,
                          RankedTensorType::get({out, in}, builder.getF32Type()),
                          w);
    Value r = gr::MatMulOp::create(builder, nodeLoc, m, v);
    if (extrapolates) {
      SmallVector<double> bias(out, 0.0);
      for (int64_t o = 0; o < out; ++o)
        if (extrapolated[o])
          bias[o] = extrapolation;
      r = gr::AddOp::create(
          builder, nodeLoc, r,
          f32Constant(builder, nodeLoc,
                      RankedTensorType::get({out, 1}, builder.getF32Type()),
                      bias));
    }
    SmallVector<int64_t> next(yt.getShape());
    next[d] = out;
    y = reshapeIfNeeded(r, next);
  }
  return y;
}
