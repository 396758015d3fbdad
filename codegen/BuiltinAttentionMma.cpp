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
// The gradients keep the portable body's deterministic split (no
// atomics): attention_grad_query takes 64 query rows a block, recomputes P
// from the saved log-sum-exp (and, for a row whose every score is a huge
// finite fill, the row's maximum and sum first) and accumulates
// dQ += dS K over the key tiles; attention_grad_key_value takes 64 keys a
// block and accumulates dV += (P keep)^T dO and dK += dS^T Q over the
// group's query heads and query tiles. P and dS are rounded to the 16-bit
// type as the A operands; every sum is in f32 fragments, rounded once on
// store.
//
// Covered: head sizes D, Dv <= 256 (forward) and <= 128 (gradients), of
// any value (the reduction dimension is padded with zeros to a multiple
// of 16, the output columns to 8), any lengths (ragged tiles read zeros
// and mask the keys past Skv). Not covered, the portable CUDA body stays:
// f32 and f64 data, Q, K and V of different types, larger head sizes
// (docs/attention.md).
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
/// The largest head size the tensor-core gradient bodies take.
constexpr int64_t kMaxGradHeadDim = 128;

int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/// |text| with every `${NAME}` replaced by |vars|'s value for NAME.
std::string subst(const std::string &text,
                  const llvm::StringMap<std::string> &vars) {
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

/// The substitutions every body shares: sizes, padded sizes, operand names
/// and index expressions, the score's scale and mask (MASK: statements
/// that set the score `x` of (b, h, i, j) to -inf or add the additive
/// mask), the bounds of the keys row i sees (JEND; KEND for the block's
/// last row `iLast`) and the dropout factor (KEEP: a statement declaring
/// `keep` of (b, h, i, j), as the portable body's keep()).
llvm::StringMap<std::string> commonVars(const AttentionGen &g,
                                        const std::string &t) {
  const auto &d = g.d;
  llvm::StringMap<std::string> v;
  auto num = [](int64_t x) { return std::to_string(x); };
  v["T"] = t;
  v["DK"] = num(roundUp(d.headDim, 16));
  v["KS"] = num(roundUp(d.headDim, 16) + 8);
  v["D8"] = num(roundUp(d.headDim, 8));
  v["DVK"] = num(roundUp(d.valueDim, 16));
  v["VKS"] = num(roundUp(d.valueDim, 16) + 8);
  v["DV8"] = num(roundUp(d.valueDim, 8));
  v["D"] = num(d.headDim);
  v["DV"] = num(d.valueDim);
  v["NQB"] = num((d.queryLen + kRows - 1) / kRows);
  v["NKB"] = num((d.kvLen + kRows - 1) / kRows);
  v["HQ"] = num(d.queryHeads);
  v["HKV"] = num(d.kvHeads);
  v["SQ"] = num(d.queryLen);
  v["SKV"] = num(d.kvLen);
  v["GROUP"] = num(d.groupSize());
  v["THREADS"] = num(kThreads);
  {
    // The portable body's lit(scale) in float.
    std::string s;
    llvm::raw_string_ostream os(s);
    os << llvm::format("%.9g", (double)(float)g.p.scale) << "f";
    v["SCALE"] = s;
  }
  v["Q"] = g.q;
  v["K"] = g.k;
  v["V"] = g.v;
  v["QIDX"] = AttentionGen::idx(g.qs, "b", "h", "i", "c");
  v["KIDX"] = AttentionGen::idx(g.ks, "b", "hk", "j", "c");
  v["VIDX"] = AttentionGen::idx(g.vs, "b", "hk", "j", "c");
  v["OIDX"] = AttentionGen::idx(g.os, "b", "h", "i", "c");
  // The keys row i sees end at jEnd(i) (BuiltinAttention.cpp's keyEnd()),
  // and the block's last row's end bounds its key tiles; key j is seen
  // from row j - (Skv - Sq) on.
  const int64_t off = d.kvLen - d.queryLen + 1;
  if (g.p.causal) {
    v["JEND"] = "(i + " + num(off) + "LL < " + num(d.kvLen) + "LL ? i + " +
                num(off) + "LL : " + num(d.kvLen) + "LL)";
    v["KEND"] = "(iLast + " + num(off) + "LL < " + num(d.kvLen) +
                "LL ? iLast + " + num(off) + "LL : " + num(d.kvLen) + "LL)";
    v["ISTART"] = "(jFirst - " + num(off - 1) + "LL > 0 ? jFirst - " +
                  num(off - 1) + "LL : 0LL)";
  } else {
    v["JEND"] = num(d.kvLen) + "LL";
    v["KEND"] = num(d.kvLen) + "LL";
    v["ISTART"] = "0LL";
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
  std::string keep = "const float keep = 1.0f;";
  if (g.p.dropoutRatio > 0.0f) {
    llvm::raw_string_ostream os(keep);
    keep.clear();
    os << "const unsigned long long pe = (((unsigned long long)b * "
       << d.queryHeads << "ULL + (unsigned long long)h) * " << d.queryLen
       << "ULL + (unsigned long long)i) * " << d.kvLen
       << "ULL + (unsigned long long)j;\n"
       << "        const float keep = dlc_philox_uniform24("
       << (uint64_t)g.p.seed << "ull, pe, (unsigned int)" << g.step
       << "[0]) >= " << llvm::format("%.9g", (double)g.p.dropoutRatio) << "f ? "
       << llvm::format("%.9g", 1.0 / (1.0 - (double)g.p.dropoutRatio))
       << "f : 0.0f;";
  }
  v["KEEP"] = keep;
  return v;
}

/// The fragments of a 16-row operand held in registers: NAME[COLS / 16][4]
/// of rows ROWS[0..1] (below LEN), columns below LIMIT, element (ROWVAR,
/// `c`) read as 16-bit bits by BITS.
const char *kRowFragments = R"(  unsigned ${NAME}[${COLS} / 16][4];
#pragma unroll
  for (int kk = 0; kk < ${COLS} / 16; ++kk)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const long long ${ROWVAR} = ${ROWS}[r & 1];
      const int c0 = kk * 16 + 2 * t4 + 8 * (r >> 1);
      unsigned short lo = 0, hi = 0;
      if (${ROWVAR} < ${LEN}LL) {
        long long c = c0;
        if (c < ${LIMIT}) lo = ${BITS};
        c = c0 + 1;
        if (c < ${LIMIT}) hi = ${BITS};
      }
      ${NAME}[kk][r] = dlc_pair(lo, hi);
    }
)";

