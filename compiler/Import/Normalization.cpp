//===- Normalization.cpp - ONNX normalizations -> dlgraph -----------------===//
//
// BatchNormalization (inference; running statistics as variables),
// LayerNormalization, InstanceNormalization, GroupNormalization,
// MeanVarianceNormalization, LpNormalization and LRN (decomposed into
// reductions, an average pool and elementwise ops).
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;

LogicalResult Importer::batchNorm() {
  float epsilon = attrFloat("epsilon", 1e-5f);
  float momentum = attrFloat("momentum", 0.9f);
  int64_t trainingMode = attrInt("training_mode", 0);
  // Before opset 7, is_test = 0 asks for batch statistics, as
  // training_mode = 1 does from opset 14.
  if (opset < 7)
    trainingMode = attrInt("is_test", 0) ? 0 : 1;
  // Before opset 9, spatial = 0 (per-activation statistics) existed.
  int64_t spatial = opset < 9 ? attrInt("spatial", 1) : 1;
  if (attrFailed)
    return failure();
  if (spatial != 1)
    return nodeError() << "attribute spatial = " << spatial
                       << " is not supported; supported: 1 (opset " << opset
                       << ")";
  if (trainingMode != 0 && trainingMode != 1)
    return nodeError() << "attribute training_mode = " << trainingMode
                       << " is not supported; supported: 0, 1";
  // training_mode=1 maps to batch_norm (the training pass switches it to
  // batch statistics) unless the running-statistics outputs are used: then
  // the node is decomposed (batchNormWithStatistics).
  auto used = [&](int i) {
    return node->output_size() > i && !node->output(i).empty() &&
           consumed.contains(node->output(i));
  };
  if (trainingMode == 1 && (used(1) || used(2)))
    return batchNormWithStatistics(epsilon, momentum);
  if (failed(requireOnlyLeadingOutputs(1)))
    return failure();
  SmallVector<Value> ops;
  for (int i = 0; i < 5; ++i) {
    Slot *s = input(i);
    if (!s)
      return failure();
    // Running statistics are state that training overwrites, so they must
    // not share a variable with anything else. Exporters deduplicate
    // initializers by value (PyTorch in eval mode turns a fresh BatchNorm's
    // running_mean/running_var into its bias/weight: all zeros/ones), so a
    // shared statistic gets a private copy, named like PyTorch's buffers.
    if (i >= 3 && !s->variable.empty() && useCount[s->variable] > 1) {
      Slot copy;
      copy.constant = s->constant;
      copy.resource = s->resource;
      copy.loc = nodeLoc;
      std::string base = nodeName + (i == 3 ? ".running_mean" : ".running_var");
      copy.variable = base;
      for (int k = 1;
           slots.count(copy.variable) || variableReads.count(copy.variable) ||
           copy.variable == "main";
           ++k)
        copy.variable = base + "_" + std::to_string(k);
      ops.push_back(materialize(copy));
      continue;
    }
    Value v = operand(i);
    if (!v)
      return failure();
    ops.push_back(v);
  }
  auto xt = cast<RankedTensorType>(ops[0].getType());
  if (xt.getRank() < 2)
    return nodeError() << "input must have rank >= 2 (N, C, ...), got "
                       << shapeStr(xt.getShape());
  for (int i = 1; i < 5; ++i) {
    auto t = cast<RankedTensorType>(ops[i].getType());
    if (t.getRank() != 1 || t.getDimSize(0) != xt.getDimSize(1))
      return nodeError() << "input " << i << " ('" << node->input(i)
                         << "') has shape " << shapeStr(t.getShape())
                         << ", expected [" << xt.getDimSize(1) << "]";
  }
  auto op = gr::BatchNormOp::create(
      builder, nodeLoc, ops[0], ops[1], ops[2], ops[3], ops[4],
      builder.getF32FloatAttr(epsilon), builder.getF32FloatAttr(momentum));
  return define(0, op);
}

