//===- Recurrent.cpp - ONNX RNN, GRU and LSTM -> dlgraph ------------------===//
//
// The recurrent ops unrolled over their static sequence length: the input
// projections of every step are one matmul, then each step is the cell
// written out (matmul, add, sigmoid, tanh, mul), as torch.onnx.export emits
// for an nn.RNNCell/GRUCell/LSTMCell loop. Gradients are those of the ops.
// The graph holds one cell per step and direction, so the sequence length is
// bounded by kMaxUnrollSteps. sequence_lens (constant or run-time) masks the
// steps past each batch entry's length: the state is held and Y is zero.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;

/// v[..., start : start + count, ...] along |axis|.
static Value sliceAxis(OpBuilder &b, Location loc, Value v, int64_t axis,
                       int64_t start, int64_t count) {
  auto t = cast<RankedTensorType>(v.getType());
  if (start == 0 && count == t.getDimSize(axis))
    return v;
  SmallVector<int64_t> starts(t.getRank(), 0), steps(t.getRank(), 1);
  starts[axis] = start;
  SmallVector<int64_t> shape(t.getShape());
  shape[axis] = count;
  return gr::SliceOp::create(b, loc, t.clone(shape), v,
                             b.getDenseI64ArrayAttr(starts),
                             b.getDenseI64ArrayAttr(steps));
}

/// v[i] along axis 0, that axis dropped.
static Value row(OpBuilder &b, Location loc, Value v, int64_t i) {
  auto t = cast<RankedTensorType>(v.getType());
  return reshaped(b, loc, sliceAxis(b, loc, v, 0, i, 1),
                  t.getShape().drop_front());
}

/// |vs| (one shape) stacked along a new axis |axis|.
static Value stack(OpBuilder &b, Location loc, ArrayRef<Value> vs,
                   int64_t axis) {
  auto t = cast<RankedTensorType>(vs.front().getType());
  SmallVector<int64_t> unit(t.getShape());
  unit.insert(unit.begin() + axis, 1);
  SmallVector<Value> parts;
  for (Value v : vs)
    parts.push_back(reshaped(b, loc, v, unit));
  if (parts.size() == 1)
    return parts.front();
  return gr::ConcatOp::create(b, loc, parts, b.getI64IntegerAttr(axis));
}

namespace {
/// The activation functions the cells take (ONNX names; no alpha/beta).
enum class Activation { Sigmoid, Tanh, Relu };
} // namespace

static Value activate(OpBuilder &b, Location loc, Activation a, Value v) {
  switch (a) {
  case Activation::Sigmoid:
    return gr::SigmoidOp::create(b, loc, v);
  case Activation::Tanh:
    return gr::TanhOp::create(b, loc, v);
  case Activation::Relu:
    return gr::ReluOp::create(b, loc, v);
  }
  return v;
}

/// Why a recurrent layer's attributes are not supported (none when they
/// are): |clip|, activation parameters (|activationParams|), input_forget,
/// |direction|, |layout|.
static std::optional<std::string>
unsupportedRecurrentAttrs(bool clip, bool activationParams, int64_t inputForget,
                          StringRef direction, int64_t layout) {
  std::string error;
  llvm::raw_string_ostream os(error);
  if (clip)
    os << "attribute 'clip' is not supported; supported: no clipping of the "
          "gate inputs";
  else if (activationParams)
    os << "attributes activation_alpha/activation_beta are not supported; "
          "supported: activations Sigmoid, Tanh and Relu (no parameters)";
  else if (inputForget)
    os << "input_forget = " << inputForget << " is not supported; supported: 0";
  else if (direction != "forward" && direction != "reverse" &&
           direction != "bidirectional")
    os << "direction '" << direction
       << "' is not supported; supported: forward, reverse, bidirectional";
  else if (layout != 0 && layout != 1)
    os << "layout = " << layout << " is not supported; supported: 0 or 1";
  else
    return std::nullopt;
  return error;
}