std::string rowFragments(llvm::StringMap<std::string> v,
                         const std::string &name, const std::string &bits,
                         const std::string &rowVar, const std::string &rows,
                         const std::string &len, const std::string &cols,
                         const std::string &limit) {
  v["NAME"] = name;
  v["BITS"] = bits;
  v["ROWVAR"] = rowVar;
  v["ROWS"] = rows;
  v["LEN"] = len;
  v["COLS"] = cols;
  v["LIMIT"] = limit;
  return subst(kRowFragments, v);
}

/// The 16-bit bits (type |t|) of element |index| of |ptr|, of element type
/// |et|: as stored when |et| is that type, else rounded to it once (dO of
/// f32 in a mixed-precision step).
std::string bitsOf(const std::string &t, Type et, const std::string &ptr,
                   const std::string &index) {
  const bool same = t == "bf16" ? et.isBF16() : et.isF16();
  std::string ref = ptr + "[" + index + "]";
  if (same)
    return "dlc_bits_" + t + "(" + ref + ")";
  return "dlc_bits_" + t + "(dlc_f32_to_" + t + "((float)" + loadExpr(et, ref) +
         "))";
}

/// The forward's cooperative CUDA body (see the file comment).
std::string forwardBody(const AttentionGen &g, int64_t keyBlock,
                        const std::string &t, const std::string &lseOut,
                        const std::string &oOut) {
  llvm::StringMap<std::string> v = commonVars(g, t);
  v["BC"] = std::to_string(keyBlock);
  v["VS"] = std::to_string(std::stoll(v["DV8"]) + 8);
  v["O"] = oOut;
  v["LSE"] = lseOut;
  v["STORE"] = storeExpr(g.oe, "x");
  return subst(
             R"(  const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const long long qb = (long long)blockIdx.x % ${NQB}LL;
  const long long h = ((long long)blockIdx.x / ${NQB}LL) % ${HQ}LL;
  const long long b = (long long)blockIdx.x / (${NQB}LL * ${HQ}LL);
  const long long hk = h / ${GROUP}LL;
  __shared__ unsigned short sK[${BC}][${KS}];
  __shared__ unsigned short sV[${BC}][${VS}];
  /* This lane's two rows: g and g + 8 of its warp's 16. */
  const long long rows[2] = {qb * 64 + warp * 16 + g, qb * 64 + warp * 16 + g + 8};
)",
             v) +
         rowFragments(v, "qf", bitsOf(t, g.qe, g.q, v["QIDX"]), "i", "rows",
                      v["SQ"], v["DK"], v["D"]) +
         subst(R"(  float o[${DV8} / 8][4];
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
          p *= keep;
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

/// Statements that fill the key tiles sK (DK columns of K) and sV (VCOLS
/// columns of V) with keys kb .. kb + BC - 1, zeros past Skv and past the
/// head sizes, between two barriers.
const char *kLoadKeyTiles =
    R"(    __syncthreads(); /* every warp is done with the previous tiles */
    for (int x = (int)threadIdx.x; x < ${BC} * ${DK}; x += ${THREADS}) {
      const int r = x / ${DK};
      const long long j = kb + r, c = x % ${DK};
      sK[r][c] = j < ${SKV}LL && c < ${D} ? dlc_bits_${T}(${K}[${KIDX}]) : (unsigned short)0;
    }
    for (int x = (int)threadIdx.x; x < ${BC} * ${VCOLS}; x += ${THREADS}) {
      const int r = x / ${VCOLS};
      const long long j = kb + r, c = x % ${VCOLS};
      sV[r][c] = j < ${SKV}LL && c < ${DV} ? dlc_bits_${T}(${V}[${VIDX}]) : (unsigned short)0;
    }
    __syncthreads();
)";