/// BatchNormalization with training_mode = 1 and its running mean/var
/// outputs used, as the ONNX reference computes it: batch mean and biased
/// variance over every axis but 1 normalize x; running_mean =
/// input_mean * momentum + mean * (1 - momentum), running_var likewise.
/// Elementwise ops and reductions, so gradients follow.
LogicalResult Importer::batchNormWithStatistics(float epsilon,
                                                float momentum) {
  SmallVector<Value> in;
  for (int i = 0; i < 5; ++i) {
    Value v = operand(i);
    if (!v)
      return failure();
    in.push_back(v);
  }
  auto xt = cast<RankedTensorType>(in[0].getType());
  int64_t rank = xt.getRank();
  if (rank < 2)
    return nodeError() << "input must have rank >= 2 (N, C, ...), got "
                       << shapeStr(xt.getShape());
  int64_t c = xt.getDimSize(1);
  for (int i = 1; i < 5; ++i) {
    auto t = cast<RankedTensorType>(in[i].getType());
    if (t.getRank() != 1 || t.getDimSize(0) != c)
      return nodeError() << "input " << i << " ('" << node->input(i)
                         << "') has shape " << shapeStr(t.getShape())
                         << ", expected [" << c << "]";
  }
  SmallVector<int64_t> axes, channelShape(rank, 1);
  for (int64_t d = 0; d < rank; ++d)
    if (d != 1)
      axes.push_back(d);
  channelShape[1] = c;
  auto channelType = xt.clone(channelShape);
  auto keep = builder.getUnitAttr();
  auto axesAttr = builder.getDenseI64ArrayAttr(axes);
  Value x = in[0];
  Value mean = gr::ReduceMeanOp::create(builder, nodeLoc, x, axesAttr, keep);
  Value centered = gr::SubOp::create(builder, nodeLoc, x, mean);
  Value var = gr::ReduceMeanOp::create(
      builder, nodeLoc, gr::MulOp::create(builder, nodeLoc, centered, centered),
      axesAttr, keep);
  Value denom = gr::SqrtOp::create(
      builder, nodeLoc,
      gr::AddOp::create(builder, nodeLoc, var,
                        splatLike(var, (double)epsilon)));
  auto perChannel = [&](Value v) -> Value {
    return gr::ReshapeOp::create(builder, nodeLoc, channelType, v);
  };
  Value y = gr::MulOp::create(
      builder, nodeLoc, gr::DivOp::create(builder, nodeLoc, centered, denom),
      perChannel(in[1]));
  y = gr::AddOp::create(builder, nodeLoc, y, perChannel(in[2]));
  auto flat = cast<RankedTensorType>(in[3].getType());
  auto running = [&](Value old, Value batch) -> Value {
    Value b = gr::ReshapeOp::create(builder, nodeLoc, flat, batch);
    return gr::AddOp::create(
        builder, nodeLoc,
        gr::MulOp::create(builder, nodeLoc, old,
                          splatLike(old, (double)momentum)),
        gr::MulOp::create(builder, nodeLoc, b,
                          splatLike(b, 1.0 - (double)momentum)));
  };
  if (failed(define(0, y)))
    return failure();
  if (node->output_size() > 1 && !node->output(1).empty() &&
      failed(define(1, running(in[3], mean))))
    return failure();
  if (node->output_size() > 2 && !node->output(2).empty() &&
      failed(define(2, running(in[4], var))))
    return failure();
  return success();
}

