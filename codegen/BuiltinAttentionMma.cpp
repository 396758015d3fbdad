//===- BuiltinAttentionMma.cpp - tensor-core CUDA attention bodies -------===//
//
// The CUDA bodies of the attention template (BuiltinAttention.cpp) when Q,
// K and V are all bf16 or all f16: FlashAttention-2's forward (Dao 2023,
// "FlashAttention-2: Faster Attention with Better Parallelism and Work
// Partitioning", algorithm 1) on the tensor cores through
// mma.sync.aligned.m16n8k16 with f32 accumulators. A block of 4 warps takes
// 64 query rows of one (batch, head), 16 rows a warp, with the rows' Q
// fragments held in registers; the block streams K and V in tiles of
// kBlock keys through static shared memory, and each warp computes its
// 16 x kBlock scores S = Q K^T, masks and scales them, updates the online
// softmax (Milakov & Gimelshein 2018) of its rows in registers (the four
// lanes of a quad hold a row and combine by __shfl_xor_sync) and adds
// P V to its output fragments, P rounded once to the 16-bit type: the
// accumulator layout of an m16n8 tile is the A layout of an m16k16 tile,
// so P never leaves the registers. Scores, masks, causality, dropout and
// the log-sum-exp follow the portable body exactly (the same Philox
// numbering, -inf for a row without keys); only the order of the sums and
// the 16-bit P differ.
//
// Covered: the forward with head sizes D, Dv <= 256 (any size: the K
// dimension of Q K^T is padded with zeros to a multiple of 16, Dv to a
// multiple of 8), any lengths (ragged tiles read zeros and mask the keys
// past Skv). The gradient templates keep the portable CUDA body, as do f32
// and f64 and mixed 16-bit types (docs/attention.md).
//
// PTX-only instructions get a __device__ wrapper whose body is the inline
// asm under NVRTC and, where the test-only CUDA emulation is included
// (DLC_CUDA_EMULATION_H), its warp-collective model
// (test/cuda-emulation/include/dlc_cuda_emulation/TensorCores.h).
//
//===----------------------------------------------------------------------===//
#include "codegen/BuiltinAttention.h"

#include "llvm/ADT/StringMap.h"

#include <string>

using namespace mlir;

namespace dlc::codegen::detail {

namespace {

/// Query rows of a block (4 warps of 16 rows).
constexpr int64_t kRows = 64;
constexpr int32_t kThreads = 128;
/// Static shared memory a block may use (the limit without opting in to
/// dynamic shared memory).
constexpr int64_t kSharedBytes = 48 * 1024;
/// The largest head size (D and Dv) the tensor-core body takes.
constexpr int64_t kMaxHeadDim = 256;

int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/// |text| with every `${NAME}` replaced by |vars|'s value for NAME.
std::string subst(const std::string &text, const llvm::StringMap<std::string> &vars) {
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t open = text.find("${", pos);
    if (open == std::string::npos)
      break;
    size_t close = text.find('}', open);
    out.append(text, pos, open - pos);
    std::string key = text.substr(open + 2, close - open - 2);
    auto it = vars.find(key);
    out += it == vars.end() ? "${" + key + "}" : it->second;
    pos = close + 1;
  }
  out.append(text, pos, std::string::npos);
  return out;
}

/// The CUDA helpers of a 16-bit type |t| ("bf16" or "f16"): the mma.sync
/// wrapper, the bits of an element, and two floats rounded and packed into
/// one 32-bit register (the lower index in the low half, as PTX keeps
/// fragment pairs).
std::string mmaHelpers(const std::string &t) {
  const bool bf16 = t == "bf16";
  llvm::StringMap<std::string> v;
  v["T"] = t;
  v["RAW"] = bf16 ? "__nv_bfloat16_raw" : "__half_raw";
  v["PTXT"] = bf16 ? "bf16" : "f16";
  v["EMU_BF16"] = bf16 ? "true" : "false";
  return subst(R"(
/* mma.sync.aligned.m16n8k16.row.col.f32.${PTXT}.${PTXT}.f32 for the calling
   lane: d += A * B over the warp, fragments in the PTX ISA's layouts. */
__device__ __forceinline__ void dlc_mma_${T}(float d[4], const unsigned a[4],
                                              const unsigned b[2]) {
#ifdef DLC_CUDA_EMULATION_H
  dlc_emu_mma_m16n8k16(${EMU_BF16}, d, a, b, d);
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.${PTXT}.${PTXT}.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}
__device__ __forceinline__ unsigned short dlc_bits_${T}(dlc_${T} x) {
  const ${RAW} r = x;
  return r.x;
}
__device__ __forceinline__ unsigned dlc_pack_${T}(float lo, float hi) {
  return (unsigned)dlc_bits_${T}(dlc_f32_to_${T}(lo)) |
         ((unsigned)dlc_bits_${T}(dlc_f32_to_${T}(hi)) << 16);
}
__device__ __forceinline__ unsigned dlc_pair(unsigned short lo,
                                             unsigned short hi) {
  return (unsigned)lo | ((unsigned)hi << 16);
}
)",
               v);
}

