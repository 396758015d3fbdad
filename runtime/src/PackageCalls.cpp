//===- PackageCalls.cpp - read and check a package's library calls --------===//
// A library call's callee against the shared table (LibraryCalls.h), its
// parameters (positional in format version 1, typed tables from version 2)
// and those parameters against the shapes and dtypes of its buffers.
#include "runtime/src/PackageChecks.h"

#include <optional>
#include <string>

#include "runtime/schema/Semantics/WindowShapes.h"

namespace dlrt::loader {

bool checkArgs(const std::vector<uint32_t> &args, size_t numBuffers,
               const std::string &where, Checker &c) {
  for (uint32_t a : args)
    if (a >= numBuffers)
      return c.fail(where + " uses buffer " + std::to_string(a) + " of " +
                    std::to_string(numBuffers));
  return true;
}

namespace {

/// Checks that buffer |index| is f32 and holds at least |elements| floats.
/// The buffer dtype of a library call's element type (LibraryCalls.h).
dlrt_dtype_t bufferDType(dlc::exec::ElementType type) {
  switch (type) {
  case dlc::exec::ElementType::F32:
    return DLRT_F32;
  case dlc::exec::ElementType::F16:
    return DLRT_F16;
  case dlc::exec::ElementType::BF16:
    return DLRT_BF16;
  case dlc::exec::ElementType::F64:
    return DLRT_F64;
  }
  return DLRT_F32;
}

/// Checks that buffer |index| has the call's element type |type| and holds
/// at least |elements| of them.
bool checkOperand(const Package &p, uint32_t index, int64_t elements,
                  dlc::exec::ElementType type, const std::string &where,
                  const char *role, Checker &c) {
  const BufferInfo &b = p.buffers[index];
  const char *name = dlc::exec::elementTypeName(type);
  if (b.dtype != bufferDType(type))
    return c.fail(where + ": " + role + " (buffer " + std::to_string(index) +
                  ") is not " + name);
  const int64_t size = int64_t(dlc::exec::elementTypeBytes(type));
  if (elements < 0 || b.sizeBytes / size < elements)
    return c.fail(where + ": " + role + " (buffer " + std::to_string(index) +
                  ", " + std::to_string(b.sizeBytes) +
                  " bytes) is smaller than " + std::to_string(elements) +
                  (type == dlc::exec::ElementType::F32
                       ? std::string(" floats")
                       : std::string(" ") + name + " elements"));
  return true;
}

/// Reads LibraryCall attrs' `dtype` (package.fbs): the element types the
/// devices run are f32, f16 and bf16.
bool decodeDType(fb::DType dtype, const std::string &callee,
                 dlc::exec::ElementType *out, const std::string &where,
                 Checker &c) {
  switch (dtype) {
  case fb::DType::F32:
    *out = dlc::exec::ElementType::F32;
    return true;
  case fb::DType::F16:
    *out = dlc::exec::ElementType::F16;
    return true;
  case fb::DType::BF16:
    *out = dlc::exec::ElementType::BF16;
    return true;
  default:
    break;
  }
  const char *name = fb::EnumNameDType(dtype);
  return c.fail(where + ": library call '" + callee +
                "' supports f32, f16 and bf16, got dtype " +
                (name && *name ? std::string(name)
                               : std::to_string(static_cast<int>(dtype))));
}

using dlc::exec::LibraryCallFamily;
using dlc::exec::LibraryCallInfo;

/// Reads the parameters of a format-version-1 call: positional int_attrs
/// and float_attrs (package.fbs).
bool decodePositional(const fb::LibraryCall *call, const LibraryCallInfo &info,
                      StepInfo *step, const std::string &where, Checker &c) {
  const std::string callee = info.name;
  std::vector<int64_t> ia;
  if (!elementsAligned(call->int_attrs()))
    return c.fail(where + ": '" + callee + "' has a misaligned int_attrs vector");
  if (call->int_attrs())
    ia.assign(call->int_attrs()->begin(), call->int_attrs()->end());
  std::vector<float> fa;
  if (call->float_attrs())
    fa.assign(call->float_attrs()->begin(), call->float_attrs()->end());
  switch (info.family) {
  case LibraryCallFamily::Gemm: {
    if (ia.size() != 7 || fa.size() != 2)
      return c.fail(where + ": gemm needs 7 int_attrs and 2 float_attrs");
    GemmParams &g = step->call.gemm;
    g.m = ia[0];
    g.n = ia[1];
    g.k = ia[2];
    g.trans_a = ia[3] != 0;
    g.trans_b = ia[4] != 0;
    g.has_c = ia[5] != 0;
    g.c_is_row_vector = ia[6] != 0;
    g.alpha = fa[0];
    g.beta = fa[1];
    return true;
  }
  case LibraryCallFamily::BatchedGemm: {
    // int_attrs = [M, N, K, R, batch[R], stride_a[R], stride_b[R]].
    BatchedGemmParams &g = step->call.batched;
    if (ia.size() < 4 || ia[3] < 0 || ia.size() != 4 + 3 * size_t(ia[3]))
      return c.fail(where + ": batched_gemm needs 4 + 3 * R int_attrs");
    g.m = ia[0];
    g.n = ia[1];
    g.k = ia[2];
    size_t r = size_t(ia[3]);
    g.batch.assign(ia.begin() + 4, ia.begin() + 4 + r);
    g.stride_a.assign(ia.begin() + 4 + r, ia.begin() + 4 + 2 * r);
    g.stride_b.assign(ia.begin() + 4 + 2 * r, ia.end());
    return true;
  }
  case LibraryCallFamily::Conv:
    break;
  }
  ConvParams &cv = step->call.conv;
  if (info.spatialDims == 3) {
    if (ia.size() != 26)
      return c.fail(where + ": '" + callee + "' needs 26 int_attrs, got " +
                    std::to_string(ia.size()));
    cv.spatial = 3;
    cv.d = ia[2];
    cv.t = ia[6];
    cv.o = ia[9];
    cv.stride_d = ia[12];
    cv.pad_front = ia[15];
    cv.pad_back = ia[18];
    cv.dilation_d = ia[21];
    // The rest in the 2-D order.
    ia = {ia[0],  ia[1],  ia[3],  ia[4],  ia[5],  ia[7],  ia[8],
          ia[10], ia[11], ia[13], ia[14], ia[16], ia[17], ia[19],
          ia[20], ia[22], ia[23], ia[24], ia[25]};
  }
  if (ia.size() != 19)
    return c.fail(where + ": '" + callee + "' needs 19 int_attrs, got " +
                  std::to_string(ia.size()));
  cv.n = ia[0];
  cv.c = ia[1];
  cv.h = ia[2];
  cv.w = ia[3];
  cv.k = ia[4];
  cv.r = ia[5];
  cv.s = ia[6];
  cv.p = ia[7];
  cv.q = ia[8];
  cv.stride_h = ia[9];
  cv.stride_w = ia[10];
  cv.pad_top = ia[11];
  cv.pad_left = ia[12];
  cv.pad_bottom = ia[13];
  cv.pad_right = ia[14];
  cv.dilation_h = ia[15];
  cv.dilation_w = ia[16];
  cv.group = ia[17];
  cv.has_bias = ia[18] != 0;
  return true;
}

/// Copies the long vector |v| (absent = empty) into |out|; fails on a
/// misaligned vector.
bool longs(const flatbuffers::Vector<int64_t> *v, std::vector<int64_t> *out) {
  if (!elementsAligned(v))
    return false;
  out->clear();
  if (v)
    out->assign(v->begin(), v->end());
  return true;
}

/// Reads the parameters of a format-version-2 call: the typed table of its
/// family (package.fbs LibraryCallAttrs).
bool decodeTyped(const fb::LibraryCall *call, const LibraryCallInfo &info,
                 StepInfo *step, const std::string &where, Checker &c) {
  const std::string callee = info.name;
  static const char *const kTableOf[] = {"GemmAttrs", "BatchedGemmAttrs",
                                         "ConvAttrs"};
  const char *expected = kTableOf[static_cast<int>(info.family)];
  auto wrongTable = [&] {
    return c.fail(where + ": '" + callee + "' needs its parameters in a " +
                  expected + " table (LibraryCall.attrs)");
  };
  switch (info.family) {
  case LibraryCallFamily::Gemm: {
    const fb::GemmAttrs *a = call->attrs_as_GemmAttrs();
    if (!a)
      return wrongTable();
    GemmParams &g = step->call.gemm;
    g.m = a->m();
    g.n = a->n();
    g.k = a->k();
    g.trans_a = a->trans_a();
    g.trans_b = a->trans_b();
    g.has_c = a->has_c();
    g.c_is_row_vector = a->c_is_row_vector();
    g.alpha = a->alpha();
    g.beta = a->beta();
    // package.fbs GemmEpilogue lists the epilogues in LibraryCalls.h's
    // order (ReluAux, DRelu and DReluBiasGrad since format version 5).
    const int epilogue = int(a->epilogue());
    if (epilogue < 0 ||
        size_t(epilogue) >= std::size(dlc::exec::kGemmEpilogues))
      return c.fail(where + ": gemm has an unknown epilogue " +
                    std::to_string(epilogue));
    g.epilogue = dlc::exec::kGemmEpilogues[epilogue];
    return decodeDType(a->dtype(), callee, &g.dtype, where, c);
  }
  case LibraryCallFamily::BatchedGemm: {
    const fb::BatchedGemmAttrs *a = call->attrs_as_BatchedGemmAttrs();
    if (!a)
      return wrongTable();
    BatchedGemmParams &g = step->call.batched;
    g.m = a->m();
    g.n = a->n();
    g.k = a->k();
    if (!longs(a->batch(), &g.batch) || !longs(a->stride_a(), &g.stride_a) ||
        !longs(a->stride_b(), &g.stride_b))
      return c.fail(where + ": batched_gemm has a misaligned vector");
    g.trans_a = a->trans_a();
    g.trans_b = a->trans_b();
    if (g.stride_a.size() != g.batch.size() ||
        g.stride_b.size() != g.batch.size())
      return c.fail(where + ": batched_gemm has " +
                    std::to_string(g.batch.size()) + " batch dims but " +
                    std::to_string(g.stride_a.size()) + " stride_a and " +
                    std::to_string(g.stride_b.size()) + " stride_b values");
    return decodeDType(a->dtype(), callee, &g.dtype, where, c);
  }
  case LibraryCallFamily::Conv:
    break;
  }
  const fb::ConvAttrs *a = call->attrs_as_ConvAttrs();
  if (!a)
    return wrongTable();
  const int sp = info.spatialDims;
  if (a->spatial_dims() != sp)
    return c.fail(where + ": '" + callee + "' has spatial_dims " +
                  std::to_string(a->spatial_dims()) + ", expected " +
                  std::to_string(sp));
  std::vector<int64_t> in, filter, out, strides, pads, dil;
  if (!longs(a->input_size(), &in) || !longs(a->filter_size(), &filter) ||
      !longs(a->output_size(), &out) || !longs(a->strides(), &strides) ||
      !longs(a->pads(), &pads) || !longs(a->dilations(), &dil))
    return c.fail(where + ": '" + callee + "' has a misaligned vector");
  const struct {
    const char *name;
    const std::vector<int64_t> &v;
    size_t size;
  } lists[] = {{"input_size", in, size_t(sp)},  {"filter_size", filter, size_t(sp)},
               {"output_size", out, size_t(sp)}, {"strides", strides, size_t(sp)},
               {"pads", pads, size_t(2 * sp)},   {"dilations", dil, size_t(sp)}};
  for (const auto &l : lists)
    if (l.v.size() != l.size)
      return c.fail(where + ": '" + callee + "' needs " +
                    std::to_string(l.size) + " " + l.name + " values, got " +
                    std::to_string(l.v.size()));
  ConvParams &cv = step->call.conv;
  cv.spatial = sp;
  cv.n = a->n();
  cv.c = a->c();
  cv.k = a->k();
  cv.group = a->group();
  cv.has_bias = a->has_bias();
  // H and W are the last two spatial dims; a 3-D call has the depth first.
  const int hw = sp - 2;
  cv.h = in[hw];
  cv.w = in[hw + 1];
  cv.r = filter[hw];
  cv.s = filter[hw + 1];
  cv.p = out[hw];
  cv.q = out[hw + 1];
  cv.stride_h = strides[hw];
  cv.stride_w = strides[hw + 1];
  cv.pad_top = pads[hw];
  cv.pad_left = pads[hw + 1];
  cv.pad_bottom = pads[sp + hw];
  cv.pad_right = pads[sp + hw + 1];
  cv.dilation_h = dil[hw];
  cv.dilation_w = dil[hw + 1];
  if (sp == 3) {
    cv.d = in[0];
    cv.t = filter[0];
    cv.o = out[0];
    cv.stride_d = strides[0];
    cv.pad_front = pads[0];
    cv.pad_back = pads[3];
    cv.dilation_d = dil[0];
  }
  if (a->output_strides() && !longs(a->output_strides(), &cv.y_strides))
    return c.fail(where + ": '" + callee + "' has a misaligned vector");
  return decodeDType(a->dtype(), callee, &cv.dtype, where, c);
}

/// Checks decoded gemm parameters against the call's buffers and sets
/// |g.f32_bias| where an f16/bf16 gemm's C buffer is f32 (then it must be a
/// bias row with beta 1 and no ReLU-mask epilogue, as the verifier checks).
bool checkGemm(GemmParams &g, const Package &pkg,
               const std::vector<uint32_t> &args, const std::string &where,
               Checker &c) {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0)
    return c.fail(where + ": gemm has non-positive M, N or K");
  const dlc::exec::GemmOperandSlots slot =
      dlc::exec::gemmOperandSlots(g.has_c, g.epilogue);
  if (args.size() != size_t(slot.count))
    return c.fail(where + ": 'gemm' takes " + std::to_string(slot.count) +
                  " buffers, got " + std::to_string(args.size()));
  const dlc::exec::ElementType t = g.dtype;
  if (!checkOperand(pkg, args[0], product({g.m, g.k}), t, where, "A", c) ||
      !checkOperand(pkg, args[1], product({g.k, g.n}), t, where, "B", c))
    return false;
  g.f32_bias = g.has_c && t != dlc::exec::ElementType::F32 &&
               pkg.buffers[args[slot.c]].dtype == DLRT_F32;
  if (g.f32_bias && (!g.c_is_row_vector || g.beta != 1.0f ||
                     dlc::exec::writesReluMask(g.epilogue)))
    return c.fail(where + ": an f32 C of an f16/bf16 gemm must be a bias "
                          "row with beta 1 (not with relu_aux)");
  if (g.has_c && !checkOperand(pkg, args[slot.c],
                               g.c_is_row_vector ? g.n : product({g.m, g.n}),
                               g.f32_bias ? dlc::exec::ElementType::F32 : t,
                               where, "C", c))
    return false;
  // An f32 dBias of an f16/bf16 gemm's bias_grad_a/bias_grad_b (no C):
  // the column sum kept in f32 (f32_bias).
  const bool f32BiasGrad =
      slot.biasGrad >= 0 && !g.has_c && t != dlc::exec::ElementType::F32 &&
      (g.epilogue == dlc::exec::GemmEpilogue::BiasGradA ||
       g.epilogue == dlc::exec::GemmEpilogue::BiasGradB) &&
      pkg.buffers[args[slot.biasGrad]].dtype == DLRT_F32;
  if (f32BiasGrad)
    g.f32_bias = true;
  if (slot.biasGrad >= 0 &&
      !checkOperand(pkg, args[slot.biasGrad],
                    g.epilogue == dlc::exec::GemmEpilogue::BiasGradA ? g.m
                                                                     : g.n,
                    f32BiasGrad ? dlc::exec::ElementType::F32 : t, where,
                    "dBias", c))
    return false;
  // The ReLU bit-mask: i32 words, M rows of reluMaskWords(N).
  for (int mask : {slot.maskIn, slot.maskOut}) {
    if (mask < 0)
      continue;
    const BufferInfo &b = pkg.buffers[args[mask]];
    const int64_t words = product({g.m, dlc::exec::reluMaskWords(g.n)});
    if (b.dtype != DLRT_I32 || words < 0 || b.sizeBytes / 4 < words)
      return c.fail(where + ": Aux (buffer " + std::to_string(args[mask]) +
                    ") is not the ReLU bit-mask of " + std::to_string(words) +
                    " i32 words");
  }
  return checkOperand(pkg, args[slot.y], product({g.m, g.n}), t, where, "Y",
                      c);
}

/// Checks decoded batched_gemm parameters against the call's buffers.
bool checkBatchedGemm(const BatchedGemmParams &g, const Package &pkg,
                      const std::vector<uint32_t> &args,
                      const std::string &where, Checker &c) {
  size_t r = g.batch.size();
  if (r > 64)
    return c.fail(where + ": batched_gemm has more than 64 batch dims");
  const int64_t kLimit = int64_t(1) << 40;
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.m >= kLimit || g.n >= kLimit ||
      g.k >= kLimit)
    return c.fail(where + ": batched_gemm has non-positive or huge M, N or K");
  int64_t count = 1, lastA = 0, lastB = 0;
  for (size_t i = 0; i < r; ++i) {
    if (g.batch[i] <= 0 || g.batch[i] >= kLimit || g.stride_a[i] < 0 ||
        g.stride_a[i] >= kLimit || g.stride_b[i] < 0 ||
        g.stride_b[i] >= kLimit)
      return c.fail(where + ": batched_gemm has an invalid batch dim or "
                            "stride");
    count = product({count, g.batch[i]});
    int64_t spanA = product({g.batch[i] - 1, g.stride_a[i]});
    int64_t spanB = product({g.batch[i] - 1, g.stride_b[i]});
    if (count < 0 || spanA < 0 || spanB < 0 || spanA >= kLimit ||
        spanB >= kLimit)
      return c.fail(where + ": batched_gemm batch is too large");
    lastA += spanA; // at most 64 terms below 2^40 each: no overflow
    lastB += spanB;
  }
  int64_t matA = product({g.m, g.k}), matB = product({g.k, g.n});
  if (matA < 0 || matB < 0)
    return c.fail(where + ": batched_gemm is too large");
  if (args.size() != 3)
    return c.fail(where + ": 'batched_gemm' takes 3 buffers, got " +
                  std::to_string(args.size()));
  const dlc::exec::ElementType t = g.dtype;
  return checkOperand(pkg, args[0], lastA + matA, t, where, "A", c) &&
         checkOperand(pkg, args[1], lastB + matB, t, where, "B", c) &&
         checkOperand(pkg, args[2], product({count, g.m, g.n}), t, where, "Y",
                      c);
}

