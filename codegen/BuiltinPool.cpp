//===- BuiltinPool.cpp - pooling kernel templates -------------------------===//
//
// max_pool2d, average_pool2d and their gradients, and max pooling's argmax
// indices and the gradient from them (BuiltinFamily::Pool).
// Semantics follow PyTorch's CPU kernels (aten/src/ATen/native/cpu), which
// the end-to-end tests compare against: max pooling picks the first maximum
// in window scan order (a NaN wins) and its gradient is gathered per input
// element, so it is deterministic; average pooling divides by the window
// clipped to the padded input (count_include_pad) or to the input.
// f16 / bf16 elements are loaded widened to float; sums and gradient gathers
// accumulate in float and each stored result is rounded once, so the result
// is the f32 kernel's on the same values, rounded once.
//
//===----------------------------------------------------------------------===//
#include "codegen/BuiltinKernels.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

using namespace mlir;

namespace dlc::codegen::detail {

namespace {
struct Pool2dParams {
  int64_t n, c, h, w, oh, ow;
  int64_t kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  bool countIncludePad;
  /// The element type, the C type it is computed in and its infinity.
  Type elem;
  std::string t, inf;
  /// The C type elements are stored as (t, or dlc_f16 / dlc_bf16).
  std::string st;
  /// C code reading element |ref| as `t`.
  std::string load(const std::string &ref) const { return loadExpr(elem, ref); }
};
} // namespace

/// Shapes and attributes of the pooling templates; |x| is the input
/// [N, C, H, W], |y| the pooled [N, C, OH, OW] operand and |window| the
/// op's checked attributes (getParams).
static FailureOr<Pool2dParams> poolParams(exec::BuiltinKernelOp op, Value x,
                                          Value y,
                                          const exec::PoolParams &window) {
  auto xt = cast<MemRefType>(x.getType()), yt = cast<MemRefType>(y.getType());
  if (xt.getRank() != 4 || yt.getRank() != 4 ||
      xt.getDimSize(0) != yt.getDimSize(0) ||
      xt.getDimSize(1) != yt.getDimSize(1))
    return op.emitOpError() << "pooling expects [N, C, H, W] operands with "
                               "equal N and C, got "
                            << xt << " and " << yt;
  Pool2dParams p;
  p.n = xt.getDimSize(0);
  p.c = xt.getDimSize(1);
  p.h = xt.getDimSize(2);
  p.w = xt.getDimSize(3);
  p.oh = yt.getDimSize(2);
  p.ow = yt.getDimSize(3);
  p.kh = window.kernelShape[0];
  p.kw = window.kernelShape[1];
  p.sh = window.strides[0];
  p.sw = window.strides[1];
  p.pt = window.pads[0];
  p.pl = window.pads[1];
  p.pb = window.pads[2];
  p.pr = window.pads[3];
  p.dh = window.dilations[0];
  p.dw = window.dilations[1];
  p.countIncludePad = window.countIncludePad;
  auto t = floatElementType(op, x);
  if (failed(t))
    return failure();
  p.elem = xt.getElementType();
  p.t = *t;
  p.st = *cStorageType(p.elem);
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
     << indent << "    const " << p.t
     << " v = " << p.load("xp[ih * " + std::to_string(p.w) + "LL + iw]")
     << ";\n"
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

FailureOr<KernelCode> buildPool(exec::BuiltinKernelOp op, StringRef tmpl,
                                const exec::PoolParams &params) {
  bool grad = tmpl.ends_with("_grad");
  bool isMax = tmpl.starts_with("max");
  // max_pool2d_indices: x -> indices (i32, the flat ih * W + iw of each
  // window's first maximum); max_pool2d_indices_grad: indices, dy -> dx.
  bool indices = tmpl.contains("indices");
  const char *roles = indices ? (grad ? "indices, dy -> dx" : "x -> indices")
                              : (grad ? "x, dy -> dx" : "x -> y");
  if (failed(expectOperands(op, grad ? 2 : 1, 1, roles)))
    return failure();
  Value x = indices && grad ? op.getOutputs()[0] : op.getInputs()[0];
  Value y = grad ? op.getInputs()[1] : op.getOutputs()[0];
  auto pr = poolParams(op, x, y, params);
  if (failed(pr))
    return failure();
  const Pool2dParams &p = *pr;
  if (!isMax && (p.dh != 1 || p.dw != 1))
    return op.emitOpError() << "average pooling supports dilations 1 only";
  if (grad && !indices && op.getOutputs()[0].getType() != x.getType())
    return op.emitOpError() << "dx must have the type of x, " << x.getType();
  if (indices) {
    auto it = cast<MemRefType>(
        (grad ? op.getInputs() : op.getOutputs())[0].getType());
    if (!it.getElementType().isInteger(32))
      return op.emitOpError() << "indices must be i32, got " << it;
  } else if (cast<MemRefType>(y.getType()).getElementType() !=
             cast<MemRefType>(x.getType()).getElementType()) {
    return op.emitOpError() << "operands must share the element type";
  }

  KernelCode code;
  std::string body;
  llvm::raw_string_ostream os(body);
  if (!grad) {
    code.numThreads = p.n * p.c * p.oh * p.ow;
    unflatten(os, "tid", {{"nc", p.n * p.c}, {"oh", p.oh}, {"ow", p.ow}});
    os << "  const " << p.st << "* xp = a0 + nc * " << p.h * p.w << "LL;\n";
    // A strided output (a dlexec.subview: the pooled input of a dense block
    // written into its channel slot of the concatenation's buffer) is
    // stored at its strides; the package's alias points a1 at the view's
    // first element.
    std::string yAt = "tid";
    if (std::optional<exec::StridedView> view =
            exec::stridedViewOf(op.getOutputs()[0])) {
      if (indices)
        return op.emitOpError() << "max_pool2d_indices has no strided output";
      const SmallVector<int64_t> &st = view->strides;
      os << "  const long long yo = (nc / " << p.c << "LL) * " << st[0]
         << "LL + (nc % " << p.c << "LL) * " << st[1] << "LL + oh * " << st[2]
         << "LL + ow * " << st[3] << "LL;\n";
      yAt = "yo";
    }
    if (indices) {
      printWindowArgmax(os, p, "  ");
      os << "  a1[tid] = (int)best;\n";
    } else if (isMax) {
      printWindowArgmax(os, p, "  ");
      os << "  a1[" << yAt << "] = " << storeExpr(p.elem, "m") << ";\n";
    } else {
      printAvgWindow(os, p, "  ");
      os << "  " << p.t << " s = 0;\n"
         << "  for (long long ih = hs; ih < he; ++ih)\n"
         << "    for (long long iw = ws; iw < we; ++iw) s += "
         << p.load("xp[ih * " + std::to_string(p.w) + "LL + iw]") << ";\n"
         << "  a1[" << yAt << "] = "
         << storeExpr(p.elem, "div > 0 ? s / (" + p.t + ")div : (" + p.t + ")0")
         << ";\n";
    }
  } else {
    // Gather: each input element sums the gradients of the windows that
    // contain it (max: only windows whose first maximum it is), in ascending
    // output order.
    code.numThreads = p.n * p.c * p.h * p.w;
    unflatten(os, "tid", {{"nc", p.n * p.c}, {"ih0", p.h}, {"iw0", p.w}});
    if (indices)
      os << "  const int* ip = a0 + nc * " << p.oh * p.ow << "LL;\n";
    else
      os << "  const " << p.st << "* xp = a0 + nc * " << p.h * p.w << "LL;\n";
    os << "  const " << p.st << "* dyp = a1 + nc * " << p.oh * p.ow << "LL;\n"
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
    if (indices) {
      os << "      if (ip[oh * " << p.ow << "LL + ow] == ih0 * " << p.w
         << "LL + iw0) g += "
         << p.load("dyp[oh * " + std::to_string(p.ow) + "LL + ow]") << ";\n";
    } else if (isMax) {
      printWindowArgmax(os, p, "      ");
      os << "      if (best == ih0 * " << p.w << "LL + iw0) g += "
         << p.load("dyp[oh * " + std::to_string(p.ow) + "LL + ow]") << ";\n";
    } else {
      printAvgWindow(os, p, "      ");
      os << "      if (div > 0) g += "
         << p.load("dyp[oh * " + std::to_string(p.ow) + "LL + ow]") << " / ("
         << p.t << ")div;\n";
    }
    os << "    }\n  }\n  a2[tid] = " << storeExpr(p.elem, "g") << ";\n";
    // On the host, max pooling's gradient scatters instead: one iteration per
    // (n, c) plane zeroes dx's plane, then walks the windows in ascending
    // output order and adds each window's dy to its first maximum (or to the
    // element its index names). Each dx element thus receives the same
    // additions in the same order as the gather above, from +0, so the
    // result is bit-identical, while every window's argmax is found once
    // instead of once per element it covers (9x fewer loads for 3x3 stride
    // 2, 4x for 2x2 stride 2). Only where dx is stored in the type it sums
    // in (f32, f64) and aliases no other operand; CUDA keeps the gather, one
    // thread per element, without atomics.
    const bool scatter =
        isMax && p.st == p.t && restrictFlags(op, op->getOperands()).back();
    if (scatter) {
      const int64_t elems = p.n * p.c * p.h * p.w;
      code.cudaBody = "  if (tid < " + std::to_string(elems) + "LL) {\n" +
                      body + "  }\n";
      code.numThreads =
          (elems + code.blockSize - 1) / code.blockSize * code.blockSize;
      code.hostThreads = p.n * p.c;
      code.hostGrain = p.h * p.w;
      std::string host;
      llvm::raw_string_ostream hs(host);
      hs << "  const long long nc = tid;\n";
      if (indices)
        hs << "  const int* ip = a0 + nc * " << p.oh * p.ow << "LL;\n";
      else
        hs << "  const " << p.st << "* xp = a0 + nc * " << p.h * p.w
           << "LL;\n";
      hs << "  const " << p.st << "* dyp = a1 + nc * " << p.oh * p.ow
         << "LL;\n"
         << "  " << p.st << "* dxp = a2 + nc * " << p.h * p.w << "LL;\n"
         << "  for (long long i = 0; i < " << p.h * p.w
         << "LL; ++i) dxp[i] = 0;\n"
         << "  for (long long oh = 0; oh < " << p.oh << "LL; ++oh)\n"
         << "    for (long long ow = 0; ow < " << p.ow << "LL; ++ow) {\n";
      if (indices)
        hs << "      const long long best = ip[oh * " << p.ow << "LL + ow];\n";
      else
        printWindowArgmax(hs, p, "      ");
      hs << "      if (best >= 0 && best < " << p.h * p.w
         << "LL) dxp[best] += dyp[oh * " << p.ow << "LL + ow];\n"
         << "    }\n";
      code.body = std::move(host);
      return code;
    }
  }
  code.body = std::move(body);
  return code;
}

} // namespace dlc::codegen::detail