/// The forward's cooperative CUDA body (see the file comment).
std::string forwardBody(const AttentionGen &g, int64_t keyBlock,
                        const std::string &t, const std::string &lseOut,
                        const std::string &oOut) {
  const auto &d = g.d;
  const int64_t dk = roundUp(d.headDim, 16), dv8 = roundUp(d.valueDim, 8);
  llvm::StringMap<std::string> v;
  auto num = [](int64_t x) { return std::to_string(x); };
  v["T"] = t;
  v["BC"] = num(keyBlock);
  v["DK"] = num(dk);
  v["DV8"] = num(dv8);
  v["KS"] = num(dk + 8);
  v["VS"] = num(dv8 + 8);
  v["D"] = num(d.headDim);
  v["DV"] = num(d.valueDim);
  v["NQB"] = num((d.queryLen + kRows - 1) / kRows);
  v["HQ"] = num(d.queryHeads);
  v["SQ"] = num(d.queryLen);
  v["SKV"] = num(d.kvLen);
  v["GROUP"] = num(d.groupSize());
  v["THREADS"] = num(kThreads);
  {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << llvm::format("%.9g", (double)(float)g.p.scale) << "f";
    v["SCALE"] = s;
  }
  v["Q"] = g.q;
  v["K"] = g.k;
  v["V"] = g.v;
  v["O"] = oOut;
  v["LSE"] = lseOut;
  v["QIDX"] = AttentionGen::idx(g.qs, "b", "h", "i", "c");
  v["KIDX"] = AttentionGen::idx(g.ks, "b", "hk", "j", "c");
  v["VIDX"] = AttentionGen::idx(g.vs, "b", "hk", "j", "c");
  v["OIDX"] = AttentionGen::idx(g.os, "b", "h", "i", "c");
  v["STORE"] = storeExpr(g.oe, "x");
  // The keys row i sees end at jEnd(i) (BuiltinAttention.cpp's keyEnd()),
  // and the block's last row's end bounds its key tiles.
  const int64_t off = d.kvLen - d.queryLen + 1;
  if (g.p.causal) {
    v["JEND"] = "(i + " + num(off) + "LL < " + num(d.kvLen) + "LL ? i + " +
                num(off) + "LL : " + num(d.kvLen) + "LL)";
    v["KEND"] = "(iLast + " + num(off) + "LL < " + num(d.kvLen) +
                "LL ? iLast + " + num(off) + "LL : " + num(d.kvLen) + "LL)";
  } else {
    v["JEND"] = num(d.kvLen) + "LL";
    v["KEND"] = num(d.kvLen) + "LL";
  }
  // Mask: an i1 keep mask removes the score, a float one is added to it.
  std::string mask;
  if (g.p.hasMask) {
    std::string m =
        g.mask + "[" + AttentionGen::idx(g.ms, "b", "h", "i", "j") + "]";
    if (g.maskElem.isInteger(1))
      mask = "if (!" + m + ") x = -DLC_INF_F;";
    else
      mask = "x += (float)" + loadExpr(g.maskElem, m) + ";";
  }
  v["MASK"] = mask;
  // Dropout: the portable keep() numbering, on the probabilities only (the
  // sum l is of the undropped ones).
  std::string keep;
  if (g.p.dropoutRatio > 0.0f) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << "if (p != 0.0f) {\n"
       << "            const unsigned long long e = (((unsigned long long)b * "
       << d.queryHeads << "ULL + (unsigned long long)h) * " << d.queryLen
       << "ULL + (unsigned long long)i) * " << d.kvLen
       << "ULL + (unsigned long long)j;\n"
       << "            p = dlc_philox_uniform24(" << (uint64_t)g.p.seed
       << "ull, e, (unsigned int)" << g.step << "[0]) >= "
       << llvm::format("%.9g", (double)g.p.dropoutRatio) << "f ? p * "
       << llvm::format("%.9g", 1.0 / (1.0 - (double)g.p.dropoutRatio))
       << "f : 0.0f;\n"
       << "          }";
    keep = s;
  }
  v["KEEP"] = keep;
  return subst(R"(  const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const long long qb = (long long)blockIdx.x % ${NQB}LL;
  const long long h = ((long long)blockIdx.x / ${NQB}LL) % ${HQ}LL;
  const long long b = (long long)blockIdx.x / (${NQB}LL * ${HQ}LL);
  const long long hk = h / ${GROUP}LL;
  __shared__ unsigned short sK[${BC}][${KS}];
  __shared__ unsigned short sV[${BC}][${VS}];
  /* This lane's two rows: g and g + 8 of its warp's 16. */
  const long long rows[2] = {qb * 64 + warp * 16 + g, qb * 64 + warp * 16 + g + 8};
  unsigned qf[${DK} / 16][4];
  #pragma unroll
  for (int kk = 0; kk < ${DK} / 16; ++kk)
    for (int r = 0; r < 4; ++r) {
      const long long i = rows[r & 1];
      const int c0 = kk * 16 + 2 * t4 + 8 * (r >> 1);
      unsigned short lo = 0, hi = 0;
      if (i < ${SQ}LL) {
        long long c = c0;
        if (c < ${D}) lo = dlc_bits_${T}(${Q}[${QIDX}]);
        c = c0 + 1;
        if (c < ${D}) hi = dlc_bits_${T}(${Q}[${QIDX}]);
      }
      qf[kk][r] = dlc_pair(lo, hi);
    }
  float o[${DV8} / 8][4];
  #pragma unroll
  for (int n = 0; n < ${DV8} / 8; ++n)
    for (int e = 0; e < 4; ++e) o[n][e] = 0.0f;
  float m[2] = {-DLC_INF_F, -DLC_INF_F}, l[2] = {0.0f, 0.0f};
  const long long iLast = qb * 64 + 63 < ${SQ}LL ? qb * 64 + 63 : ${SQ}LL - 1;
  const long long kEnd = ${KEND};
  for (long long kb = 0; kb < kEnd; kb += ${BC}) {
    __syncthreads(); /* every warp is done with the previous tiles */
    for (int x = (int)threadIdx.x; x < ${BC} * ${DK}; x += ${THREADS}) {
      const int r = x / ${DK};
      const long long j = kb + r, c = x % ${DK};
      sK[r][c] = j < ${SKV}LL && c < ${D} ? dlc_bits_${T}(${K}[${KIDX}]) : (unsigned short)0;
    }
    for (int x = (int)threadIdx.x; x < ${BC} * ${DV8}; x += ${THREADS}) {
      const int r = x / ${DV8};
      const long long j = kb + r, c = x % ${DV8};
      sV[r][c] = j < ${SKV}LL && c < ${DV} ? dlc_bits_${T}(${V}[${VIDX}]) : (unsigned short)0;
    }
    __syncthreads();
    /* S = Q K^T: B[k][n] = K[key n][dim k]. */
    float s[${BC} / 8][4];
    #pragma unroll
    for (int n = 0; n < ${BC} / 8; ++n) {
      for (int e = 0; e < 4; ++e) s[n][e] = 0.0f;
      const unsigned short *kr = sK[n * 8 + g];
      #pragma unroll
      for (int kk = 0; kk < ${DK} / 16; ++kk) {
        const int c = kk * 16 + 2 * t4;
        const unsigned bf[2] = {dlc_pair(kr[c], kr[c + 1]),
                                dlc_pair(kr[c + 8], kr[c + 9])};
        dlc_mma_${T}(s[n], qf[kk], bf);
      }
    }
    /* Scale, mask; -inf past the row's last key, past Skv and below Sq. */
    float mx[2] = {m[0], m[1]};
    #pragma unroll
    for (int n = 0; n < ${BC} / 8; ++n)
      for (int e = 0; e < 4; ++e) {
        const long long i = rows[e >> 1];
        const long long j = kb + n * 8 + 2 * t4 + (e & 1);
        float x = s[n][e] * ${SCALE};
        if (i >= ${SQ}LL || j >= ${JEND}) {
          x = -DLC_INF_F;
        } else {
          ${MASK}
        }
        s[n][e] = x;
        mx[e >> 1] = fmaxf(mx[e >> 1], x);
      }
    #pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      /* The running maximum grew: rescale the sum and the output. */
      const float scale = mx[r] == -DLC_INF_F ? 1.0f : expf(m[r] - mx[r]);
      l[r] *= scale;
      #pragma unroll
      for (int n = 0; n < ${DV8} / 8; ++n) {
        o[n][2 * r] *= scale;
        o[n][2 * r + 1] *= scale;
      }
      m[r] = mx[r];
    }
    #pragma unroll
    for (int n = 0; n < ${BC} / 8; ++n)
      for (int e = 0; e < 4; ++e) {
        float p = s[n][e] == -DLC_INF_F ? 0.0f : expf(s[n][e] - m[e >> 1]);
        l[e >> 1] += p;
        {
          const long long i = rows[e >> 1];
          const long long j = kb + n * 8 + 2 * t4 + (e & 1);
          (void)i;
          (void)j;
          ${KEEP}
        }
        s[n][e] = p;
      }
    /* O += P V: P's accumulator tiles n = 2ks, 2ks + 1 are the A fragment
       of keys 16ks..16ks+15; B[k][n] = V[key k][column n]. */
    #pragma unroll
    for (int ks = 0; ks < ${BC} / 16; ++ks) {
      const unsigned pa[4] = {dlc_pack_${T}(s[2 * ks][0], s[2 * ks][1]),
                              dlc_pack_${T}(s[2 * ks][2], s[2 * ks][3]),
                              dlc_pack_${T}(s[2 * ks + 1][0], s[2 * ks + 1][1]),
                              dlc_pack_${T}(s[2 * ks + 1][2], s[2 * ks + 1][3])};
      const int k0 = ks * 16 + 2 * t4;
      #pragma unroll
      for (int n = 0; n < ${DV8} / 8; ++n) {
        const int c = n * 8 + g;
        const unsigned vb[2] = {dlc_pair(sV[k0][c], sV[k0 + 1][c]),
                                dlc_pair(sV[k0 + 8][c], sV[k0 + 9][c])};
        dlc_mma_${T}(o[n], pa, vb);
      }
    }
  }
  #pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
  }
  #pragma unroll
  for (int r = 0; r < 2; ++r) {
    const long long i = rows[r];
    if (i >= ${SQ}LL)
      continue;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    for (int n = 0; n < ${DV8} / 8; ++n)
      for (int e = 0; e < 2; ++e) {
        const long long c = n * 8 + 2 * t4 + e;
        const float x = o[n][2 * r + e] * inv;
        if (c < ${DV}) ${O}[${OIDX}] = ${STORE};
      }
    if (t4 == 0)
      ${LSE}[(b * ${HQ}LL + h) * ${SQ}LL + i] =
          l[r] > 0.0f ? m[r] + logf(l[r]) : -DLC_INF_F;
  }
)",
               v);
}

} // namespace