/// Checks decoded convolution parameters against the call's buffers.
bool checkConv(const ConvParams &cv, const LibraryCallInfo &info,
               const Package &pkg, const std::vector<uint32_t> &args,
               const std::string &where, Checker &c) {
  const std::string callee = info.name;
  if (cv.spatial == 3) {
    const int64_t kLimit3 = int64_t(1) << 31;
    for (int64_t v : {cv.d, cv.t, cv.o, cv.stride_d, cv.dilation_d})
      if (v <= 0 || v >= kLimit3)
        return c.fail(where + ": '" + callee +
                      "' has a non-positive or huge depth, stride or "
                      "dilation");
    if (cv.pad_front < 0 || cv.pad_back < 0 || cv.pad_front >= kLimit3 ||
        cv.pad_back >= kLimit3)
      return c.fail(where + ": '" + callee + "' has an invalid padding");
    if (dlc::semantics::windowOutputSize(cv.d, cv.t, cv.stride_d, cv.pad_front,
                                  cv.pad_back, cv.dilation_d) != cv.o)
      return c.fail(where + ": output depth " + std::to_string(cv.o) +
                    " does not match the input depth, kernel, stride, pads "
                    "and dilation");
  }
  const int64_t kLimit = int64_t(1) << 31;
  for (int64_t v :
       {cv.n, cv.c, cv.h, cv.w, cv.k, cv.r, cv.s, cv.p, cv.q, cv.stride_h,
        cv.stride_w, cv.dilation_h, cv.dilation_w, cv.group})
    if (v <= 0 || v >= kLimit)
      return c.fail(where + ": '" + callee +
                    "' has a non-positive or huge dimension, stride, dilation "
                    "or group");
  for (int64_t v : {cv.pad_top, cv.pad_left, cv.pad_bottom, cv.pad_right})
    if (v < 0 || v >= kLimit)
      return c.fail(where + ": '" + callee + "' has an invalid padding");
  if (cv.c % cv.group != 0 || cv.k % cv.group != 0)
    return c.fail(where + ": channels " + std::to_string(cv.c) + " -> " +
                  std::to_string(cv.k) + " are not divisible by group " +
                  std::to_string(cv.group));
  std::optional<int64_t> p = dlc::semantics::windowOutputSize(cv.h, cv.r, cv.stride_h, cv.pad_top,
                                        cv.pad_bottom, cv.dilation_h);
  std::optional<int64_t> q = dlc::semantics::windowOutputSize(cv.w, cv.s, cv.stride_w, cv.pad_left,
                                        cv.pad_right, cv.dilation_w);
  if (p != cv.p || q != cv.q)
    return c.fail(where + ": output size " + std::to_string(cv.p) + "x" +
                  std::to_string(cv.q) +
                  " does not match the input size, "
                  "kernel, strides, pads and dilations (" +
                  (p && q ? std::to_string(*p) + "x" + std::to_string(*q)
                          : std::string("no valid size")) +
                  ")");
  auto wantArgs = [&](size_t count) {
    if (args.size() == count)
      return true;
    return c.fail(where + ": '" + callee + "' takes " + std::to_string(count) +
                  " buffers, got " + std::to_string(args.size()));
  };
  // The depth factors are 1 for 2-D calls.
  int64_t xN = product({cv.n, cv.c, cv.d, cv.h, cv.w});
  int64_t wN = product({cv.k, cv.c / cv.group, cv.t, cv.r, cv.s});
  int64_t yN = product({cv.n, cv.k, cv.o, cv.p, cv.q});
  auto operand = [&](uint32_t index, int64_t elements, const char *role) {
    return checkOperand(pkg, index, elements, cv.dtype, where, role, c);
  };
  switch (info.direction) {
  case dlc::exec::ConvDirection::Forward:
  case dlc::exec::ConvDirection::None:
    return wantArgs(cv.has_bias ? 4 : 3) && operand(args[0], xN, "X") &&
           operand(args[1], wN, "W") &&
           (!cv.has_bias || operand(args[2], cv.k, "bias")) &&
           operand(args.back(), yN, "Y");
  case dlc::exec::ConvDirection::BackwardData:
    return wantArgs(3) && operand(args[0], yN, "dY") &&
           operand(args[1], wN, "W") && operand(args[2], xN, "dX");
  case dlc::exec::ConvDirection::BackwardFilter:
    return wantArgs(3) && operand(args[0], xN, "X") &&
           operand(args[1], yN, "dY") && operand(args[2], wN, "dW");
  }
  return true;
}

} // namespace

