//===- LibraryCalls.h - the table of library calls --------------*- C++ -*-===//
//
// The one list of library calls (cuBLASLt / cuDNN on CUDA, oneDNN on the
// host): the dlexec.library_call verifier, the package writer, the package
// schema's typed attribute tables and the runtime's loader and executor all
// read it. MLIR-free and header-only so the runtime, which never links
// LLVM/MLIR, can include it (CMake target DLCLibraryCalls).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_SCHEMA_LIBRARYCALLS_H
#define DLC_RUNTIME_SCHEMA_LIBRARYCALLS_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dlc::exec {

/// A library call of dlexec.library_call and of package.fbs's LibraryCall.
enum class LibraryCall : uint8_t {
#define DLC_LIBRARY_CALL(Enum, ...) Enum,
#include "runtime/schema/LibraryCalls.def"
};

/// Calls that share a parameter set (package.fbs: GemmAttrs,
/// BatchedGemmAttrs, ConvAttrs) and a device entry point.
enum class LibraryCallFamily : uint8_t { Gemm, BatchedGemm, Conv };

/// Which convolution a Conv-family call computes; None for the others.
enum class ConvDirection : uint8_t {
  None,
  Forward,
  BackwardData,
  BackwardFilter
};

/// One row of the table (LibraryCalls.def).
struct LibraryCallInfo {
  LibraryCall call;
  /// The callee string of dlexec.library_call and package.fbs.
  const char *name;
  LibraryCallFamily family;
  ConvDirection direction;
  /// Spatial dims of a convolution (2: NCHW, 3: NCDHW); 0 otherwise.
  int spatialDims;
  /// Number of inputs the call takes (the optional ones included in max).
  unsigned minInputs, maxInputs;
  /// Operand roles, e.g. "A, B[, C]" and "Y[, dBias]"; every call has one
  /// output, a gemm with a bias-gradient or ReLU-mask epilogue a second
  /// (GemmEpilogue, gemmOperandSlots).
  const char *inputs, *outputs;
  /// Attributes of the dlexec op, comma-separated.
  const char *attributes;
  /// Whether every device writes the output through a strided view of a
  /// larger buffer (ConvParams::y_strides; a dlexec.subview as the output
  /// operand), so that the memory planner may place the output in its slot
  /// of a concatenation's buffer.
  bool stridedOutput;
};

/// Every library call, indexed by LibraryCall.
inline constexpr LibraryCallInfo kLibraryCalls[] = {
#define DLC_LIBRARY_CALL(Enum, Name, Family, Direction, Spatial, MinIn, MaxIn, \
                         Ins, Outs, Attrs, Strided)                            \
  {LibraryCall::Enum,                                                          \
   Name,                                                                       \
   LibraryCallFamily::Family,                                                  \
   ConvDirection::Direction,                                                   \
   Spatial,                                                                    \
   MinIn,                                                                      \
   MaxIn,                                                                      \
   Ins,                                                                        \
   Outs,                                                                       \
   Attrs,                                                                      \
   Strided},
#include "runtime/schema/LibraryCalls.def"
};

inline constexpr size_t kNumLibraryCalls =
    sizeof(kLibraryCalls) / sizeof(kLibraryCalls[0]);

/// The row of |call|.
inline const LibraryCallInfo &libraryCallInfo(LibraryCall call) {
  return kLibraryCalls[static_cast<size_t>(call)];
}

/// The row whose name is |name|, or null for an unknown callee.
inline const LibraryCallInfo *lookupLibraryCall(std::string_view name) {
  for (const LibraryCallInfo &info : kLibraryCalls)
    if (name == info.name)
      return &info;
  return nullptr;
}

/// "gemm, batched_gemm, ..." for messages that list the known callees.
inline std::string libraryCallNames() {
  std::string out;
  for (const LibraryCallInfo &info : kLibraryCalls)
    out += (out.empty() ? "" : ", ") + std::string(info.name);
  return out;
}

/// Every device allocation of a session (each persistent and input buffer,
/// the arena, the workspace) is rounded up to a multiple of this many bytes
/// (at least one multiple), as the host device's allocator and the memory
/// plan (docs/memory.md) count it.
inline constexpr int64_t kAllocationGranularityBytes = 256;

