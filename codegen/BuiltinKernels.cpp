//===- BuiltinKernels.cpp - pooling, softmax and loss templates ----------===//
//
// Each template is C code for one thread with the op's shapes and attributes
// baked in; both targets print it (see KernelCode.h). Semantics follow
// PyTorch's CPU kernels (aten/src/ATen/native/cpu), which the end-to-end
// tests compare against:
//  - max pooling picks the first maximum in window scan order (a NaN wins);
//    the gradient is gathered per input element, so it is deterministic.
//  - average pooling divides by the window clipped to the padded input
//    (count_include_pad) or to the input (otherwise).
//  - softmax subtracts the slice maximum before exponentiating.
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelCode.h"
#include "dialects/Semantics/ResizeCoordinates.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

using namespace mlir;

namespace dlc::codegen::detail {

/// Reads an integer list attribute given as array<i64: ...>, [1, 2] or
/// dense<...>; |fallback| when absent.
FailureOr<SmallVector<int64_t>> getIntList(Operation *op, StringRef name,
                                           ArrayRef<int64_t> fallback,
                                           size_t expectedSize) {
  Attribute attr = op->getAttr(name);
  SmallVector<int64_t> out;
  if (!attr) {
    out.assign(fallback.begin(), fallback.end());
  } else if (auto a = dyn_cast<DenseI64ArrayAttr>(attr)) {
    out.assign(a.asArrayRef().begin(), a.asArrayRef().end());
  } else if (auto a = dyn_cast<ArrayAttr>(attr)) {
    for (Attribute e : a) {
      auto i = dyn_cast<IntegerAttr>(e);
      if (!i)
        return op->emitOpError()
               << "attribute '" << name << "' must be a list of integers";
      out.push_back(i.getInt());
    }
  } else if (auto a = dyn_cast<DenseIntElementsAttr>(attr)) {
    for (const APInt &v : a.getValues<APInt>())
      out.push_back(v.getSExtValue());
  } else {
    return op->emitOpError()
           << "attribute '" << name << "' must be a list of integers";
  }
  if (out.size() != expectedSize)
    return op->emitOpError() << "attribute '" << name << "' has " << out.size()
                             << " values, expected " << expectedSize;
  return out;
}

/// Reads an integer or boolean attribute; |fallback| when absent.
FailureOr<int64_t> getInt(Operation *op, StringRef name, int64_t fallback) {
  Attribute attr = op->getAttr(name);
  if (!attr)
    return fallback;
  if (auto b = dyn_cast<BoolAttr>(attr))
    return (int64_t)b.getValue();
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return i.getInt();
  return op->emitOpError() << "attribute '" << name
                           << "' must be an integer or a boolean";
}

namespace {
struct Pool2dParams {
  int64_t n, c, h, w, oh, ow;
  int64_t kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  bool countIncludePad;
  std::string t, inf;
};
} // namespace

static LogicalResult expectOperands(exec::BuiltinKernelOp op, size_t ins,
                                    size_t outs, StringRef what) {
  if (op.getInputs().size() != ins || op.getOutputs().size() != outs)
    return op.emitOpError()
           << "template '" << op.getTemplateName() << "' expects " << ins
           << " inputs and " << outs << " outputs (" << what << "), got "
           << op.getInputs().size() << " and " << op.getOutputs().size();
  for (Value v : op->getOperands()) {
    auto type = cast<MemRefType>(v.getType());
    if (!type.hasStaticShape() || !type.getLayout().isIdentity())
      return op.emitOpError() << "operand of type " << type
                              << " must have a static shape and the identity "
                                 "layout";
  }
  return success();
}

static FailureOr<std::string> floatElementType(exec::BuiltinKernelOp op,
                                               Value v) {
  Type elem = cast<MemRefType>(v.getType()).getElementType();
  if (elem.isF32())
    return std::string("float");
  if (elem.isF64())
    return std::string("double");
  return op.emitOpError() << "template '" << op.getTemplateName()
                          << "' supports f32 and f64, got " << elem;
}

/// Shapes and attributes of the pooling templates; |x| is the input
/// [N, C, H, W] and |y| the pooled [N, C, OH, OW] operand.
static FailureOr<Pool2dParams> poolParams(exec::BuiltinKernelOp op, Value x,
                                          Value y) {
  auto xt = cast<MemRefType>(x.getType()), yt = cast<MemRefType>(y.getType());
  if (xt.getRank() != 4 || yt.getRank() != 4 ||
      xt.getDimSize(0) != yt.getDimSize(0) ||
      xt.getDimSize(1) != yt.getDimSize(1))
    return op.emitOpError() << "pooling expects [N, C, H, W] operands with "
                               "equal N and C, got "
                            << xt << " and " << yt;
  auto ks = getIntList(op, "kernel_shape", {}, 2);
  if (failed(ks))
    return failure();
  auto strides = getIntList(op, "strides", {1, 1}, 2);
  auto pads = getIntList(op, "pads", {0, 0, 0, 0}, 4);
  auto dil = getIntList(op, "dilations", {1, 1}, 2);
  auto cip = getInt(op, "count_include_pad", 0);
  if (failed(strides) || failed(pads) || failed(dil) || failed(cip))
    return failure();
  Pool2dParams p;
  p.n = xt.getDimSize(0);
  p.c = xt.getDimSize(1);
  p.h = xt.getDimSize(2);
  p.w = xt.getDimSize(3);
  p.oh = yt.getDimSize(2);
  p.ow = yt.getDimSize(3);
  p.kh = (*ks)[0];
  p.kw = (*ks)[1];
  p.sh = (*strides)[0];
  p.sw = (*strides)[1];
  p.pt = (*pads)[0];
  p.pl = (*pads)[1];
  p.pb = (*pads)[2];
  p.pr = (*pads)[3];
  p.dh = (*dil)[0];
  p.dw = (*dil)[1];
  p.countIncludePad = *cip != 0;
  if (p.kh <= 0 || p.kw <= 0 || p.sh <= 0 || p.sw <= 0 || p.dh <= 0 ||
      p.dw <= 0 || p.pt < 0 || p.pl < 0 || p.pb < 0 || p.pr < 0)
    return op.emitOpError() << "pooling needs positive kernel_shape, strides "
                               "and dilations and non-negative pads";
  auto t = floatElementType(op, x);
  if (failed(t))
    return failure();
  p.t = *t;
  p.inf = p.t == "float" ? "DLC_INF_F" : "DLC_INF_D";
  return p;
}

/// Prints `const long long <name> = ...;` lines splitting |flat| into the
/// given row-major dims (last fastest), consuming the variable `rem`.
static void unflatten(llvm::raw_ostream &os, StringRef flat,
                      ArrayRef<std::pair<const char *, int64_t>> dims) {
  int64_t total = 1;
  for (auto &d : dims)
    total *= d.second;
  // 32-bit division by constants is much cheaper on the GPU.
  bool narrow = total <= UINT32_MAX;
  const char *suffix = narrow ? "u" : "LL";
  if (narrow)
    os << "  unsigned rem = (unsigned)" << flat << ";\n";
  else
    os << "  long long rem = " << flat << ";\n";
  for (int k = (int)dims.size() - 1; k >= 0; --k) {
    if (k == 0)
      os << "  const long long " << dims[k].first << " = rem;\n";
    else
      os << "  const long long " << dims[k].first << " = rem % "
         << dims[k].second << suffix << "; rem /= " << dims[k].second << suffix
         << ";\n";
  }
}

/// The argmax scan of window (oh, ow) over the plane `xp`: leaves the flat
/// index of the first maximum (a NaN wins, as in PyTorch) in `best` and the
/// value in `m`.
static void printWindowArgmax(llvm::raw_ostream &os, const Pool2dParams &p,
                              StringRef indent) {
  os << indent << p.t << " m = -" << p.inf << ";\n"
     << indent << "long long best = -1;\n"
     << indent << "for (long long kh = 0; kh < " << p.kh << "LL; ++kh) {\n"
     << indent << "  const long long ih = oh * " << p.sh << "LL - " << p.pt
     << "LL + kh * " << p.dh << "LL;\n"
     << indent << "  if (ih < 0 || ih >= " << p.h << "LL) continue;\n"
     << indent << "  for (long long kw = 0; kw < " << p.kw << "LL; ++kw) {\n"
     << indent << "    const long long iw = ow * " << p.sw << "LL - " << p.pl
     << "LL + kw * " << p.dw << "LL;\n"
     << indent << "    if (iw < 0 || iw >= " << p.w << "LL) continue;\n"
     << indent << "    const " << p.t << " v = xp[ih * " << p.w << "LL + iw];\n"
     << indent << "    if (best < 0 || v > m || v != v) { m = v; best = ih * "
     << p.w << "LL + iw; }\n"
     << indent << "  }\n"
     << indent << "}\n";
}

/// The average-pool window of output (oh, ow): clipped bounds hs/he/ws/we and
/// the divisor `div`, as PyTorch's avg_pool2d computes them.
static void printAvgWindow(llvm::raw_ostream &os, const Pool2dParams &p,
                           StringRef indent) {
  os << indent << "const long long hstart = oh * " << p.sh << "LL - " << p.pt
     << "LL, wstart = ow * " << p.sw << "LL - " << p.pl << "LL;\n"
     << indent << "long long hend = hstart + " << p.kh << "LL, wend = wstart + "
     << p.kw << "LL;\n"
     << indent << "if (hend > " << p.h + p.pb << "LL) hend = " << p.h + p.pb
     << "LL;\n"
     << indent << "if (wend > " << p.w + p.pr << "LL) wend = " << p.w + p.pr
     << "LL;\n"
     << indent << "const long long pool = (hend - hstart) * (wend - wstart);\n"
     << indent << "const long long hs = hstart < 0 ? 0 : hstart, ws = wstart "
     << "< 0 ? 0 : wstart;\n"
     << indent << "const long long he = hend > " << p.h << "LL ? " << p.h
     << "LL : hend, we = wend > " << p.w << "LL ? " << p.w << "LL : wend;\n"
     << indent << "const long long div = "
     << (p.countIncludePad ? "pool" : "(he - hs) * (we - ws)") << ";\n";
}

static FailureOr<KernelCode> buildPool(exec::BuiltinKernelOp op,
                                       StringRef tmpl) {
  bool grad = tmpl.ends_with("_grad");
  bool isMax = tmpl.starts_with("max");
  if (failed(
          expectOperands(op, grad ? 2 : 1, 1, grad ? "x, dy -> dx" : "x -> y")))
    return failure();
  Value x = op.getInputs()[0];
  Value y = grad ? op.getInputs()[1] : op.getOutputs()[0];
  auto pr = poolParams(op, x, y);
  if (failed(pr))
    return failure();
  const Pool2dParams &p = *pr;
  if (!isMax && (p.dh != 1 || p.dw != 1))
    return op.emitOpError() << "average pooling supports dilations 1 only";
  if (grad && op.getOutputs()[0].getType() != x.getType())
    return op.emitOpError() << "dx must have the type of x, " << x.getType();
  if (cast<MemRefType>(y.getType()).getElementType() !=
      cast<MemRefType>(x.getType()).getElementType())
    return op.emitOpError() << "operands must share the element type";

  KernelCode code;
  std::string body;
  llvm::raw_string_ostream os(body);
  if (!grad) {
    code.numThreads = p.n * p.c * p.oh * p.ow;
    unflatten(os, "tid", {{"nc", p.n * p.c}, {"oh", p.oh}, {"ow", p.ow}});
    os << "  const " << p.t << "* xp = a0 + nc * " << p.h * p.w << "LL;\n";
    if (isMax) {
      printWindowArgmax(os, p, "  ");
      os << "  a1[tid] = m;\n";
    } else {
      printAvgWindow(os, p, "  ");
      os << "  " << p.t << " s = 0;\n"
         << "  for (long long ih = hs; ih < he; ++ih)\n"
         << "    for (long long iw = ws; iw < we; ++iw) s += xp[ih * " << p.w
         << "LL + iw];\n"
         << "  a1[tid] = div > 0 ? s / (" << p.t << ")div : (" << p.t
         << ")0;\n";
    }
  } else {
    // Gather: each input element sums the gradients of the windows that
    // contain it (max: only windows whose first maximum it is), in ascending
    // output order.
    code.numThreads = p.n * p.c * p.h * p.w;
    unflatten(os, "tid", {{"nc", p.n * p.c}, {"ih0", p.h}, {"iw0", p.w}});
    os << "  const " << p.t << "* xp = a0 + nc * " << p.h * p.w << "LL;\n"
       << "  const " << p.t << "* dyp = a1 + nc * " << p.oh * p.ow << "LL;\n"
       << "  " << p.t << " g = 0;\n";
    int64_t spanH = (p.kh - 1) * p.dh, spanW = (p.kw - 1) * p.dw;
    os << "  long long ohLo = dlc_ceildiv(ih0 + " << p.pt - spanH << "LL, "
       << p.sh << "LL), ohHi = dlc_floordiv(ih0 + " << p.pt << "LL, " << p.sh
       << "LL);\n"
       << "  long long owLo = dlc_ceildiv(iw0 + " << p.pl - spanW << "LL, "
       << p.sw << "LL), owHi = dlc_floordiv(iw0 + " << p.pl << "LL, " << p.sw
       << "LL);\n"
       << "  if (ohLo < 0) ohLo = 0;\n"
       << "  if (owLo < 0) owLo = 0;\n"
       << "  if (ohHi > " << p.oh - 1 << "LL) ohHi = " << p.oh - 1 << "LL;\n"
       << "  if (owHi > " << p.ow - 1 << "LL) owHi = " << p.ow - 1 << "LL;\n"
       << "  for (long long oh = ohLo; oh <= ohHi; ++oh) {\n"
       << "    if (dlc_mod(ih0 + " << p.pt << "LL - oh * " << p.sh << "LL, "
       << p.dh << "LL) != 0) continue;\n"
       << "    for (long long ow = owLo; ow <= owHi; ++ow) {\n"
       << "      if (dlc_mod(iw0 + " << p.pl << "LL - ow * " << p.sw << "LL, "
       << p.dw << "LL) != 0) continue;\n";
    if (isMax) {
      printWindowArgmax(os, p, "      ");
      os << "      if (best == ih0 * " << p.w << "LL + iw0) g += dyp[oh * "
         << p.ow << "LL + ow];\n";
    } else {
      printAvgWindow(os, p, "      ");
      os << "      if (div > 0) g += dyp[oh * " << p.ow << "LL + ow] / (" << p.t
         << ")div;\n";
    }
    os << "    }\n  }\n  a2[tid] = g;\n";
  }
  code.body = std::move(body);
  return code;
}

static FailureOr<KernelCode> buildSoftmax(exec::BuiltinKernelOp op,
                                          bool isLog) {
  if (failed(expectOperands(op, 1, 1, "x -> y")))
    return failure();
  Value x = op.getInputs()[0];
  if (op.getOutputs()[0].getType() != x.getType())
    return op.emitOpError() << "y must have the type of x, " << x.getType();
  auto t = floatElementType(op, x);
  if (failed(t))
    return failure();
  auto type = cast<MemRefType>(x.getType());
  auto axisOr = getInt(op, "axis", -1);
  if (failed(axisOr))
    return failure();
  int64_t rank = type.getRank(), axis = *axisOr;
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return op.emitOpError()
           << "axis " << *axisOr << " is out of range for " << type;
  int64_t outer = 1, inner = 1, n = type.getDimSize(axis);
  for (int64_t d = 0; d < axis; ++d)
    outer *= type.getDimSize(d);
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= type.getDimSize(d);
  bool f32 = *t == "float";
  std::string exp = f32 ? "expf" : "exp", log = f32 ? "logf" : "log";
  KernelCode code;
  code.numThreads = outer * inner;
  std::string body;
  llvm::raw_string_ostream os(body);
  os << "  const long long base = (tid / " << inner << "LL) * " << n * inner
     << "LL + tid % " << inner << "LL;\n"
     << "  " << *t << " m = -" << (f32 ? "DLC_INF_F" : "DLC_INF_D") << ";\n"
     << "  for (long long k = 0; k < " << n << "LL; ++k) {\n"
     << "    const " << *t << " v = a0[base + k * " << inner << "LL];\n"
     << "    if (v > m || v != v) m = v;\n"
     << "  }\n"
     << "  " << *t << " s = 0;\n"
     << "  for (long long k = 0; k < " << n << "LL; ++k) s += " << exp
     << "(a0[base + k * " << inner << "LL] - m);\n";
  if (isLog)
    os << "  const " << *t << " ls = " << log << "(s);\n"
       << "  for (long long k = 0; k < " << n << "LL; ++k) a1[base + k * "
       << inner << "LL] = a0[base + k * " << inner << "LL] - m - ls;\n";
  else
    os << "  for (long long k = 0; k < " << n << "LL; ++k) a1[base + k * "
       << inner << "LL] = " << exp << "(a0[base + k * " << inner
       << "LL] - m) / s;\n";
  code.body = std::move(body);
  return code;
}

/// softmax_cross_entropy(_grad): logits [..., C], labels [...] (i64 or i32).
/// A label outside [0, C) contributes neither loss nor gradient but still
/// counts in the mean (count = number of label elements).
static FailureOr<KernelCode> buildCrossEntropy(exec::BuiltinKernelOp op,
                                               bool grad) {
  if (failed(expectOperands(op, grad ? 3 : 2, 1,
                            grad ? "logits, labels, loss_grad -> dlogits"
                                 : "logits, labels -> loss")))
    return failure();
  Value logits = op.getInputs()[0], labels = op.getInputs()[1];
  auto t = floatElementType(op, logits);
  if (failed(t))
    return failure();
  auto lt = cast<MemRefType>(logits.getType());
  auto bt = cast<MemRefType>(labels.getType());
  if (lt.getRank() < 1 || bt.getRank() != lt.getRank() - 1 ||
      lt.getShape().drop_back() != bt.getShape())
    return op.emitOpError() << "expects logits [..., C] and labels [...], got "
                            << lt << " and " << bt;
  if (!bt.getElementType().isInteger(64) && !bt.getElementType().isInteger(32))
    return op.emitOpError()
           << "labels must be i64 or i32, got " << bt.getElementType();
  Value out = op.getOutputs()[0];
  if (grad) {
    auto gt = cast<MemRefType>(op.getInputs()[2].getType());
    if (gt.getRank() != 0 || gt.getElementType() != lt.getElementType())
      return op.emitOpError() << "loss_grad must be a rank-0 "
                              << lt.getElementType() << " memref, got " << gt;
    if (out.getType() != logits.getType())
      return op.emitOpError() << "dlogits must have the type of logits, " << lt;
  } else {
    auto ot = cast<MemRefType>(out.getType());
    if (ot.getRank() != 0 || ot.getElementType() != lt.getElementType())
      return op.emitOpError() << "loss must be a rank-0 " << lt.getElementType()
                              << " memref, got " << ot;
  }
  int64_t c = lt.getShape().back(), rows = bt.getNumElements();
  bool f32 = *t == "float";
  std::string exp = f32 ? "expf" : "exp", log = f32 ? "logf" : "log";
  std::string inf = f32 ? "DLC_INF_F" : "DLC_INF_D";
  KernelCode code;
  std::string body;
  llvm::raw_string_ostream os(body);
  auto rowStats = [&](StringRef indent) {
    os << indent << "const " << *t << "* x = a0 + row * " << c << "LL;\n"
       << indent << "const long long label = (long long)a1[row];\n"
       << indent << *t << " m = -" << inf << ";\n"
       << indent << "for (long long k = 0; k < " << c
       << "LL; ++k) if (x[k] > m || x[k] != x[k]) m = x[k];\n"
       << indent << *t << " s = 0;\n"
       << indent << "for (long long k = 0; k < " << c << "LL; ++k) s += " << exp
       << "(x[k] - m);\n";
  };
  if (!grad) {
    // One thread; the mean accumulates in double.
    code.numThreads = 1;
    os << "  double total = 0;\n"
       << "  for (long long row = 0; row < " << rows << "LL; ++row) {\n";
    rowStats("    ");
    os << "    if (label < 0 || label >= " << c << "LL) continue;\n"
       << "    total += (double)(m + " << log << "(s) - x[label]);\n"
       << "  }\n"
       << "  a2[0] = (" << *t << ")(total / " << rows << ".0);\n";
  } else {
    code.numThreads = rows;
    os << "  const long long row = tid;\n";
    rowStats("  ");
    os << "  " << *t << "* dx = a3 + row * " << c << "LL;\n"
       << "  const " << *t << " scale = a2[0] / (" << *t << ")" << rows << ";\n"
       << "  const bool valid = label >= 0 && label < " << c << "LL;\n"
       << "  for (long long k = 0; k < " << c << "LL; ++k)\n"
       << "    dx[k] = valid ? (" << exp << "(x[k] - m) / s - (k == label ? ("
       << *t << ")1 : (" << *t << ")0)) * scale : (" << *t << ")0;\n";
  }
  code.body = std::move(body);
  return code;
}

/// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
/// 3", SC 2011) as C statements: on entry c0..c3 (the counter) and k0, k1
/// (the key) are `unsigned int` variables; on exit c0..c3 hold the output.
/// compiler/Reference/Interpreter.cpp computes the same function (dropout).
static const char *kPhilox4x32x10 =
    "  for (int r = 0; r < 10; ++r) {\n"
    "    const unsigned long long p0 = 0xD2511F53ull * c0;\n"
    "    const unsigned long long p1 = 0xCD9E8D57ull * c2;\n"
    "    const unsigned int n0 = (unsigned int)(p1 >> 32) ^ c1 ^ k0;\n"
    "    const unsigned int n2 = (unsigned int)(p0 >> 32) ^ c3 ^ k1;\n"
    "    c1 = (unsigned int)p1; c3 = (unsigned int)p0; c0 = n0; c2 = n2;\n"
    "    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;\n"
    "  }\n";

/// dropout: ins(X, step rank-0 f32) outs(Y, mask i1), attributes `ratio`
/// (f32 in [0, 1)) and `seed` (i64). Element i draws Philox-4x32-10 with
/// counter (i low, i high, step, 0) and key (seed low, seed high); u is the
/// top 24 bits of output word 0 over 2^24, and the element is kept when
/// u >= ratio (probability 1 - ratio); kept elements are scaled by
/// 1 / (1 - ratio), as torch.nn.functional.dropout does.
static FailureOr<KernelCode> buildDropout(exec::BuiltinKernelOp op) {
  if (failed(expectOperands(op, 2, 2, "input, step -> result, mask")))
    return failure();
  Value x = op.getInputs()[0], step = op.getInputs()[1];
  auto t = floatElementType(op, x);
  if (failed(t))
    return failure();
  auto xt = cast<MemRefType>(x.getType());
  auto st = cast<MemRefType>(step.getType());
  auto yt = cast<MemRefType>(op.getOutputs()[0].getType());
  auto mt = cast<MemRefType>(op.getOutputs()[1].getType());
  if (st.getRank() != 0 || !st.getElementType().isF32() || yt != xt ||
      mt.getShape() != xt.getShape() || !mt.getElementType().isInteger(1))
    return op.emitOpError() << "expects X, a rank-0 f32 step, Y of X's type "
                               "and an i1 mask of X's shape";
  auto ratioAttr = op->getAttrOfType<FloatAttr>("ratio");
  auto seedAttr = op->getAttrOfType<IntegerAttr>("seed");
  if (!ratioAttr || !seedAttr)
    return op.emitOpError() << "needs attributes 'ratio' (f32) and 'seed' (i64)";
  float ratio = (float)ratioAttr.getValueAsDouble();
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return op.emitOpError() << "ratio must be in [0, 1), got " << ratio;
  uint64_t seed = (uint64_t)seedAttr.getInt();
  double scale = 1.0 / (1.0 - (double)ratio);
  std::string ratioLit, scaleLit;
  {
    llvm::raw_string_ostream rs(ratioLit);
    rs << llvm::format("%.9g", (double)ratio) << "f";
    llvm::raw_string_ostream ss(scaleLit);
    ss << llvm::format("%.17g", scale);
  }
  KernelCode code;
  code.numThreads = xt.getNumElements();
  std::string body;
  llvm::raw_string_ostream os(body);
  os << "  unsigned int c0 = (unsigned int)tid;\n"
     << "  unsigned int c1 = (unsigned int)((unsigned long long)tid >> 32);\n"
     << "  unsigned int c2 = (unsigned int)a1[0];\n"
     << "  unsigned int c3 = 0u;\n"
     << "  unsigned int k0 = " << (uint32_t)seed << "u;\n"
     << "  unsigned int k1 = " << (uint32_t)(seed >> 32) << "u;\n"
     << kPhilox4x32x10
     << "  const float u = (float)(c0 >> 8) * 5.9604644775390625e-08f;\n"
     << "  const bool keep = u >= " << ratioLit << ";\n"
     << "  a3[tid] = keep;\n"
     << "  a2[tid] = keep ? (" << *t << ")(a0[tid] * (" << *t << ")"
     << scaleLit << ") : (" << *t << ")0;\n";
  code.body = std::move(body);
  return code;
}

/// Row-major strides of |shape| (elements).
static SmallVector<int64_t> stridesOfShape(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s(shape.size(), 1);
  for (int64_t i = (int64_t)shape.size() - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// The operands of the gather templates: forward ins(data, indices)
/// outs(rows), gradient ins(indices, rows = dy) outs(data = dx); indices i32
/// or i64, and the `axis` attribute (range checked by each template).
struct GatherOperands {
  Value idx, data, rows;
  MemRefType dt, it, rt;
  int64_t axis;
};

static FailureOr<GatherOperands> gatherOperands(exec::BuiltinKernelOp op,
                                                bool grad) {
  if (failed(expectOperands(op, 2, 1,
                            grad ? "indices, dy -> dx" : "data, indices -> y")))
    return failure();
  GatherOperands g;
  g.idx = op.getInputs()[grad ? 0 : 1];
  g.data = grad ? op.getOutputs()[0] : op.getInputs()[0];
  g.rows = grad ? op.getInputs()[1] : op.getOutputs()[0];
  g.dt = cast<MemRefType>(g.data.getType());
  g.it = cast<MemRefType>(g.idx.getType());
  g.rt = cast<MemRefType>(g.rows.getType());
  if (!g.it.getElementType().isInteger(64) &&
      !g.it.getElementType().isInteger(32))
    return op.emitOpError() << "indices must be i32 or i64, got "
                            << g.it.getElementType();
  auto axisOr = getInt(op, "axis", 0);
  if (failed(axisOr))
    return failure();
  g.axis = *axisOr;
  return g;
}

/// gather: ins(data [.., n, ..], indices) outs(y); gather_grad: ins(indices,
/// dy) outs(dx of data's shape). `axis` >= 0. Negative indices count from
/// the end; an index outside [-n, n) reads nothing (y = 0) and adds nothing
/// to dx. The gradient runs one thread per (outer, inner) column of dx that
/// zeroes its column and then adds dy rows in index order: deterministic on
/// both targets, no atomics (repeated indices accumulate in a fixed order).
static FailureOr<KernelCode> buildGather(exec::BuiltinKernelOp op, bool grad) {
  FailureOr<GatherOperands> g = gatherOperands(op, grad);
  if (failed(g))
    return failure();
  Value idx = g->idx, data = g->data, rows = g->rows;
  MemRefType dt = g->dt, it = g->it, rt = g->rt;
  int64_t axis = g->axis, rank = dt.getRank();
  if (axis < 0 || axis >= rank)
    return op.emitOpError() << "axis " << axis << " is out of range for "
                            << dt;
  SmallVector<int64_t> expected(dt.getShape().take_front(axis));
  llvm::append_range(expected, it.getShape());
  llvm::append_range(expected, dt.getShape().drop_front(axis + 1));
  if (rt.getShape() != ArrayRef<int64_t>(expected) ||
      rt.getElementType() != dt.getElementType())
    return op.emitOpError() << "expects " << (grad ? "dy" : "y")
                            << " of shape data[:axis] + indices + "
                               "data[axis+1:], got "
                            << rt << " for data " << dt << " and indices "
                            << it;
  auto t = cScalarType(dt.getElementType());
  if (failed(t))
    return op.emitOpError() << "element type " << dt.getElementType()
                            << " is not supported";
  int64_t outer = 1, inner = 1, n = dt.getDimSize(axis),
          m = it.getNumElements();
  for (int64_t d = 0; d < axis; ++d)
    outer *= dt.getDimSize(d);
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= dt.getDimSize(d);
  KernelCode code;
  std::string body;
  llvm::raw_string_ostream os(body);
  if (!grad) {
    code.numThreads = outer * m * inner;
    os << "  const long long c = tid % " << inner << "LL;\n"
       << "  const long long j = (tid / " << inner << "LL) % " << m << "LL;\n"
       << "  const long long o = tid / " << m * inner << "LL;\n"
       << "  long long k = (long long)a1[j];\n"
       << "  if (k < 0) k += " << n << "LL;\n"
       << "  a2[tid] = (k >= 0 && k < " << n << "LL) ? a0[(o * " << n
       << "LL + k) * " << inner << "LL + c] : (" << *t << ")0;\n";
  } else {
    code.numThreads = outer * inner;
    os << "  const long long c = tid % " << inner << "LL;\n"
       << "  const long long o = tid / " << inner << "LL;\n"
       << "  " << *t << "* dx = a2 + o * " << n * inner << "LL + c;\n"
       << "  const " << *t << "* dy = a1 + o * " << m * inner << "LL + c;\n"
       << "  for (long long k = 0; k < " << n << "LL; ++k) dx[k * " << inner
       << "LL] = (" << *t << ")0;\n"
       << "  for (long long j = 0; j < " << m << "LL; ++j) {\n"
       << "    long long k = (long long)a0[j];\n"
       << "    if (k < 0) k += " << n << "LL;\n"
       << "    if (k >= 0 && k < " << n << "LL) dx[k * " << inner
       << "LL] += dy[j * " << inner << "LL];\n"
       << "  }\n";
  }
  code.body = std::move(body);
  return code;
}

/// gather_elements: ins(data, indices) outs(y of the indices' shape);
/// gather_elements_grad: ins(indices, dy) outs(dx of data's shape). Same
/// index rules as gather; the gradient runs one thread per data column
/// along `axis` (zero, then add in index order): deterministic.
static FailureOr<KernelCode> buildGatherElements(exec::BuiltinKernelOp op,
                                                 bool grad) {
  FailureOr<GatherOperands> g = gatherOperands(op, grad);
  if (failed(g))
    return failure();
  Value idx = g->idx, data = g->data, rows = g->rows;
  MemRefType dt = g->dt, it = g->it, rt = g->rt;
  int64_t axis = g->axis, rank = dt.getRank();
  bool ok = axis >= 0 && axis < rank && it.getRank() == rank &&
            rt.getShape() == it.getShape() &&
            rt.getElementType() == dt.getElementType();
  for (int64_t d = 0; ok && d < rank; ++d)
    ok = d == axis || it.getDimSize(d) <= dt.getDimSize(d);
  if (!ok)
    return op.emitOpError() << "expects data, indices and "
                            << (grad ? "dy" : "y")
                            << " of equal rank (indices within data outside "
                               "axis "
                            << axis << "), got " << dt << ", " << it << ", "
                            << rt;
  auto t = cScalarType(dt.getElementType());
  if (failed(t))
    return op.emitOpError() << "element type " << dt.getElementType()
                            << " is not supported";
  SmallVector<int64_t> ds = stridesOfShape(dt.getShape()),
                       is = stridesOfShape(it.getShape());
  int64_t n = dt.getDimSize(axis);
  KernelCode code;
  std::string body;
  llvm::raw_string_ostream os(body);
  if (!grad) {
    code.numThreads = it.getNumElements();
    os << "  long long rem = tid, off = 0;\n";
    for (int64_t d = rank - 1; d >= 0; --d) {
      os << "  { const long long i = rem % " << it.getDimSize(d) << "LL; rem /= "
         << it.getDimSize(d) << "LL;";
      if (d != axis)
        os << " off += i * " << ds[d] << "LL;";
      os << " }\n";
    }
    os << "  long long k = (long long)a1[tid];\n"
       << "  if (k < 0) k += " << n << "LL;\n"
       << "  a2[tid] = (k >= 0 && k < " << n << "LL) ? a0[off + k * " << ds[axis]
       << "LL] : (" << *t << ")0;\n";
  } else {
    // One thread per data position with the axis coordinate dropped.
    code.numThreads = dt.getNumElements() / std::max<int64_t>(n, 1);
    os << "  long long rem = tid, doff = 0, ioff = 0;\n"
       << "  bool inside = true;\n";
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (d == axis)
        continue;
      os << "  { const long long i = rem % " << dt.getDimSize(d)
         << "LL; rem /= " << dt.getDimSize(d) << "LL; doff += i * " << ds[d]
         << "LL; ioff += i * " << is[d] << "LL; inside = inside && i < "
         << it.getDimSize(d) << "LL; }\n";
    }
    os << "  for (long long k = 0; k < " << n << "LL; ++k) a2[doff + k * "
       << ds[axis] << "LL] = (" << *t << ")0;\n"
       << "  if (inside) {\n"
       << "    for (long long j = 0; j < " << it.getDimSize(axis)
       << "LL; ++j) {\n"
       << "      long long k = (long long)a0[ioff + j * " << is[axis]
       << "LL];\n"
       << "      if (k < 0) k += " << n << "LL;\n"
       << "      if (k >= 0 && k < " << n << "LL) a2[doff + k * " << ds[axis]
       << "LL] += a1[ioff + j * " << is[axis] << "LL];\n"
       << "    }\n"
       << "  }\n";
  }
  code.body = std::move(body);
  return code;
}

/// A double literal that C parses as a double.
static std::string doubleLiteral(double v) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("%.17g", v);
  if (text.find_first_of(".eEn") == std::string::npos)
    text += ".0";
  return text;
}

/// resize / resize_grad: ins(X) outs(Y) / ins(dY) outs(dX) with the
/// attributes of dlgraph.resize (`mode`, `coordinate_transformation_mode`,
/// `nearest_mode`, `scales`). The per-axis taps are the C form of
/// dlc::reference::resizeTap (compiler/Reference/ResizeCoordinates.h),
/// computed in double. The forward is one thread per output element. The
/// gradient is one thread per index of the leading axes that the resize maps
/// to themselves; each thread zeroes its slice of dX and scatter-adds its
/// slice of dY in order, so the sums are deterministic.
static FailureOr<KernelCode> buildResize(exec::BuiltinKernelOp op, bool grad) {
  if (failed(expectOperands(op, 1, 1, grad ? "dY -> dX" : "X -> Y")))
    return failure();
  Value src = op.getInputs()[0], dst = op.getOutputs()[0];
  auto t = floatElementType(op, src);
  if (failed(t))
    return failure();
  auto st = cast<MemRefType>(src.getType()), dt = cast<MemRefType>(dst.getType());
  auto inT = grad ? dt : st, outT = grad ? st : dt;
  auto mode = op->getAttrOfType<StringAttr>("mode");
  auto coord = op->getAttrOfType<StringAttr>("coordinate_transformation_mode");
  auto nearest = op->getAttrOfType<StringAttr>("nearest_mode");
  auto scalesAttr = op->getAttrOfType<DenseF64ArrayAttr>("scales");
  int64_t rank = inT.getRank();
  if (!mode || !coord || !nearest || !scalesAttr || outT.getRank() != rank ||
      (int64_t)scalesAttr.size() != rank || dt.getElementType() != st.getElementType())
    return op.emitOpError() << "expects operands of one rank and element type "
                               "and the string attributes mode, "
                               "coordinate_transformation_mode, nearest_mode "
                               "and one f64 scale per axis";
  ArrayRef<double> scales = scalesAttr.asArrayRef();
  bool linear = mode.getValue() == "linear";
  SmallVector<int64_t> inStride(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    inStride[d] = inStride[d + 1] * inT.getDimSize(d + 1);
  // Leading axes the resize maps to themselves (each output index reads
  // only the same input index), which the gradient runs in parallel.
  int64_t lead = 0;
  for (; lead < rank; ++lead) {
    int64_t n = inT.getDimSize(lead);
    if (outT.getDimSize(lead) != n)
      break;
    bool identity = true;
    for (int64_t o = 0; o < n && identity; ++o) {
      reference::ResizeTap tap = reference::resizeTap(
          mode.getValue(), coord.getValue(), nearest.getValue(), o, n, n,
          scales[lead]);
      identity = tap.i0 == o && (tap.w1 == 0 || tap.i1 == o);
    }
    if (!identity)
      break;
  }
  std::string body;
  llvm::raw_string_ostream os(body);
  os << "  const long long sx[" << rank << "] = {";
  for (int64_t d = 0; d < rank; ++d)
    os << (d ? ", " : "") << inStride[d] << "LL";
  os << "};\n  long long ii[" << rank << "][2];\n  double ww[" << rank
     << "][2];\n";
  // Taps of output index `o` on axis d into ii[d], ww[d].
  auto taps = [&](StringRef indent, int64_t d, StringRef o) {
    int64_t L = inT.getDimSize(d), Lo = outT.getDimSize(d);
    std::string s = doubleLiteral(scales[d]);
    StringRef c = coord.getValue();
    std::string x;
    // The real-valued resized length, as resizeSourceCoordinate uses it.
    double resized = scales[d] * (double)L;
    (void)Lo;
    if (c == "pytorch_half_pixel")
      x = resized > 1.0
              ? ("((double)" + o + " + 0.5) / " + s + " - 0.5").str()
              : "0.0";
    else if (c == "align_corners")
      x = resized == 1.0
              ? "0.0"
              : ("(double)" + o + " * " + doubleLiteral((double)(L - 1)) +
                 " / " + doubleLiteral(resized - 1.0))
                    .str();
    else if (c == "asymmetric")
      x = ("(double)" + o + " / " + s).str();
    else if (c == "tf_half_pixel_for_nn")
      x = ("((double)" + o + " + 0.5) / " + s).str();
    else
      x = ("((double)" + o + " + 0.5) / " + s + " - 0.5").str();
    os << indent << "{\n"
       << indent << "  const double x = " << x << ";\n"
       << indent << "  const double f = floor(x);\n";
    auto clamp = [&](StringRef v) {
      return ("(" + v + " < 0 ? 0LL : " + v + " > " + Twine(L - 1) + "LL ? " +
              Twine(L - 1) + "LL : " + v + ")")
          .str();
    };
    if (!linear) {
      StringRef nm = nearest.getValue();
      std::string r = nm == "floor" ? "f"
                      : nm == "ceil" ? "ceil(x)"
                      : nm == "round_prefer_ceil"
                          ? "(x - f == 0.5 ? f + 1.0 : round(x))"
                          : "(x - f == 0.5 ? f : round(x))";
      os << indent << "  const long long i = (long long)" << r << ";\n"
         << indent << "  ii[" << d << "][0] = ii[" << d << "][1] = "
         << clamp("i") << ";\n"
         << indent << "  ww[" << d << "][0] = 1.0; ww[" << d
         << "][1] = 0.0;\n";
    } else {
      os << indent << "  const long long i = (long long)f;\n"
         << indent << "  const long long j = i + 1;\n"
         << indent << "  ii[" << d << "][0] = " << clamp("i") << ";\n"
         << indent << "  ii[" << d << "][1] = " << clamp("j") << ";\n"
         << indent << "  ww[" << d << "][1] = x - f; ww[" << d
         << "][0] = 1.0 - (x - f);\n";
    }
    os << indent << "}\n";
  };
  int64_t corners = linear ? (int64_t)1 << rank : 1;
  auto cornerLoop = [&](StringRef indent, StringRef use) {
    os << indent << "for (int c = 0; c < " << corners << "; ++c) {\n"
       << indent << "  double w = 1.0;\n"
       << indent << "  long long off = 0;\n"
       << indent << "  for (int d = 0; d < " << rank << "; ++d) {\n"
       << indent << "    const int b = (c >> d) & 1;\n"
       << indent << "    w *= ww[d][b];\n"
       << indent << "    off += ii[d][b] * sx[d];\n"
       << indent << "  }\n"
       << indent << "  if (w != 0.0) " << use << "\n"
       << indent << "}\n";
  };
  KernelCode code;
  if (!grad) {
    code.numThreads = outT.getNumElements();
    os << "  long long rem = tid;\n";
    for (int64_t d = rank - 1; d >= 0; --d) {
      os << "  const long long o" << d << " = rem % " << outT.getDimSize(d)
         << "LL; rem /= " << outT.getDimSize(d) << "LL;\n";
    }
    for (int64_t d = 0; d < rank; ++d)
      taps("  ", d, "o" + std::to_string(d));
    os << "  double acc = 0.0;\n";
    cornerLoop("  ", "acc += w * (double)a0[off];");
    os << "  a1[tid] = (" << *t << ")acc;\n";
  } else {
    int64_t threads = 1, inSlice = 1, outSlice = 1;
    for (int64_t d = 0; d < rank; ++d) {
      if (d < lead)
        threads *= inT.getDimSize(d);
      else {
        inSlice *= inT.getDimSize(d);
        outSlice *= outT.getDimSize(d);
      }
    }
    code.numThreads = threads;
    os << "  long long rem = tid;\n";
    for (int64_t d = lead - 1; d >= 0; --d)
      os << "  const long long o" << d << " = rem % " << outT.getDimSize(d)
         << "LL; rem /= " << outT.getDimSize(d) << "LL;\n";
    for (int64_t d = 0; d < lead; ++d)
      taps("  ", d, "o" + std::to_string(d));
    os << "  " << *t << "* dx = a1 + tid * " << inSlice << "LL;\n"
       << "  for (long long k = 0; k < " << inSlice
       << "LL; ++k) dx[k] = 0;\n"
       << "  const " << *t << "* dy = a0 + tid * " << outSlice << "LL;\n"
       << "  for (long long e = 0; e < " << outSlice << "LL; ++e) {\n"
       << "    long long rem2 = e;\n";
    for (int64_t d = rank - 1; d >= lead; --d)
      os << "    const long long o" << d << " = rem2 % " << outT.getDimSize(d)
         << "LL; rem2 /= " << outT.getDimSize(d) << "LL;\n";
    for (int64_t d = lead; d < rank; ++d)
      taps("    ", d, "o" + std::to_string(d));
    // Offsets are relative to the thread's slice: the leading axes read
    // their own index, which the slice base already covers.
    os << "    for (int d = 0; d < " << lead << "; ++d) ii[d][0] = ii[d][1] = 0;\n";
    cornerLoop("    ", ("dx[off] += (" + *t + ")(w * (double)dy[e]);").c_str());
    os << "  }\n";
  }
  code.body = std::move(body);
  return code;
}

FailureOr<KernelCode> buildBuiltinKernel(exec::BuiltinKernelOp op) {
  StringRef tmpl = op.getTemplateName();
  FailureOr<KernelCode> code = failure();
  if (tmpl == "max_pool2d" || tmpl == "max_pool2d_grad" ||
      tmpl == "average_pool2d" || tmpl == "average_pool2d_grad")
    code = buildPool(op, tmpl);
  else if (tmpl == "softmax" || tmpl == "log_softmax")
    code = buildSoftmax(op, tmpl == "log_softmax");
  else if (tmpl == "softmax_cross_entropy" ||
           tmpl == "softmax_cross_entropy_grad")
    code = buildCrossEntropy(op, tmpl == "softmax_cross_entropy_grad");
  else if (tmpl == "dropout")
    code = buildDropout(op);
  else if (tmpl == "resize" || tmpl == "resize_grad")
    code = buildResize(op, tmpl == "resize_grad");
  else if (tmpl == "gather" || tmpl == "gather_grad")
    code = buildGather(op, tmpl == "gather_grad");
  else if (tmpl == "gather_elements" || tmpl == "gather_elements_grad")
    code = buildGatherElements(op, tmpl == "gather_elements_grad");
  else
    return op.emitOpError()
           << "unknown kernel template '" << tmpl
           << "'; expected max_pool2d, max_pool2d_grad, average_pool2d, "
              "average_pool2d_grad, softmax, log_softmax, "
              "softmax_cross_entropy or softmax_cross_entropy_grad";
  if (failed(code))
    return failure();
  code->name = sanitizeName(op.getSymName());
  for (Value v : op->getOperands()) {
    Type elem = cast<MemRefType>(v.getType()).getElementType();
    auto cType = cScalarType(elem);
    if (failed(cType))
      return op.emitOpError()
             << "element type " << elem << " is not supported by codegen";
    code->paramTypes.push_back(*cType);
  }
  code->restrictParam = restrictFlags(op, op->getOperands());
  return code;
}

} // namespace dlc::codegen::detail