/// Statements that set s[BC / 8][4] to this warp's masked, scaled scores
/// of key tile kb (-inf where removed), A = the Q fragments qf.
const char *kScoreTile = R"(    float s[${BC} / 8][4];
#pragma unroll
    for (int n = 0; n < ${BC} / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] = 0.0f;
      const unsigned short *kr = sK[n * 8 + g];
#pragma unroll
      for (int kk = 0; kk < ${DK} / 16; ++kk) {
        const int c = kk * 16 + 2 * t4;
        const unsigned bf[2] = {dlc_pair(kr[c], kr[c + 1]),
                                dlc_pair(kr[c + 8], kr[c + 9])};
        dlc_mma_${T}(s[n], qf[kk], bf);
      }
#pragma unroll
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
      }
    }
)";

/// attention_grad_query's cooperative CUDA body: per block 64 query rows
/// (16 a warp) of one (batch, head), over key tiles of BC keys: S = Q K^T,
/// P = exp(S - rm) * rinv, dP = dO V^T, dS = P (dP keep - delta) scale,
/// dQ += dS K (dS rounded to the 16-bit type); the row's (delta, rm, rinv)
/// as the portable body writes them. A block with a row whose log-sum-exp
/// is a huge negative finite value (every score a finite fill) first
/// recomputes those rows' maximum and sum over the key tiles.
std::string gradQueryBody(const AttentionGen &g, int64_t keyBlock,
                          const std::string &t, const std::string &dqOut,
                          const std::string &statsOut) {
  llvm::StringMap<std::string> v = commonVars(g, t);
  v["BC"] = std::to_string(keyBlock);
  v["VCOLS"] = v["DVK"];
  v["O"] = "a3";
  v["LSE"] = "a4";
  v["DO"] = "a5";
  v["DQ"] = dqOut;
  v["STATS"] = statsOut;
  v["QSTORE"] = storeExpr(g.qe, "x");
  v["OLOAD"] = loadExpr(g.oe, "a3[" + v["OIDX"] + "]");
  v["DOLOAD"] = loadExpr(g.doe, "a5[" + v["OIDX"] + "]");
  v["DOBITS"] = bitsOf(t, g.doe, "a5", v["OIDX"]);
  std::string loadTiles = subst(kLoadKeyTiles, v);
  std::string scores = subst(kScoreTile, v);
  std::string out = subst(
      R"(  const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const long long qb = (long long)blockIdx.x % ${NQB}LL;
  const long long h = ((long long)blockIdx.x / ${NQB}LL) % ${HQ}LL;
  const long long b = (long long)blockIdx.x / (${NQB}LL * ${HQ}LL);
  const long long hk = h / ${GROUP}LL;
  __shared__ unsigned short sK[${BC}][${KS}];
  __shared__ unsigned short sV[${BC}][${VKS}];
  const long long rows[2] = {qb * 64 + warp * 16 + g, qb * 64 + warp * 16 + g + 8};
)",
      v);
  out += rowFragments(v, "qf", bitsOf(t, g.qe, g.q, v["QIDX"]), "i", "rows",
                      v["SQ"], v["DK"], v["D"]);
  out += rowFragments(v, "dof", v["DOBITS"], "i", "rows", v["SQ"], v["DVK"],
                      v["DV"]);
  out += subst(
      R"(  /* delta = rowsum(dO o O), the quad's lanes a column in 4 each. */
  float delta[2], L[2], rm[2], rinv[2];
  int fallback = 0;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const long long i = rows[r];
    delta[r] = 0.0f;
    if (i < ${SQ}LL)
      for (long long c = t4; c < ${DV}; c += 4)
        delta[r] += (float)${DOLOAD} * (float)${OLOAD};
    delta[r] += __shfl_xor_sync(0xffffffffu, delta[r], 1);
    delta[r] += __shfl_xor_sync(0xffffffffu, delta[r], 2);
    L[r] = i < ${SQ}LL ? ${LSE}[(b * ${HQ}LL + h) * ${SQ}LL + i] : -DLC_INF_F;
    rm[r] = L[r];
    rinv[r] = 1.0f;
    fallback |= L[r] != -DLC_INF_F && L[r] < -1e30f;
  }
  const long long iLast = qb * 64 + 63 < ${SQ}LL ? qb * 64 + 63 : ${SQ}LL - 1;
  const long long kEnd = ${KEND};
  if (__syncthreads_or(fallback)) {
    /* lse = m + log(l) rounded to m: the maximum and sum again. */
    float fm[2] = {-DLC_INF_F, -DLC_INF_F}, fl[2] = {0.0f, 0.0f};
    for (long long kb = 0; kb < kEnd; kb += ${BC}) {
)",
      v);
  out += loadTiles + scores;
  out += subst(R"(#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = fm[r];
#pragma unroll
        for (int n = 0; n < ${BC} / 8; ++n)
          mx = fmaxf(mx, fmaxf(s[n][2 * r], s[n][2 * r + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        if (mx == -DLC_INF_F)
          continue;
        fl[r] *= expf(fm[r] - mx);
        fm[r] = mx;
#pragma unroll
        for (int n = 0; n < ${BC} / 8; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            if (s[n][2 * r + e] != -DLC_INF_F)
              fl[r] += expf(s[n][2 * r + e] - mx);
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      fl[r] += __shfl_xor_sync(0xffffffffu, fl[r], 1);
      fl[r] += __shfl_xor_sync(0xffffffffu, fl[r], 2);
      if (L[r] != -DLC_INF_F && L[r] < -1e30f) {
        rm[r] = fm[r];
        rinv[r] = 1.0f / fl[r];
      }
    }
  }
  float dq[${D8} / 8][4];
#pragma unroll
  for (int n = 0; n < ${D8} / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dq[n][e] = 0.0f;
  for (long long kb = 0; kb < kEnd; kb += ${BC}) {
)",
               v);
  out += loadTiles + scores;
  out += subst(R"(    /* dP = dO V^T: B[k][n] = V[key n][column k]. */
    float dp[${BC} / 8][4];
#pragma unroll
    for (int n = 0; n < ${BC} / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) dp[n][e] = 0.0f;
      const unsigned short *vr = sV[n * 8 + g];
#pragma unroll
      for (int kk = 0; kk < ${DVK} / 16; ++kk) {
        const int c = kk * 16 + 2 * t4;
        const unsigned bf[2] = {dlc_pair(vr[c], vr[c + 1]),
                                dlc_pair(vr[c + 8], vr[c + 9])};
        dlc_mma_${T}(dp[n], dof[kk], bf);
      }
    }
#pragma unroll
    for (int n = 0; n < ${BC} / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = e >> 1;
        const long long i = rows[r];
        const long long j = kb + n * 8 + 2 * t4 + (e & 1);
        (void)i;
        (void)j;
        const float p = s[n][e] == -DLC_INF_F || rm[r] == -DLC_INF_F
                            ? 0.0f
                            : expf(s[n][e] - rm[r]) * rinv[r];
        ${KEEP}
        s[n][e] = p * (dp[n][e] * keep - delta[r]) * ${SCALE};
      }
    /* dQ += dS K: dS's tiles are the A fragments; B[k][n] = K[key k][n]. */
#pragma unroll
    for (int ks = 0; ks < ${BC} / 16; ++ks) {
      const unsigned pa[4] = {dlc_pack_${T}(s[2 * ks][0], s[2 * ks][1]),
                              dlc_pack_${T}(s[2 * ks][2], s[2 * ks][3]),
                              dlc_pack_${T}(s[2 * ks + 1][0], s[2 * ks + 1][1]),
                              dlc_pack_${T}(s[2 * ks + 1][2], s[2 * ks + 1][3])};
      const int k0 = ks * 16 + 2 * t4;
#pragma unroll
      for (int n = 0; n < ${D8} / 8; ++n) {
        const int c = n * 8 + g;
        const unsigned kb2[2] = {dlc_pair(sK[k0][c], sK[k0 + 1][c]),
                                 dlc_pair(sK[k0 + 8][c], sK[k0 + 9][c])};
        dlc_mma_${T}(dq[n], pa, kb2);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const long long i = rows[r];
    if (i >= ${SQ}LL)
      continue;
    const long long row = (b * ${HQ}LL + h) * ${SQ}LL + i;
    if (t4 == 0) {
      ${STATS}[3 * row] = delta[r];
      ${STATS}[3 * row + 1] = rm[r];
      ${STATS}[3 * row + 2] = rinv[r];
    }
#pragma unroll
    for (int n = 0; n < ${D8} / 8; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const long long c = n * 8 + 2 * t4 + e;
        const float x = dq[n][2 * r + e];
        if (c < ${D}) ${DQ}[${QIDX}] = ${QSTORE};
      }
  }
)",
               v);
  return out;
}

/// attention_grad_key_value's cooperative CUDA body: per block 64 keys (16
/// a warp) of one (batch, K/V head), with the keys' K and V fragments in
/// registers; over the query heads of the group and query tiles of BR rows
/// staged in shared memory with their (delta, rm, rinv): S^T = K Q^T,
/// P^T = exp(S^T - rm) * rinv, dP^T = V dO^T, dV += (P keep)^T dO,
/// dK += dS^T Q (P keep and dS^T rounded to the 16-bit type), in a fixed
/// order.
std::string gradKeyValueBody(const AttentionGen &g, int64_t queryBlock,
                             const std::string &t, const std::string &dkOut,
                             const std::string &dvOut) {
  llvm::StringMap<std::string> v = commonVars(g, t);
  v["BR"] = std::to_string(queryBlock);
  v["STATS"] = "a4";
  v["DO"] = "a5";
  v["DKOUT"] = dkOut;
  v["DVOUT"] = dvOut;
  v["KSTORE"] = storeExpr(g.ke, "x");
  v["VSTORE"] = storeExpr(g.ve, "x");
  v["DOBITS"] = bitsOf(t, g.doe, "a5", v["OIDX"]);
  std::string out = subst(
      R"(  const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const long long kbk = (long long)blockIdx.x % ${NKB}LL;
  const long long hk = ((long long)blockIdx.x / ${NKB}LL) % ${HKV}LL;
  const long long b = (long long)blockIdx.x / (${NKB}LL * ${HKV}LL);
  __shared__ unsigned short sQ[${BR}][${KS}];
  __shared__ unsigned short sO[${BR}][${VKS}];
  __shared__ float sStat[${BR}][3];
  const long long keys[2] = {kbk * 64 + warp * 16 + g, kbk * 64 + warp * 16 + g + 8};
)",
      v);
  out += rowFragments(v, "kf", bitsOf(t, g.ke, g.k, v["KIDX"]), "j", "keys",
                      v["SKV"], v["DK"], v["D"]);
  out += rowFragments(v, "vf", bitsOf(t, g.ve, g.v, v["VIDX"]), "j", "keys",
                      v["SKV"], v["DVK"], v["DV"]);
  out += subst(R"(  float dk[${D8} / 8][4], dv[${DV8} / 8][4];
#pragma unroll
  for (int n = 0; n < ${D8} / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk[n][e] = 0.0f;
#pragma unroll
  for (int n = 0; n < ${DV8} / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dv[n][e] = 0.0f;
  const long long jFirst = kbk * 64;
  const long long iStart = ${ISTART};
  for (long long h = hk * ${GROUP}LL; h < (hk + 1) * ${GROUP}LL; ++h)
  for (long long ib = iStart; ib < ${SQ}LL; ib += ${BR}) {
    __syncthreads(); /* every warp is done with the previous tiles */
    for (int x = (int)threadIdx.x; x < ${BR} * ${DK}; x += ${THREADS}) {
      const int r = x / ${DK};
      const long long i = ib + r, c = x % ${DK};
      sQ[r][c] = i < ${SQ}LL && c < ${D} ? dlc_bits_${T}(${Q}[${QIDX}]) : (unsigned short)0;
    }
    for (int x = (int)threadIdx.x; x < ${BR} * ${DVK}; x += ${THREADS}) {
      const int r = x / ${DVK};
      const long long i = ib + r, c = x % ${DVK};
      sO[r][c] = i < ${SQ}LL && c < ${DV} ? ${DOBITS} : (unsigned short)0;
    }
    for (int r = (int)threadIdx.x; r < ${BR}; r += ${THREADS}) {
      const long long i = ib + r, row = (b * ${HQ}LL + h) * ${SQ}LL + i;
      sStat[r][0] = i < ${SQ}LL ? ${STATS}[3 * row] : 0.0f;
      sStat[r][1] = i < ${SQ}LL ? ${STATS}[3 * row + 1] : -DLC_INF_F;
      sStat[r][2] = i < ${SQ}LL ? ${STATS}[3 * row + 2] : 0.0f;
    }
    __syncthreads();
    /* S^T = K Q^T and dP^T = V dO^T: B[k][n] = Q (dO)[query n][column k]. */
    float st[${BR} / 8][4], dpt[${BR} / 8][4];
#pragma unroll
    for (int n = 0; n < ${BR} / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        st[n][e] = 0.0f;
        dpt[n][e] = 0.0f;
      }
      const unsigned short *qr = sQ[n * 8 + g], *dr = sO[n * 8 + g];
#pragma unroll
      for (int kk = 0; kk < ${DK} / 16; ++kk) {
        const int c = kk * 16 + 2 * t4;
        const unsigned bf[2] = {dlc_pair(qr[c], qr[c + 1]),
                                dlc_pair(qr[c + 8], qr[c + 9])};
        dlc_mma_${T}(st[n], kf[kk], bf);
      }
#pragma unroll
      for (int kk = 0; kk < ${DVK} / 16; ++kk) {
        const int c = kk * 16 + 2 * t4;
        const unsigned bf[2] = {dlc_pair(dr[c], dr[c + 1]),
                                dlc_pair(dr[c + 8], dr[c + 9])};
        dlc_mma_${T}(dpt[n], vf[kk], bf);
      }
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const long long j = keys[e >> 1];
        const int qi = n * 8 + 2 * t4 + (e & 1);
        const long long i = ib + qi;
        float x = st[n][e] * ${SCALE};
        if (i >= ${SQ}LL || j >= ${JEND}) {
          x = -DLC_INF_F;
        } else {
          ${MASK}
        }
        const float rm = sStat[qi][1];
        const float p = x == -DLC_INF_F || rm == -DLC_INF_F
                            ? 0.0f
                            : expf(x - rm) * sStat[qi][2];
        ${KEEP}
        st[n][e] = p * keep;
        dpt[n][e] = p * (dpt[n][e] * keep - sStat[qi][0]) * ${SCALE};
      }
    }
    /* dV += (P keep)^T dO and dK += dS^T Q: the tiles are A fragments;
       B[k][n] = dO (Q)[query k][column n]. */
#pragma unroll
    for (int ks = 0; ks < ${BR} / 16; ++ks) {
      const unsigned pa[4] = {dlc_pack_${T}(st[2 * ks][0], st[2 * ks][1]),
                              dlc_pack_${T}(st[2 * ks][2], st[2 * ks][3]),
                              dlc_pack_${T}(st[2 * ks + 1][0], st[2 * ks + 1][1]),
                              dlc_pack_${T}(st[2 * ks + 1][2], st[2 * ks + 1][3])};
      const unsigned da[4] = {dlc_pack_${T}(dpt[2 * ks][0], dpt[2 * ks][1]),
                              dlc_pack_${T}(dpt[2 * ks][2], dpt[2 * ks][3]),
                              dlc_pack_${T}(dpt[2 * ks + 1][0], dpt[2 * ks + 1][1]),
                              dlc_pack_${T}(dpt[2 * ks + 1][2], dpt[2 * ks + 1][3])};
      const int k0 = ks * 16 + 2 * t4;
#pragma unroll
      for (int n = 0; n < ${DV8} / 8; ++n) {
        const int c = n * 8 + g;
        const unsigned bf[2] = {dlc_pair(sO[k0][c], sO[k0 + 1][c]),
                                dlc_pair(sO[k0 + 8][c], sO[k0 + 9][c])};
        dlc_mma_${T}(dv[n], pa, bf);
      }
#pragma unroll
      for (int n = 0; n < ${D8} / 8; ++n) {
        const int c = n * 8 + g;
        const unsigned bf[2] = {dlc_pair(sQ[k0][c], sQ[k0 + 1][c]),
                                dlc_pair(sQ[k0 + 8][c], sQ[k0 + 9][c])};
        dlc_mma_${T}(dk[n], da, bf);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const long long j = keys[r];
    if (j >= ${SKV}LL)
      continue;
#pragma unroll
    for (int n = 0; n < ${D8} / 8; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const long long c = n * 8 + 2 * t4 + e;
        const float x = dk[n][2 * r + e];
        if (c < ${D}) ${DKOUT}[${KIDX}] = ${KSTORE};
      }
#pragma unroll
    for (int n = 0; n < ${DV8} / 8; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const long long c = n * 8 + 2 * t4 + e;
        const float x = dv[n][2 * r + e];
        if (c < ${DV}) ${DVOUT}[${VIDX}] = ${VSTORE};
      }
  }
)",
               v);
  return out;
}

} // namespace