/// |bytes| as one device allocation takes it: rounded up to
/// kAllocationGranularityBytes, at least that.
inline constexpr int64_t allocationBytes(int64_t bytes) {
  return ((bytes > 0 ? bytes : 1) + kAllocationGranularityBytes - 1) /
         kAllocationGranularityBytes * kAllocationGranularityBytes;
}

/// Library-call workspace (cuBLASLt's split-K and algorithm scratch, cuDNN's
/// convolution workspace): the compiler plans one workspace per step of
/// min(kMaxLibraryWorkspaceBytes, the largest output of any library call of
/// the package) bytes (libraryWorkspaceBytes), or more where a call's
/// fallback needs more (libraryCallFallbackScratchBytes), the runtime
/// allocates it once per session, and the CUDA device gives cuBLASLt and
/// cuDNN no more than that (algorithms that need more are skipped). 4 MiB
/// is cuBLAS's documented default workspace below Hopper (cuBLAS guide,
/// cublasSetWorkspace).
inline constexpr int64_t kMaxLibraryWorkspaceBytes = int64_t(4) << 20;

/// The planned workspace for a package whose largest library-call output is
/// |largestOutputBytes| bytes (0 without library calls).
inline constexpr int64_t libraryWorkspaceBytes(int64_t largestOutputBytes) {
  return largestOutputBytes < kMaxLibraryWorkspaceBytes
             ? largestOutputBytes
             : kMaxLibraryWorkspaceBytes;
}

/// The element type of every operand of one library call.
///
/// Low-precision semantics (F16: IEEE binary16, BF16: bfloat16): products
/// and sums accumulate in f32, alpha, beta and the bias add are applied in
/// f32, and the result is rounded once, to nearest even, to the element
/// type. A low-precision call therefore equals the f32 call on the
/// f32-widened operands, rounded once (devices may sum in another order, so
/// results can differ from that by the f32 accumulation order, i.e. at most
/// an ulp of the element type in practice). F64 is accepted by the
/// dlexec.library_call verifier for gemm and the convolutions (reference
/// pipelines) but no runtime device runs it; the package loader rejects it.
/// The values equal package.fbs's DType only by name; convert explicitly.
enum class ElementType : uint8_t { F32, F16, BF16, F64 };

/// "f32", "f16", "bf16" or "f64", as MLIR and the package print them.
inline const char *elementTypeName(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return "f32";
  case ElementType::F16:
    return "f16";
  case ElementType::BF16:
    return "bf16";
  case ElementType::F64:
    return "f64";
  }
  return "?";
}

/// Bytes per element of |type|.
inline size_t elementTypeBytes(ElementType type) {
  return type == ElementType::F64 ? 8 : type == ElementType::F32 ? 4 : 2;
}

/// What a `gemm` call computes after the product and C (cuBLASLt's epilogue,
/// cublasLtEpilogue_t; the host device computes the same).
///   None:  Y as described at GemmParams.
///   Relu:  Y = max(alpha op(A) op(B) + beta C, 0), elementwise after C (the
///          bias row) is added (CUBLASLT_EPILOGUE_RELU_BIAS with a bias row,
///          _RELU otherwise). A NaN sum gives 0, as cuBLASLt's max(x, 0).
///   BiasGradA: Y as for None, and a second output dBias[M] = sum over k of
///          op(A)[m, k] (no alpha), the bias gradient of a linear layer whose
///          weight gradient is dY^T X (op(A) = dY^T: A is dY [K, M] with
///          trans_a); cuBLASLt's BGRADB on the column-major swapped problem.
///   BiasGradB: Y as for None, and dBias[N] = sum over k of op(B)[k, n] (op(B)
///          = dY [K, N]: a weight gradient X^T dY); cuBLASLt's BGRADA there.
///   ReluAux: Y as for Relu, and a second output Aux, the ReLU bit-mask:
///          bit (i, j) is set where Y[i, j] > 0 (CUBLASLT_EPILOGUE_RELU_AUX_BIAS
///          with a bias row, _RELU_AUX otherwise). Aux is [M, reluMaskWords(N)]
///          i32 words; bit j of row i is bit j % 32 of word i * W + j / 32
///          (little-endian bytes: cuBLASLt's column-major mask of the swapped
///          problem Y^T, one bit per element, AUX_LD = 32 W bits, a multiple
///          of 128); the bits past N are unspecified.
///   DRelu: Y = op(A) op(B) (no C, beta 0) with every element whose bit in
///          Aux (an input, the mask a ReluAux gemm of the same [M, N] wrote)
///          is clear set to +0: the ReLU gradient select(h > 0, dH, 0)
///          (CUBLASLT_EPILOGUE_DRELU).
///   DReluBiasGrad: Y as for DRelu, and dBias[N] = sum over m of Y[m, n]
///          (CUBLASLT_EPILOGUE_DRELU_BGRAD, whose bias gradient sums the rows
///          of the swapped problem's D^T).
/// The bias gradient is summed in at least f32 (the host device in f64, in
/// order of k (of m for DReluBiasGrad), as its reduction kernels sum) and
/// rounded once to the element type.
/// cuBLASLt's GELU epilogue is the tanh approximation; there is no Gelu here
/// because no model the repository compiles has that form (PyTorch's default
/// GELU is the erf form, which the epilogue must not replace).
enum class GemmEpilogue : uint8_t {
  None,
  Relu,
  BiasGradA,
  BiasGradB,
  ReluAux,
  DRelu,
  DReluBiasGrad
};