LogicalResult addAttentionTensorCoreBody(exec::BuiltinKernelOp op,
                                         const AttentionGen &g,
                                         KernelCode &code) {
  // Not covered (the portable body stays): the gradient templates, f32 and
  // f64 data, Q, K and V of different 16-bit types, head sizes past 256.
  if (op.getTemplateName() != "attention")
    return success();
  if (!(g.qe.isBF16() || g.qe.isF16()) || g.ke != g.qe || g.ve != g.qe)
    return success();
  const auto &d = g.d;
  if (d.headDim > kMaxHeadDim || d.valueDim > kMaxHeadDim || d.batch <= 0 ||
      d.queryLen <= 0 || d.kvLen <= 0 || d.queryHeads <= 0)
    return success();
  const int64_t dk = roundUp(d.headDim, 16), dv8 = roundUp(d.valueDim, 8);
  // The largest key tile (64, 32 or 16 keys) whose K and V fit.
  int64_t keyBlock = 64;
  while (keyBlock > 16 && 2 * keyBlock * (dk + 8 + dv8 + 8) > kSharedBytes)
    keyBlock /= 2;
  const std::string t = g.qe.isBF16() ? "bf16" : "f16";
  ValueRange ins = op.getInputs();
  auto out = [&](unsigned i) { return "a" + std::to_string(ins.size() + i); };
  if (code.hostThreads == 0)
    code.hostThreads = code.numThreads;
  code.cudaHelpers += mmaHelpers(t);
  code.cudaBody = forwardBody(g, keyBlock, t, out(1), out(0));
  code.blockSize = kThreads;
  code.numThreads =
      d.batch * d.queryHeads * ((d.queryLen + kRows - 1) / kRows) * kThreads;
  return success();
}

} // namespace dlc::codegen::detail
