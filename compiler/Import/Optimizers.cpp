//===- Optimizers.cpp - ai.onnx.preview.training optimizers -> dlgraph ----===//
//
// Adagrad, Momentum (standard and Nesterov) and Adam of the
// ai.onnx.preview.training domain (version 1): one update step of n tensors,
// written out elementwise. R (the learning rate, f32 scalar) and T (the
// update count, int64 scalar) may be run-time values.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;

LogicalResult Importer::optimizerOp() {
  StringRef op = node->op_type();
  // Inputs: R, T, then per state kind n tensors (X, G, and V and/or H).
  int kinds = op == "Adam" ? 4 : 3;
  int n = (node->input_size() - 2) / kinds;
  if (n < 1 || node->input_size() != 2 + kinds * n)
    return nodeError() << op << " takes R, T and " << kinds
                       << " groups of n tensors (X, G, "
                       << (op == "Adam" ? "V, H" : op == "Momentum" ? "V" : "H")
                       << "); it has " << node->input_size() << " inputs";
  if (node->output_size() != (kinds - 1) * n)
    return nodeError() << op << " with " << n << " tensors has "
                       << (kinds - 1) * n << " outputs; it has "
                       << node->output_size();
  float normCoefficient = attrFloat("norm_coefficient", 0.0f);
  float epsilon = attrFloat("epsilon", 1e-6f);
  float decayFactor = attrFloat("decay_factor", 0.0f);
  float alpha = attrFloat("alpha", op == "Adam" ? 0.9f : 0.0f);
  float beta = attrFloat("beta", op == "Adam" ? 0.999f : 0.0f);
  float normCoefficientPost = attrFloat("norm_coefficient_post", 0.0f);
  std::string mode = attrString("mode", "standard");
  if (attrFailed)
    return failure();
  if (op == "Momentum" && mode != "standard" && mode != "nesterov")
    return nodeError() << "attribute mode = '" << mode
                       << "' is not supported; supported: standard, nesterov";
  Value r = floatOperand(0);
  Slot *ts = input(1);
  if (!r || !ts)
    return failure();
  Type tt = ts->type().getElementType();
  if (!tt.isInteger(64) || ts->type().getNumElements() != 1 ||
      cast<RankedTensorType>(r.getType()).getNumElements() != 1)
    return nodeError() << "R must be an f32 scalar and T an int64 scalar";
  auto f32Scalar = RankedTensorType::get({}, builder.getF32Type());
  r = reshapeIfNeeded(r, {});
  Value t = gr::CastOp::create(builder, nodeLoc, f32Scalar,
                               reshapeIfNeeded(materialize(*ts), {}));
  auto c = [&](double v) { return splatOf(f32Scalar, v); };
  auto add = [&](Value a, Value b) -> Value {
    return gr::AddOp::create(builder, nodeLoc, a, b);
  };
  auto sub = [&](Value a, Value b) -> Value {
    return gr::SubOp::create(builder, nodeLoc, a, b);
  };
  auto mul = [&](Value a, Value b) -> Value {
    return gr::MulOp::create(builder, nodeLoc, a, b);
  };
  auto div = [&](Value a, Value b) -> Value {
    return gr::DivOp::create(builder, nodeLoc, a, b);
  };
  auto sqrt = [&](Value a) -> Value {
    return gr::SqrtOp::create(builder, nodeLoc, a);
  };
  Value started = gr::CompareOp::create(builder, nodeLoc, "gt", t, c(0));
  // Per-step scalars.
  Value rate = r;
  if (op == "Adagrad") {
    rate = div(r, add(c(1), mul(t, c(decayFactor))));
  } else if (op == "Adam") {
    // R sqrt(1 - beta^T) / (1 - alpha^T) once T > 0, R at T = 0.
    Value powBeta = gr::PowOp::create(builder, nodeLoc, c(beta), t);
    Value powAlpha = gr::PowOp::create(builder, nodeLoc, c(alpha), t);
    Value corrected =
        div(mul(r, sqrt(sub(c(1), powBeta))), sub(c(1), powAlpha));
    rate = gr::SelectOp::create(builder, nodeLoc, started, corrected, r);
  }
  Value betaAdjusted =
      op == "Momentum"
          ? Value(gr::SelectOp::create(builder, nodeLoc, started, c(beta), c(1)))
          : Value();
  for (int i = 0; i < n; ++i) {
    Value x = floatOperand(2 + i), g = floatOperand(2 + n + i);
    Value s1 = floatOperand(2 + 2 * n + i);
    Value s2 = op == "Adam" ? floatOperand(2 + 3 * n + i) : Value();
    if (!x || !g || !s1 || (op == "Adam" && !s2))
      return failure();
    auto xt = cast<RankedTensorType>(x.getType());
    for (Value v : {g, s1, s2})
      if (v && v.getType() != xt)
        return nodeError() << "the tensors of update " << i
                           << " must have X's type " << xt;
    Value greg = add(mul(c(normCoefficient), x), g);
    if (op == "Adagrad") {
      Value h = add(s1, mul(greg, greg));
      Value step = div(mul(rate, greg), add(sqrt(h), c(epsilon)));
      if (failed(define(i, sub(x, step))) || failed(define(n + i, h)))
        return failure();
    } else if (op == "Momentum") {
      Value v = add(mul(c(alpha), s1), mul(betaAdjusted, greg));
      Value dir = mode == "nesterov" ? add(greg, mul(c(alpha), v)) : v;
      if (failed(define(i, sub(x, mul(r, dir)))) || failed(define(n + i, v)))
        return failure();
    } else {
      Value v = add(mul(c(alpha), s1), mul(c(1 - (double)alpha), greg));
      Value h = add(mul(c(beta), s2), mul(c(1 - (double)beta), mul(greg, greg)));
      Value xNew = sub(x, mul(rate, div(v, add(sqrt(h), c(epsilon)))));
      xNew = mul(c(1 - (double)normCoefficientPost), xNew);
      if (failed(define(i, xNew)) || failed(define(n + i, v)) ||
          failed(define(2 * n + i, h)))
        return failure();
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

ArrayRef<OpMapping> Importer::optimizerOps() {
  static const OpMapping ops[] = {
      {"ai.onnx.preview.training.Adagrad", 1, &Importer::optimizerOp},
      {"ai.onnx.preview.training.Adam", 1, &Importer::optimizerOp},
      {"ai.onnx.preview.training.Momentum", 1, &Importer::optimizerOp},
  };
  return ops;
}