/// Every GemmEpilogue, in enum order.
inline constexpr GemmEpilogue kGemmEpilogues[] = {
    GemmEpilogue::None,      GemmEpilogue::Relu,    GemmEpilogue::BiasGradA,
    GemmEpilogue::BiasGradB, GemmEpilogue::ReluAux, GemmEpilogue::DRelu,
    GemmEpilogue::DReluBiasGrad};

/// "none", "relu", "bgrad_a", "bgrad_b", "relu_aux", "drelu",
/// "drelu_bgrad": the `epilogue` attribute of
/// dlexec.library_call "gemm" and the names `dlc --stats` counts.
inline const char *gemmEpilogueName(GemmEpilogue e) {
  switch (e) {
  case GemmEpilogue::None:
    return "none";
  case GemmEpilogue::Relu:
    return "relu";
  case GemmEpilogue::BiasGradA:
    return "bgrad_a";
  case GemmEpilogue::BiasGradB:
    return "bgrad_b";
  case GemmEpilogue::ReluAux:
    return "relu_aux";
  case GemmEpilogue::DRelu:
    return "drelu";
  case GemmEpilogue::DReluBiasGrad:
    return "drelu_bgrad";
  }
  return "?";
}

/// True for the epilogues that write a bias gradient (a second output).
inline bool writesBiasGradient(GemmEpilogue e) {
  return e == GemmEpilogue::BiasGradA || e == GemmEpilogue::BiasGradB ||
         e == GemmEpilogue::DReluBiasGrad;
}

/// True for the epilogue that writes the ReLU bit-mask (a second output).
inline bool writesReluMask(GemmEpilogue e) { return e == GemmEpilogue::ReluAux; }

/// True for the epilogues that read the ReLU bit-mask (a third input).
inline bool readsReluMask(GemmEpilogue e) {
  return e == GemmEpilogue::DRelu || e == GemmEpilogue::DReluBiasGrad;
}

/// cuBLASLt's ReLU bit-mask leading dimension (CUBLASLT_MATMUL_DESC_
/// EPILOGUE_AUX_LD, in bits) must be a multiple of 128 and at least D's rows.
inline constexpr int64_t kReluMaskLdBits = 128;

/// i32 words per row of the ReLU bit-mask of an [M, N] gemm result: N
/// rounded up to kReluMaskLdBits bits (the mask's AUX_LD), over 32.
inline constexpr int64_t reluMaskWords(int64_t n) {
  return (n + kReluMaskLdBits - 1) / kReluMaskLdBits * (kReluMaskLdBits / 32);
}

/// Where each operand of a `gemm` call sits in its operand list (dlexec ins
/// then outs; the package's args): A, B[, C][, Aux], Y[, dBias or Aux].
/// Indices are -1 for an absent operand; |count| is the list's length.
struct GemmOperandSlots {
  int a = 0, b = 1, c = -1, maskIn = -1, y = -1, biasGrad = -1, maskOut = -1;
  int count = 0;
};