LogicalResult Importer::normalization() {
  bool layer = node->op_type() == "LayerNormalization";
  int64_t axis = layer ? attrInt("axis", -1) : 2;
  float eps = attrFloat("epsilon", 1e-5f);
  if (attrFailed)
    return failure();
  Value x = floatOperand(0);
  Value scale = x ? floatOperand(1) : Value();
  if (!scale)
    return failure();
  Value bias;
  if (hasInput(2) && !(bias = floatOperand(2)))
    return failure();
  if (!layer && !bias) {
    (void)input(2); // reports the missing B
    return failure();
  }
  auto t = cast<RankedTensorType>(x.getType());
  int64_t rank = t.getRank();
  if (!layer && rank < 3)
    return nodeError() << "input of rank " << rank
                       << " is not supported; expected [N, C, D1, ...]";
  if (axis < -rank || axis >= rank)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << rank;
  if (axis < 0)
    axis += rank;
  SmallVector<int64_t> axes;
  for (int64_t i = axis; i < rank; ++i)
    axes.push_back(i);
  // Per-channel scale and bias of InstanceNormalization: [C] -> [C, 1, ...].
  auto perChannel = [&](Value v) -> FailureOr<Value> {
    auto vt = cast<RankedTensorType>(v.getType());
    if (vt.getRank() != 1 || vt.getDimSize(0) != t.getDimSize(1) ||
        vt.getElementType() != t.getElementType())
      return nodeError() << "scale and B must be [" << t.getDimSize(1)
                         << "] of " << t.getElementType() << ", got " << vt;
    SmallVector<int64_t> shape(rank - 1, 1);
    shape[0] = t.getDimSize(1);
    return Value(gr::ReshapeOp::create(
        builder, nodeLoc, RankedTensorType::get(shape, t.getElementType()),
        v));
  };
  auto fitsX = [&](Value v) -> LogicalResult {
    auto vt = cast<RankedTensorType>(v.getType());
    if (vt.getElementType() != t.getElementType() ||
        !dlc::semantics::broadcastsTo(vt.getShape(), t.getShape()))
      return nodeError() << "scale/B of type " << vt
                         << " does not broadcast to X of type " << t;
    return success();
  };
  if (layer) {
    if (failed(fitsX(scale)) || (bias && failed(fitsX(bias))))
      return failure();
    if (failed(requireOnlyLeadingOutputs(3)))
      return failure();
  } else {
    auto s = perChannel(scale);
    if (failed(s))
      return failure();
    auto b = perChannel(bias);
    if (failed(b))
      return failure();
    scale = *s;
    bias = *b;
    if (failed(requireOnlyLeadingOutputs(1)))
      return failure();
  }
  // mean = E[x], d = x - mean, var = E[d^2], y = d * rsqrt(var + eps).
  Value mean = reduceOver<gr::ReduceMeanOp>(x, axes, /*keepdims=*/true);
  Value d = gr::SubOp::create(builder, nodeLoc, x, mean);
  Value sq = gr::MulOp::create(builder, nodeLoc, d, d);
  Value var = reduceOver<gr::ReduceMeanOp>(sq, axes, /*keepdims=*/true);
  Value ve = gr::AddOp::create(builder, nodeLoc, var, splatLike(var, eps));
  Value inv = gr::RsqrtOp::create(builder, nodeLoc, ve);
  Value y = gr::MulOp::create(builder, nodeLoc, d, inv);
  y = gr::MulOp::create(builder, nodeLoc, y, scale);
  if (bias)
    y = gr::AddOp::create(builder, nodeLoc, y, bias);
  if (failed(define(0, y)))
    return failure();
  if (layer) {
    if (failed(define(1, mean)) || failed(define(2, inv)))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// GroupNormalization, MeanVarianceNormalization, LpNormalization, LRN
//===----------------------------------------------------------------------===//

LogicalResult Importer::groupNormalization() {
  int64_t groups = attrInt("num_groups", 0);
  float eps = attrFloat("epsilon", 1e-5f);
  if (attrFailed)
    return failure();
  Value x = floatOperand(0);
  Value scale = x ? floatOperand(1) : Value();
  Value bias = scale ? floatOperand(2) : Value();
  if (!bias)
    return failure();
  auto t = cast<RankedTensorType>(x.getType());
  int64_t rank = t.getRank();
  if (rank < 3)
    return nodeError() << "input of rank " << rank
                       << " is not supported; expected [N, C, D1, ...]";
  int64_t n = t.getDimSize(0), c = t.getDimSize(1);
  if (groups < 1 || c % groups != 0)
    return nodeError() << "num_groups = " << groups << " does not divide the "
                       << c << " channels";
  SmallVector<int64_t> chanShape(rank - 1, 1);
  chanShape[0] = c;
  for (Value v : {scale, bias}) {
    auto vt = cast<RankedTensorType>(v.getType());
    if (vt.getRank() != 1 || vt.getDimSize(0) != c ||
        vt.getElementType() != t.getElementType())
      return nodeError() << "scale and bias must be [" << c << "] of "
                         << elementTypeName(t.getElementType()) << ", got "
                         << shapeStr(vt.getShape()) << " of "
                         << elementTypeName(vt.getElementType());
  }
  // Statistics over [N, G, C / G * D1 * ...].
  Value g = reshapeIfNeeded(x, {n, groups, product(t.getShape()) / (n * groups)});
  Value mean = reduceOver<gr::ReduceMeanOp>(g, {2}, /*keepdims=*/true);
  Value d = gr::SubOp::create(builder, nodeLoc, g, mean);
  Value var = reduceOver<gr::ReduceMeanOp>(
      gr::MulOp::create(builder, nodeLoc, d, d), {2}, /*keepdims=*/true);
  Value inv = gr::RsqrtOp::create(
      builder, nodeLoc,
      gr::AddOp::create(builder, nodeLoc, var, splatLike(var, eps)));
  Value y = reshapeIfNeeded(gr::MulOp::create(builder, nodeLoc, d, inv),
                            t.getShape());
  y = gr::MulOp::create(builder, nodeLoc, y, reshapeIfNeeded(scale, chanShape));
  y = gr::AddOp::create(builder, nodeLoc, y, reshapeIfNeeded(bias, chanShape));
  return define(0, y);
}

LogicalResult Importer::meanVarianceNormalization() {
  SmallVector<int64_t> axes = attrInts("axes", {0, 2, 3});
  if (attrFailed)
    return failure();
  Value x = floatOperand(0);
  if (!x)
    return failure();
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  if (failed(normalizeAxes(axes, rank)))
    return failure();
  llvm::sort(axes);
  // (x - E[x]) / (sqrt(E[(x - E[x])^2]) + 1e-9), the op's function body.
  Value mean = reduceOver<gr::ReduceMeanOp>(x, axes, /*keepdims=*/true);
  Value d = gr::SubOp::create(builder, nodeLoc, x, mean);
  Value var = reduceOver<gr::ReduceMeanOp>(
      gr::MulOp::create(builder, nodeLoc, d, d), axes, /*keepdims=*/true);
  Value sd = gr::SqrtOp::create(builder, nodeLoc, var);
  sd = gr::AddOp::create(builder, nodeLoc, sd, splatLike(sd, 1e-9));
  return define(0, gr::DivOp::create(builder, nodeLoc, d, sd));
}

LogicalResult Importer::lpNormalization() {
  int64_t axis = attrInt("axis", -1);
  int64_t p = attrInt("p", 2);
  if (attrFailed)
    return failure();
  if (p != 1 && p != 2)
    return nodeError() << "attribute p = " << p
                       << " is not supported; supported: 1, 2";
  Value x = floatOperand(0);
  if (!x)
    return failure();
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  SmallVector<int64_t> axes{axis};
  if (failed(normalizeAxes(axes, rank)))
    return failure();
  Value norm;
  if (p == 1) {
    norm = reduceOver<gr::ReduceSumOp>(gr::AbsOp::create(builder, nodeLoc, x),
                                       axes, /*keepdims=*/true);
  } else {
    norm = reduceOver<gr::ReduceSumOp>(gr::MulOp::create(builder, nodeLoc, x, x),
                                       axes, /*keepdims=*/true);
    norm = gr::SqrtOp::create(builder, nodeLoc, norm);
  }
  // A zero norm (every element 0) divides by 1 instead: the result is 0.
  Value zero = gr::CompareOp::create(builder, nodeLoc, "eq", norm,
                                     splatLike(norm, 0.0));
  norm = gr::SelectOp::create(builder, nodeLoc, zero, splatLike(norm, 1.0),
                              norm);
  return define(0, gr::DivOp::create(builder, nodeLoc, x, norm));
}

LogicalResult Importer::lrn() {
  int64_t size = attrInt("size", 0);
  float alpha = attrFloat("alpha", 1e-4f);
  float beta = attrFloat("beta", 0.75f);
  float bias = attrFloat("bias", 1.0f);
  if (attrFailed)
    return failure();
  Value x = floatOperand(0);
  if (!x)
    return failure();
  auto t = cast<RankedTensorType>(x.getType());
  if (!t.getElementType().isF32())
    return unsupportedLowPrecision(0, "float (f32)");
  if (t.getRank() < 3)
    return nodeError() << "input of rank " << t.getRank()
                       << " is not supported; expected [N, C, D1, ...]";
  int64_t n = t.getDimSize(0), c = t.getDimSize(1);
  if (size < 1)
    return nodeError() << "attribute size = " << size << " must be >= 1";
  int64_t rest = product(t.getShape().drop_front(2));
  // alpha / size * (the sum of squares over channels c - floor((size-1)/2)
  // .. c + ceil((size-1)/2)) is alpha times an average pool of x^2 along C
  // that counts the zero padding, over [N, 1, C, rest].
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  Value sq = reshapeIfNeeded(gr::MulOp::create(builder, nodeLoc, x, x),
                             {n, 1, c, rest});
  Value avg = gr::AveragePoolOp::create(
      builder, nodeLoc, sq, builder.getDenseI64ArrayAttr({size, 1}),
      builder.getDenseI64ArrayAttr({1, 1}),
      builder.getDenseI64ArrayAttr({lo, 0, hi, 0}),
      builder.getDenseI64ArrayAttr({1, 1}), UnitAttr(), builder.getUnitAttr());
  Value den = gr::AddOp::create(
      builder, nodeLoc,
      gr::MulOp::create(builder, nodeLoc, avg, splatLike(avg, alpha)),
      splatLike(avg, bias));
  den = gr::PowOp::create(builder, nodeLoc, den, splatLike(den, beta));
  return define(0, gr::DivOp::create(builder, nodeLoc, x,
                                     reshapeIfNeeded(den, t.getShape())));
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

ArrayRef<OpMapping> Importer::normalizationOps() {
  static const OpMapping ops[] = {
      {"BatchNormalization", 6, &Importer::batchNorm},
      {"GroupNormalization", 21, &Importer::groupNormalization},
      {"InstanceNormalization", 6, &Importer::normalization},
      {"LRN", 1, &Importer::lrn},
      {"LayerNormalization", kMinOpset, &Importer::normalization},
      {"LpNormalization", 1, &Importer::lpNormalization, 22},
      {"MeanVarianceNormalization", 9, &Importer::meanVarianceNormalization},
  };
  return ops;
}