/// Reads library call |call| of a package of format |version| into |step|:
/// the callee against the shared table, then its parameters (positional in
/// version 1, typed in version 2), then the parameters against the buffers.
bool convertLibraryCall(const fb::LibraryCall *call, uint32_t version,
                        const Package &pkg, StepInfo *step,
                        const std::string &where, Checker &c) {
  std::string callee = str(call->callee());
  if (call->args())
    step->args.assign(call->args()->begin(), call->args()->end());
  if (!checkArgs(step->args, pkg.buffers.size(), where, c))
    return false;
  const LibraryCallInfo *info = dlc::exec::lookupLibraryCall(callee);
  if (!info)
    return c.fail(where + ": unknown library call '" + callee +
                  "' (this runtime knows " + dlc::exec::libraryCallNames() +
                  ")");
  step->call.call = info->call;
  bool decoded = version == 1 ? decodePositional(call, *info, step, where, c)
                              : decodeTyped(call, *info, step, where, c);
  if (!decoded)
    return false;
  // A strided operand is only the output of a call that writes strided
  // outputs, with the call's output strides equal to the view's.
  const std::vector<int64_t> none;
  const std::vector<int64_t> &yStrides =
      info->family == LibraryCallFamily::Conv ? step->call.conv.y_strides
                                              : none;
  for (size_t i = 0; i < step->args.size(); ++i) {
    const BufferInfo &b = pkg.buffers[step->args[i]];
    bool output = i + 1 == step->args.size();
    if (!b.viewStrides.empty() &&
        !(output && info->stridedOutput && yStrides == b.viewStrides))
      return c.fail(where + ": '" + callee + "' cannot take the strided " +
                    "view buffer " + std::to_string(step->args[i]) +
                    " as operand " + std::to_string(i));
    if (output && !yStrides.empty() && yStrides != b.viewStrides)
      return c.fail(where + ": '" + callee +
                    "' has output_strides that are not its output's");
  }
  switch (info->family) {
  case LibraryCallFamily::Gemm:
    return checkGemm(step->call.gemm, pkg, step->args, where, c);
  case LibraryCallFamily::BatchedGemm:
    return checkBatchedGemm(step->call.batched, pkg, step->args, where, c);
  case LibraryCallFamily::Conv:
    return checkConv(step->call.conv, *info, pkg, step->args, where, c);
  }
  return true;
}

} // namespace dlrt::loader