/// The operand slots of a gemm with |has_c| and |epilogue|.
inline GemmOperandSlots gemmOperandSlots(bool has_c, GemmEpilogue epilogue) {
  GemmOperandSlots s;
  int next = 2;
  if (has_c)
    s.c = next++;
  if (readsReluMask(epilogue))
    s.maskIn = next++;
  s.y = next++;
  if (writesBiasGradient(epilogue))
    s.biasGrad = next++;
  if (writesReluMask(epilogue))
    s.maskOut = next++;
  s.count = next;
  return s;
}

/// Parameters of a `gemm` call (row-major): Y[M,N] = alpha * op(A) * op(B)
/// + beta * C, where op(A) is [M,K] (A is [K,M] when trans_a), op(B) is
/// [K,N] (B is [N,K] when trans_b). C is a row vector [N] broadcast over rows
/// (c_is_row_vector), a full [M,N], or absent: then beta scales the previous
/// contents of Y (accumulation). A, B, C and Y all have element type
/// |dtype|; with f16 or bf16 the sum of products, alpha, and beta * C (or
/// beta * the previous Y) are computed in f32 and Y is rounded once (see
/// ElementType). |epilogue| then transforms Y or adds the bias-gradient
/// output dBias ([M] for BiasGradA, [N] for BiasGradB and DReluBiasGrad) or
/// the ReLU bit-mask (see GemmEpilogue, gemmOperandSlots).
///
/// |f32_bias| (f16/bf16 only, with a bias row: has_c, c_is_row_vector, beta
/// 1): C is f32, not |dtype| (cuBLASLt's BIAS epilogue with
/// CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE CUDA_R_32F). Y = round(alpha * op(A)
/// op(B) + C) (then max(., 0) for the relu epilogues, before the rounding):
/// the products accumulate in f32, the f32 bias is added in f32 and each Y
/// element is rounded once. With a bias_grad_a/bias_grad_b epilogue (and no
/// C) it says instead that dBias is f32: the column sum of the 16-bit
/// operand accumulated in f32 and stored unrounded (cuBLASLt's BGRADA/BGRADB
/// with CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE CUDA_R_32F). Not stored in the
/// package: the loader derives it from C's (or dBias's) buffer type.
struct GemmParams {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false, has_c = false, c_is_row_vector = false;
  bool f32_bias = false;
  float alpha = 1.0f, beta = 0.0f;
  ElementType dtype = ElementType::F32;
  GemmEpilogue epilogue = GemmEpilogue::None;
};

/// Parameters of a `batched_gemm` call (row-major):
/// Y[p] = op(A[p]) * op(B[p]) for every index p of the batch dims `batch`,
/// where op(A[p]) is [m,k] and A[p] is the contiguous row-major matrix at
/// element offset sum_i p_i * stride_a[i] of A: [m,k], or [k,m] when
/// |trans_a| (op transposes it, cuBLASLt's CUBLASLT_MATMUL_DESC_TRANSA, the
/// BLAS 'T'); likewise op(B[p]) is [k,n] and B[p] [k,n] ([n,k] when
/// |trans_b|) at sum_i p_i * stride_b[i] of B (stride 0 broadcasts an
/// operand along that dim), and Y is contiguous [prod(batch), m, n]. A, B
/// and Y have element type |dtype| (f32, f16 or bf16); low-precision
/// products accumulate in f32 and each Y element is rounded once (see
/// ElementType). The transposes let a last-two-dims transpose that feeds a
/// batched matmul (an attention's Q K^T and the gradients of both products)
/// be read in place instead of copied first.
struct BatchedGemmParams {
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> batch, stride_a, stride_b;
  bool trans_a = false, trans_b = false;
  ElementType dtype = ElementType::F32;
};