/// The activations of a recurrent layer, per direction f (gates), g
/// (candidate) and h (LSTM output): the defaults, or attribute |a| when
/// given. Returns the error when |a| is not supported.
static std::optional<std::string>
recurrentActivations(const onnx::AttributeProto *a, bool isLSTM, bool isGRU,
                     int64_t numDir, SmallVector<Activation> &acts) {
  size_t actsPerDir = isLSTM ? 3 : isGRU ? 2 : 1;
  for (int64_t d = 0; d < numDir; ++d) {
    if (isLSTM)
      acts.append({Activation::Sigmoid, Activation::Tanh, Activation::Tanh});
    else if (isGRU)
      acts.append({Activation::Sigmoid, Activation::Tanh});
    else
      acts.push_back(Activation::Tanh);
  }
  if (!a)
    return std::nullopt;
  std::string error;
  llvm::raw_string_ostream os(error);
  if (a->strings_size() != (int)(actsPerDir * numDir)) {
    os << "attribute 'activations' has " << a->strings_size()
       << " entries; expected " << actsPerDir * numDir << " (" << actsPerDir
       << " per direction)";
    return error;
  }
  for (auto [i, name] : llvm::enumerate(a->strings())) {
    StringRef n = name;
    if (n.equals_insensitive("Sigmoid"))
      acts[i] = Activation::Sigmoid;
    else if (n.equals_insensitive("Tanh"))
      acts[i] = Activation::Tanh;
    else if (n.equals_insensitive("Relu"))
      acts[i] = Activation::Relu;
    else {
      os << "activation '" << name
         << "' is not supported; supported: Sigmoid, Tanh, Relu";
      return error;
    }
  }
  return std::nullopt;
}

namespace {
/// The weights and activations of one direction of a recurrent layer, as
/// its cell reads them at each step.
struct Cell {
  bool isLSTM = false, isGRU = false;
  int64_t linearBeforeReset = 0, hidden = 0;
  Activation fAct = Activation::Sigmoid, gAct = Activation::Tanh,
             hAct = Activation::Tanh;
  /// R transposed ([H, G * H]) and, for the GRU, its z-r and h columns.
  Value rT, rTzr, rTh;
  /// GRU with linear_before_reset: Rbh, inside r * (.).
  Value recurBias;
  /// LSTM peepholes (null without them).
  Value peep, pi, po, pf;
};
} // namespace

/// Sets |cell|'s GRU columns of R and, with peepholes |peep| ([numDir,
/// 3 * H]), its direction-|d| peepholes.
static void sliceCellWeights(OpBuilder &builder, Location nodeLoc, Cell &cell,
                             Value peep, int64_t d) {
  const int64_t hidden = cell.hidden;
  cell.peep = peep;
  if (peep) {
    Value pd = row(builder, nodeLoc, peep, d);
    cell.pi = sliceAxis(builder, nodeLoc, pd, 0, 0, hidden);
    cell.po = sliceAxis(builder, nodeLoc, pd, 0, hidden, hidden);
    cell.pf = sliceAxis(builder, nodeLoc, pd, 0, 2 * hidden, hidden);
  }
  if (cell.isGRU) {
    cell.rTzr = sliceAxis(builder, nodeLoc, cell.rT, 1, 0, 2 * hidden);
    cell.rTh = sliceAxis(builder, nodeLoc, cell.rT, 1, 2 * hidden, hidden);
  }
}