LogicalResult addAttentionTensorCoreBody(exec::BuiltinKernelOp op,
                                         const AttentionGen &g,
                                         KernelCode &code) {
  // Not covered (the portable body stays): f32 and f64 data, Q, K and V
  // of different types (dO may be any float type: the gradients round it
  // to Q's type for the tensor cores), head sizes past 256
  // (forward) or 128 (gradients: the key/value kernel holds K, V, dK and
  // dV of its 16 keys a warp in registers).
  StringRef name = op.getTemplateName();
  const bool forward = name == "attention",
             gradQuery = name == "attention_grad_query";
  if (!(g.qe.isBF16() || g.qe.isF16()) || g.ke != g.qe || g.ve != g.qe)
    return success();
  const auto &d = g.d;
  const int64_t maxDim = forward ? kMaxHeadDim : kMaxGradHeadDim;
  if (d.headDim > maxDim || d.valueDim > maxDim || d.batch <= 0 ||
      d.queryLen <= 0 || d.kvLen <= 0 || d.queryHeads <= 0 || d.kvHeads <= 0)
    return success();
  const std::string t = g.qe.isBF16() ? "bf16" : "f16";
  ValueRange ins = op.getInputs();
  auto out = [&](unsigned i) { return "a" + std::to_string(ins.size() + i); };
  if (code.hostThreads == 0)
    code.hostThreads = code.numThreads;
  code.cudaHelpers += mmaHelpers(t);
  code.blockSize = kThreads;
  const int64_t queryBlocks = (d.queryLen + kRows - 1) / kRows;
  const bool small = d.headDim <= 64 && d.valueDim <= 64;
  if (forward) {
    // The largest key tile (64, 32 or 16 keys) whose K and V fit.
    const int64_t dk = roundUp(d.headDim, 16), dv8 = roundUp(d.valueDim, 8);
    int64_t keyBlock = 64;
    while (keyBlock > 16 && 2 * keyBlock * (dk + 8 + dv8 + 8) > kSharedBytes)
      keyBlock /= 2;
    code.cudaBody = forwardBody(g, keyBlock, t, out(1), out(0));
    code.numThreads = d.batch * d.queryHeads * queryBlocks * kThreads;
  } else if (gradQuery) {
    // Key tiles of 64 keys, 32 past head size 64 (fewer registers for the
    // score and dP tiles beside dQ's accumulators).
    code.cudaBody = gradQueryBody(g, small ? 64 : 32, t, out(0), out(1));
    code.numThreads = d.batch * d.queryHeads * queryBlocks * kThreads;
  } else {
    code.cudaBody = gradKeyValueBody(g, small ? 64 : 32, t, out(0), out(1));
    code.numThreads =
        d.batch * d.kvHeads * ((d.kvLen + kRows - 1) / kRows) * kThreads;
  }
  return success();
}

} // namespace dlc::codegen::detail