/// Parameters of the convolution calls (NCHW input, KCRS filter): input
/// [N,C,H,W], filter [K,C/group,R,S], output [N,K,P,Q]. With spatial = 3
/// (conv3d_* calls) the operands are [N,C,D,H,W], [K,C/group,T,R,S] and
/// [N,K,O,P,Q]; the depth fields are 1/0 otherwise. Every operand (input,
/// filter, bias, output and their gradients) has element type |dtype|; with
/// f16 or bf16 the convolution sums in f32, adds the bias in f32 and rounds
/// each result element once (see ElementType).
///
/// |y_strides| are the element strides of the output operand (one per dim,
/// [N, K, P, Q] or [N, K, O, P, Q]) when the call writes it through a
/// strided view (a channel slice of a concatenation's buffer: strides
/// [Ktotal*P*Q, P*Q, Q, 1]); empty for a dense output. Only calls whose row
/// has stridedOutput take them.
struct ConvParams {
  int64_t n = 0, c = 0, h = 0, w = 0, k = 0, r = 0, s = 0, p = 0, q = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1, group = 1;
  bool has_bias = false;
  int spatial = 2;
  int64_t d = 1, t = 1, o = 1, stride_d = 1, pad_front = 0, pad_back = 0,
          dilation_d = 1;
  ElementType dtype = ElementType::F32;
  std::vector<int64_t> y_strides;
};

/// A library call with its parameters: the member of |call|'s family is set.
struct LibraryCallParams {
  LibraryCall call = LibraryCall::Gemm;
  GemmParams gemm;           // family Gemm
  BatchedGemmParams batched; // family BatchedGemm
  ConvParams conv;           // family Conv
};

/// Scratch bytes the CUDA device's fallback for the call |params| takes
/// from the workspace where cuBLASLt has no algorithm for its epilogue, 0
/// for calls whose fallbacks fit in any planned workspace. An f16/bf16 gemm
/// with an f32 bias row (GemmParams::f32_bias; real cuBLASLt 13 on sm_90
/// refused CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE CUDA_R_32F with a bf16 D)
/// adds the bias to an f32 [M, N] product, then rounds it: the f32 product,
/// rounded up to 256 bytes as CudaDevice::scratch places the next piece,
/// then M f32 ones for the bias broadcast. With an f32 dBias (bias_grad_a/
/// bias_grad_b) the fallback sums the operand as its product with K 16-bit
/// ones into the f32 dBias. The memory plan reserves at
/// least this much (workspaceBytesFor), so that the fallback allocates
/// nothing and a step that takes it is still captured as a CUDA graph.
inline int64_t libraryCallFallbackScratchBytes(const LibraryCallParams &params) {
  if (libraryCallInfo(params.call).family != LibraryCallFamily::Gemm)
    return 0;
  const GemmParams &g = params.gemm;
  if (g.f32_bias && writesBiasGradient(g.epilogue) && g.k > 0)
    return (g.k + 1) / 2 * 4; // the K 16-bit ones of dBias's product
  if (g.f32_bias && g.m > 0 && g.n > 0)
    return (g.m * g.n * 4 + kAllocationGranularityBytes - 1) /
               kAllocationGranularityBytes * kAllocationGranularityBytes +
           g.m * 4;
  return 0;
}

/// The planned workspace (before allocationBytes) of a package whose
/// largest library-call output is |largestOutputBytes| and whose largest
/// fallback scratch (libraryCallFallbackScratchBytes) is
/// |largestFallbackBytes|: the larger of libraryWorkspaceBytes and that
/// scratch. The compiler's plan (dlc::computePlanStats) and the runtime's
/// (dlrt::computeMemoryPlan, for packages without the table) both use it.
inline int64_t workspaceBytesFor(int64_t largestOutputBytes,
                                 int64_t largestFallbackBytes) {
  int64_t w = libraryWorkspaceBytes(largestOutputBytes);
  return w > largestFallbackBytes ? w : largestFallbackBytes;
}

/// The element type of |params|'s call (the dtype of its family's member).
inline ElementType elementTypeOf(const LibraryCallParams &params) {
  switch (libraryCallInfo(params.call).family) {
  case LibraryCallFamily::Gemm:
    return params.gemm.dtype;
  case LibraryCallFamily::BatchedGemm:
    return params.batched.dtype;
  case LibraryCallFamily::Conv:
    return params.conv.dtype;
  }
  return ElementType::F32;
}

} // namespace dlc::exec

#endif