/// One step of |cell|: the new hidden state and (LSTM) cell state from the
/// step's input projection |xt| and the states |h| and |c|.
static std::pair<Value, Value> cellStep(OpBuilder &builder, Location nodeLoc,
                                        const Cell &cell, Value xt, Value h,
                                        Value c) {
  auto gate = [&](Value v, int64_t k) {
    return sliceAxis(builder, nodeLoc, v, 1, k * cell.hidden, cell.hidden);
  };
  auto add = [&](Value a, Value b) -> Value {
    return gr::AddOp::create(builder, nodeLoc, a, b);
  };
  auto mul = [&](Value a, Value b) -> Value {
    return gr::MulOp::create(builder, nodeLoc, a, b);
  };
  auto matmul = [&](Value a, Value b) -> Value {
    return gr::MatMulOp::create(builder, nodeLoc, a, b);
  };
  Value hn, cn;
  if (cell.isLSTM) {
    Value pre = add(xt, matmul(h, cell.rT));
    Value i = gate(pre, 0), o = gate(pre, 1), f = gate(pre, 2),
          cc = gate(pre, 3);
    if (cell.peep) {
      i = add(i, mul(cell.pi, c));
      f = add(f, mul(cell.pf, c));
    }
    i = activate(builder, nodeLoc, cell.fAct, i);
    f = activate(builder, nodeLoc, cell.fAct, f);
    cc = activate(builder, nodeLoc, cell.gAct, cc);
    cn = add(mul(f, c), mul(i, cc));
    if (cell.peep)
      o = add(o, mul(cell.po, cn));
    o = activate(builder, nodeLoc, cell.fAct, o);
    hn = mul(o, activate(builder, nodeLoc, cell.hAct, cn));
  } else if (cell.isGRU) {
    Value zr = add(sliceAxis(builder, nodeLoc, xt, 1, 0, 2 * cell.hidden),
                   matmul(h, cell.rTzr));
    Value z = activate(builder, nodeLoc, cell.fAct, gate(zr, 0));
    Value rg = activate(builder, nodeLoc, cell.fAct, gate(zr, 1));
    Value xh = gate(xt, 2);
    Value pre;
    if (cell.linearBeforeReset) {
      Value hr = matmul(h, cell.rTh);
      if (cell.recurBias)
        hr = add(hr, cell.recurBias);
      pre = add(xh, mul(rg, hr));
    } else {
      pre = add(xh, matmul(mul(rg, h), cell.rTh));
    }
    Value hh = activate(builder, nodeLoc, cell.gAct, pre);
    // (1 - z) * hh + z * h = hh + z * (h - hh)
    hn = add(hh, mul(z, gr::SubOp::create(builder, nodeLoc, h, hh)));
  } else {
    hn = activate(builder, nodeLoc, cell.fAct, add(xt, matmul(h, cell.rT)));
  }
  return {hn, cn};
}

