//===- BuiltinResize.cpp - resize kernel templates ------------------------===//
//
// resize and resize_grad (BuiltinFamily::Resize).
//
//===----------------------------------------------------------------------===//
#include "codegen/BuiltinKernels.h"
#include "runtime/schema/Semantics/ResizeCoordinates.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

using namespace mlir;

namespace dlc::codegen::detail {

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
/// dlc::semantics::resizeTap (runtime/schema/Semantics/ResizeCoordinates.h),
/// computed in double. The forward is one thread per output element. The
/// gradient is one thread per index of the leading axes that the resize maps
/// to themselves; each thread zeroes its slice of dX and scatter-adds its
/// slice of dY in order, so the sums are deterministic.
FailureOr<KernelCode> buildResize(exec::BuiltinKernelOp op, bool grad,
                                  const exec::ResizeParams &params) {
  if (failed(expectOperands(op, 1, 1, grad ? "dY -> dX" : "X -> Y")))
    return failure();
  Value src = op.getInputs()[0], dst = op.getOutputs()[0];
  auto t = floatElementType(op, src);
  if (failed(t))
    return failure();
  auto st = cast<MemRefType>(src.getType()),
       dt = cast<MemRefType>(dst.getType());
  auto inT = grad ? dt : st, outT = grad ? st : dt;
  StringRef mode = params.mode, coord = params.coordinateTransformationMode,
            nearest = params.nearestMode;
  int64_t rank = inT.getRank();
  if (outT.getRank() != rank || (int64_t)params.scales.size() != rank ||
      dt.getElementType() != st.getElementType())
    return op.emitOpError() << "expects operands of one rank and element type "
                               "and the string attributes mode, "
                               "coordinate_transformation_mode, nearest_mode "
                               "and one f64 scale per axis";
  ArrayRef<double> scales = params.scales;
  bool linear = mode == "linear";
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
      semantics::ResizeTap tap =
          semantics::resizeTap(mode, coord, nearest, o, n, n, scales[lead]);
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
    StringRef c = coord;
    std::string x;
    // The real-valued resized length, as resizeSourceCoordinate uses it.
    double resized = scales[d] * (double)L;
    (void)Lo;
    if (c == "pytorch_half_pixel")
      x = resized > 1.0 ? ("((double)" + o + " + 0.5) / " + s + " - 0.5").str()
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
      StringRef nm = nearest;
      std::string r = nm == "floor"  ? "f"
                      : nm == "ceil" ? "ceil(x)"
                      : nm == "round_prefer_ceil"
                          ? "(x - f == 0.5 ? f + 1.0 : round(x))"
                          : "(x - f == 0.5 ? f : round(x))";
      os << indent << "  const long long i = (long long)" << r << ";\n"
         << indent << "  ii[" << d << "][0] = ii[" << d
         << "][1] = " << clamp("i") << ";\n"
         << indent << "  ww[" << d << "][0] = 1.0; ww[" << d << "][1] = 0.0;\n";
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
       << "  for (long long k = 0; k < " << inSlice << "LL; ++k) dx[k] = 0;\n"
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
    os << "    for (int d = 0; d < " << lead
       << "; ++d) ii[d][0] = ii[d][1] = 0;\n";
    cornerLoop("    ", ("dx[off] += (" + *t + ")(w * (double)dy[e]);").c_str());
    os << "  }\n";
  }
  code.body = std::move(body);
  return code;
}

} // namespace dlc::codegen::detail