LogicalResult Importer::recurrent() {
  StringRef op = node->op_type();
  bool isLSTM = op == "LSTM", isGRU = op == "GRU";
  int64_t gates = isLSTM ? 4 : isGRU ? 3 : 1;
  size_t actsPerDir = isLSTM ? 3 : isGRU ? 2 : 1;
  int64_t hidden = attrInt("hidden_size", -1);
  std::string direction = attrString("direction", "forward");
  int64_t layout = attrInt("layout", 0);
  int64_t linearBeforeReset = isGRU ? attrInt("linear_before_reset", 0) : 0;
  int64_t inputForget = isLSTM ? attrInt("input_forget", 0) : 0;
  if (attrFailed)
    return failure();
  if (std::optional<std::string> error = unsupportedRecurrentAttrs(
          findAttr("clip"),
          findAttr("activation_alpha") || findAttr("activation_beta"),
          inputForget, direction, layout))
    return nodeError() << *error;
  int64_t numDir = direction == "bidirectional" ? 2 : 1;

  // Activations: f (gates), g (candidate), h (LSTM output), per direction.
  SmallVector<Activation> acts;
  if (std::optional<std::string> error = recurrentActivations(
          findAttr("activations"), isLSTM, isGRU, numDir, acts))
    return nodeError() << *error;

  Value x = operand(0), w = operand(1), r = operand(2);
  if (!x || !w || !r)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  if (xt.getRank() != 3)
    return nodeError() << "input X of shape " << shapeStr(xt.getShape())
                       << " is not supported; supported: rank 3";
  if (layout == 1)
    x = permute(builder, nodeLoc, x, {1, 0, 2});
  ArrayRef<int64_t> xs = cast<RankedTensorType>(x.getType()).getShape();
  int64_t steps = xs[0], batch = xs[1], inSize = xs[2];
  // hidden_size is optional: R ([numDir, gates * H, H]) gives it.
  if (!findAttr("hidden_size"))
    hidden = cast<RankedTensorType>(r.getType()).getShape().back();
  if (hidden < 1)
    return nodeError() << "hidden_size = " << hidden
                       << " is not supported; supported: at least 1";
  int64_t gh = gates * hidden;
  auto expectShape = [&](Value v, int i,
                         ArrayRef<int64_t> want) -> LogicalResult {
    ArrayRef<int64_t> got = cast<RankedTensorType>(v.getType()).getShape();
    if (got == want)
      return success();
    nodeError() << "input " << i << " ('" << node->input(i)
                << "') has shape " << shapeStr(got) << "; expected "
                << shapeStr(want);
    return failure();
  };
  if (failed(expectShape(w, 1, {numDir, gh, inSize})) ||
      failed(expectShape(r, 2, {numDir, gh, hidden})))
    return failure();
  if (steps < 1 || steps > kMaxUnrollSteps)
    return nodeError() << "sequence length " << steps
                       << " is not supported; supported: 1 to "
                       << kMaxUnrollSteps
                       << " (the cell is unrolled once per step at import)";

  Value bias, seqLens, h0, c0, peep;
  if (hasInput(3)) {
    if (!(bias = operand(3)) ||
        failed(expectShape(bias, 3, {numDir, 2 * gh})))
      return failure();
  }
  if (hasInput(4)) {
    Slot *s = input(4);
    if (!s)
      return failure();
    Type et = s->type().getElementType();
    if (!et.isInteger(32) && !et.isInteger(64))
      return nodeError() << "input 4 (sequence_lens) has element type "
                         << elementTypeName(et) << "; expected int32";
    seqLens = materialize(*s);
    if (failed(expectShape(seqLens, 4, {batch})))
      return failure();
  }
  // initial_h / initial_c: [numDir, B, H] ([B, numDir, H] in layout 1).
  auto initialState = [&](int i, Value &out) -> LogicalResult {
    if (!hasInput(i))
      return success();
    if (!(out = operand(i)))
      return failure();
    if (layout == 1) {
      if (failed(expectShape(out, i, {batch, numDir, hidden})))
        return failure();
      out = permute(builder, nodeLoc, out, {1, 0, 2});
      return success();
    }
    return expectShape(out, i, {numDir, batch, hidden});
  };
  if (failed(initialState(5, h0)))
    return failure();
  if (isLSTM) {
    if (failed(initialState(6, c0)))
      return failure();
    if (hasInput(7) && (!(peep = operand(7)) ||
                        failed(expectShape(peep, 7, {numDir, 3 * hidden}))))
      return failure();
  } else if (failed(requireOnlyLeadingOutputs(2))) {
    return failure();
  }

  auto f32 = builder.getF32Type();
  Value x2 = reshaped(builder, nodeLoc, x, {steps * batch, inSize});
  Value zeroH = splatOf(RankedTensorType::get({batch, hidden}, f32), 0.0);
  SmallVector<Value> ys, hs, cs;
  for (int64_t d = 0; d < numDir; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    Activation fAct = acts[d * actsPerDir];
    Activation gAct = actsPerDir > 1 ? acts[d * actsPerDir + 1] : fAct;
    Activation hAct = actsPerDir > 2 ? acts[d * actsPerDir + 2] : fAct;
    Value wT = permute(builder, nodeLoc, row(builder, nodeLoc, w, d), {1, 0});
    Value rT = permute(builder, nodeLoc, row(builder, nodeLoc, r, d), {1, 0});
    // Every step's input projection at once: [T * B, G * H].
    Value xw = gr::MatMulOp::create(builder, nodeLoc, x2, wT);
    Value recurBias; // GRU with linear_before_reset: Rbh, inside r * (.)
    if (bias) {
      Value bd = row(builder, nodeLoc, bias, d);
      Value wb = sliceAxis(builder, nodeLoc, bd, 0, 0, gh);
      Value rb = sliceAxis(builder, nodeLoc, bd, 0, gh, gh);
      if (isGRU && linearBeforeReset) {
        recurBias = sliceAxis(builder, nodeLoc, rb, 0, 2 * hidden, hidden);
        Value zero = splatOf(RankedTensorType::get({hidden}, f32), 0.0);
        rb = gr::ConcatOp::create(
            builder, nodeLoc,
            ValueRange{sliceAxis(builder, nodeLoc, rb, 0, 0, 2 * hidden), zero},
            builder.getI64IntegerAttr(0));
      }
      xw = gr::AddOp::create(builder, nodeLoc, xw,
                             gr::AddOp::create(builder, nodeLoc, wb, rb));
    }
    xw = reshaped(builder, nodeLoc, xw, {steps, batch, gh});
    Cell cell{isLSTM, isGRU, linearBeforeReset, hidden, fAct, gAct, hAct, rT};
    cell.recurBias = recurBias;
    sliceCellWeights(builder, nodeLoc, cell, peep, d);
    Value h = h0 ? row(builder, nodeLoc, h0, d) : zeroH;
    Value c = c0 ? row(builder, nodeLoc, c0, d) : zeroH;
    SmallVector<Value> yd(steps);
    for (int64_t s = 0; s < steps; ++s) {
      int64_t t = reverse ? steps - 1 - s : s;
      Value xt = row(builder, nodeLoc, xw, t);
      Value hn, cn;
      std::tie(hn, cn) = cellStep(builder, nodeLoc, cell, xt, h, c);
      Value y = hn;
      if (seqLens) {
        // Steps at or past an entry's length hold its state and give 0.
        auto lenType = cast<RankedTensorType>(seqLens.getType());
        Value tc = splatOf(RankedTensorType::get({}, lenType.getElementType()),
                           (double)t);
        Value live = gr::CompareOp::create(builder, nodeLoc, "lt", tc, seqLens);
        live = reshaped(builder, nodeLoc, live, {batch, 1});
        hn = gr::SelectOp::create(builder, nodeLoc, live, hn, h);
        if (isLSTM)
          cn = gr::SelectOp::create(builder, nodeLoc, live, cn, c);
        y = gr::SelectOp::create(builder, nodeLoc, live, y, zeroH);
      }
      yd[t] = y;
      h = hn;
      if (isLSTM)
        c = cn;
    }
    if (node->output_size() > 0 && !node->output(0).empty())
      ys.push_back(stack(builder, nodeLoc, yd, 0)); // [T, B, H]
    hs.push_back(h);
    cs.push_back(c);
  }
  if (!ys.empty()) {
    Value y = stack(builder, nodeLoc, ys, 1); // [T, numDir, B, H]
    if (layout == 1)
      y = permute(builder, nodeLoc, y, {2, 0, 1, 3});
    if (failed(define(0, y)))
      return failure();
  }
  auto finalState = [&](ArrayRef<Value> vs) {
    Value v = stack(builder, nodeLoc, vs, 0); // [numDir, B, H]
    return layout == 1 ? permute(builder, nodeLoc, v, {1, 0, 2}) : v;
  };
  if (node->output_size() > 1 && !node->output(1).empty() &&
      failed(define(1, finalState(hs))))
    return failure();
  if (isLSTM && node->output_size() > 2 && !node->output(2).empty() &&
      failed(define(2, finalState(cs))))
    return failure();
  return success();
}

ArrayRef<OpMapping> Importer::recurrentOps() {
  // Version 14 added `layout` (default 0: version 7's layout); 22 only
  // widened the element types.
  static const OpMapping table[] = {
      {"GRU", 7, &Importer::recurrent, 22},
      {"LSTM", 7, &Importer::recurrent, 22},
      {"RNN", 7, &Importer::recurrent, 22},
  };
  return table;
}
