//===- BuiltinAttention.cpp - the fused attention templates ---------------===//
//
// attention, attention_grad_query and attention_grad_key_value
// (BuiltinFamily::Attention): FlashAttention's algorithm (Dao et al. 2022;
// FlashAttention-2, Dao 2023) with one thread per query row (forward, dQ)
// or key row (dK, dV). The forward streams the keys once with the online
// softmax (Milakov & Gimelshein 2018: a running maximum, the running sum
// and the output accumulator rescaled when the maximum grows) and writes
// O and the row's log-sum-exp; the backward recomputes each probability
// from the log-sum-exp, P = exp(S - lse). Memory is O(rows x head size):
// no [Sq, Skv] tile is stored. The gradient kernels sum in a fixed order
// and write every element from one thread (no atomics): deterministic.
//
// CUDA runs one row per thread, in f32 or f64 registers for every storage
// type (f16 / bf16 operands are widened as read and results rounded once).
// Where Q, K and V are all bf16 or all f16, CUDA runs tensor-core tiles
// instead (BuiltinAttentionMma.cpp).
// The host runs the same algorithm on tiles of 16 rows of one (batch,
// head), parallel across tiles (hostTiledBody): a tile reads each K / V
// row (or, for dK and dV, each Q / dO row) once for its 16 rows.
//
//===----------------------------------------------------------------------===//
#include "codegen/BuiltinAttention.h"
#include "codegen/BuiltinKernels.h"

#include "runtime/schema/Semantics/Attention.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

using namespace mlir;

namespace dlc::codegen::detail {

/// runtime/schema/Semantics/Philox.h (dlc_philox_uniform24), as the dropout
/// template uses it.
static const char *kPhiloxSource =
#include "PhiloxSource.inc"
    ;

namespace {

/// The gradient kernels sum their terms (over keys for dQ, over query rows
/// for dK and dV) in blocks of this many, then add the blocks: the
/// rounding error of an n-term f32 sum grows about as n / 64 + 64 instead
/// of n (Higham, "Accuracy and Stability of Numerical Algorithms", 4.2), so
/// long sequences keep the accuracy of a GEMM's blocked sums.
constexpr int kSumBlock = 64;

} // namespace

/// The (b, h, s, d) strides of a mask of shape |shape| broadcast to
/// [B, Hq, Sq, Skv]: 0 along broadcast dimensions.
std::array<int64_t, 4> maskStrides(ArrayRef<int64_t> shape) {
  std::array<int64_t, 4> st = {0, 0, 0, 0};
  int64_t stride = 1;
  for (int64_t i = (int64_t)shape.size() - 1; i >= 0; --i) {
    int64_t dim = 4 - ((int64_t)shape.size() - i);
    st[dim] = shape[i] == 1 ? 0 : stride;
    stride *= shape[i];
  }
  return st;
}

/// Reads |op|'s operands into |g|: sizes, element types, strides and the
/// names of the optional mask and step.
LogicalResult initGen(exec::BuiltinKernelOp op, AttentionGen &g) {
  const exec::AttentionParams &params = g.p;
  bool forward = op.getTemplateName() == "attention";
  ValueRange ins = op.getInputs();
  auto shape = [](Value x) { return cast<MemRefType>(x.getType()).getShape(); };
  std::string error;
  if (!semantics::attentionDims(shape(ins[0]), shape(ins[1]), shape(ins[2]),
                                params.seqFirst[0], params.seqFirst[1],
                                params.seqFirst[2], &g.d, &error))
    return op.emitOpError() << error;
  for (Value x : ins.take_front(3))
    if (failed(floatElementType(op, x)))
      return failure();
  auto elemOf = [](Value x) {
    return cast<MemRefType>(x.getType()).getElementType();
  };
  g.qe = elemOf(ins[0]);
  g.ke = elemOf(ins[1]);
  g.ve = elemOf(ins[2]);
  g.oe = g.qe;
  if (!forward)
    g.doe = elemOf(ins[5]);
  // f64 data (all or none, the verifier's rule) computes in double.
  g.t = g.qe.isF64() ? "double" : "float";
  bool f32 = g.t == "float";
  g.exp = f32 ? "expf" : "exp";
  g.log = f32 ? "logf" : "log";
  g.inf = f32 ? "DLC_INF_F" : "DLC_INF_D";
  const auto &d = g.d;
  g.qs = semantics::attentionStrides(shape(ins[0]), params.seqFirst[0]);
  g.ks = semantics::attentionStrides(shape(ins[1]), params.seqFirst[1]);
  g.vs = semantics::attentionStrides(shape(ins[2]), params.seqFirst[2]);
  int64_t oShape[] = {d.batch, d.queryHeads, d.queryLen, d.valueDim};
  int64_t oSeqShape[] = {d.batch, d.queryLen, d.queryHeads, d.valueDim};
  g.os = params.seqFirst[3] ? semantics::attentionStrides(oSeqShape, true)
                            : semantics::attentionStrides(oShape, false);
  g.q = "a0";
  g.k = "a1";
  g.v = "a2";
  unsigned base = forward ? 3 : 6, next = base;
  if (params.hasMask) {
    Value m = ins[next];
    g.mask = "a" + std::to_string(next++);
    g.ms = maskStrides(shape(m));
    g.maskElem = cast<MemRefType>(m.getType()).getElementType();
  }
  if (params.dropoutRatio > 0.0f)
    g.step = "a" + std::to_string(next++);
  return success();
}

static std::string hostTiledBody(const AttentionGen &g, StringRef name,
                                  unsigned numInputs);
static int64_t hostTiles(const AttentionGen &g, StringRef name);

FailureOr<KernelCode> buildAttention(exec::BuiltinKernelOp op,
                                     const exec::AttentionParams &params) {
  StringRef name = op.getTemplateName();
  bool forward = name == "attention";
  bool gradQuery = name == "attention_grad_query";
  ValueRange ins = op.getInputs();
  AttentionGen g{{}, params};
  if (failed(initGen(op, g)))
    return failure();
  const auto &d = g.d;
  auto out = [&](unsigned i) { return "a" + std::to_string(ins.size() + i); };
  auto store = [&](Type et, const std::string &v) { return storeExpr(et, v); };
  const std::string D = std::to_string(d.headDim),
                    DV = std::to_string(d.valueDim), T = g.t;

  KernelCode code;
  std::string body;
  llvm::raw_string_ostream os(body);
  if (forward) {
    // O = Σ_j keep_j exp(s_j - m) V_j / Σ_j exp(s_j - m), m the running max.
    os << g.queryRow() << g.loadQuery("  ") << "  " << T << " acc[" << DV
       << "];\n"
       << "  for (int c = 0; c < " << DV << "; ++c) acc[c] = 0;\n"
       << "  " << T << " m = -" << g.inf << ", l = 0;\n"
       << "  const long long jEnd = " << g.keyEnd() << ";\n"
       << "  for (long long j = 0; j < jEnd; ++j) {\n"
       << g.score("    ")
       << "    if (s > m) {\n"
       << "      const " << T << " r = " << g.exp << "(m - s);\n"
       << "      l *= r;\n"
       << "      for (int c = 0; c < " << DV << "; ++c) acc[c] *= r;\n"
       << "      m = s;\n"
       << "    }\n"
       << "    const " << T << " pj = " << g.exp << "(s - m);\n"
       << "    l += pj;\n"
       << g.keep("    ") << "    const " << T << " pk = pj * keep;\n"
       << "    for (int c = 0; c < " << DV << "; ++c) acc[c] += pk * "
       << g.load(g.v, g.ve, AttentionGen::idx(g.vs, "b", "hk", "j", "c")) << ";\n"
       << "  }\n"
       << "  const " << T << " inv = l > 0 ? (" << T << ")1 / l : (" << T
       << ")0;\n"
       << "  for (int c = 0; c < " << DV << "; ++c) " << out(0) << "["
       << AttentionGen::idx(g.os, "b", "h", "i", "c")
       << "] = " << store(g.oe, "acc[c] * inv") << ";\n"
       << "  " << out(1) << "[tid] = l > 0 ? (float)(m + " << g.log
       << "(l)) : -DLC_INF_F;\n";
    code.numThreads = d.batch * d.queryHeads * d.queryLen;
    code.hostGrain = d.kvLen * (d.headDim + d.valueDim);
  } else if (gradQuery) {
    // delta = rowsum(dO ∘ O); dQ = Σ_j P_j (keep_j dO·V_j - delta) K_j scale;
    // the row's (delta, rm, rinv) go to the key/value kernel.
    std::string o = "a3", lse = "a4", dO = "a5";
    os << g.queryRow() << "  " << T << " dov[" << DV << "];\n"
       << "  " << T << " delta = 0;\n"
       << "  for (int c = 0; c < " << DV << "; ++c) {\n"
       << "    dov[c] = "
       << g.load(dO, g.doe, AttentionGen::idx(g.os, "b", "h", "i", "c")) << ";\n"
       << "    delta += dov[c] * "
       << g.load(o, g.oe, AttentionGen::idx(g.os, "b", "h", "i", "c")) << ";\n"
       << "  }\n"
       << "  delta = (" << T << ")(float)delta;\n"
       << "  " << T << " dq[" << D << "];\n"
       << "  for (int c = 0; c < " << D << "; ++c) dq[c] = 0;\n"
       << "  const " << T << " L = " << lse << "[tid];\n"
       // P = exp(S - rm) * rinv: rm = lse and rinv = 1, except on a row
       // whose every score is a huge finite fill (an additive finfo.min
       // mask over the whole row), where lse = m + log(l) rounds to m and
       // the sum l is recomputed.
       << "  " << T << " rm = L, rinv = 1;\n"
       << "  if (L != -" << g.inf << ") {\n"
       << g.loadQuery("    ") << "    const long long jEnd = " << g.keyEnd()
       << ";\n"
       << "    if (L < (" << T << ")-1e30) {\n"
       << "      " << T << " rl = 0;\n"
       << "      rm = -" << g.inf << ";\n"
       << "      for (long long j = 0; j < jEnd; ++j) {\n"
       << g.score("        ")
       << "        if (s > rm) { rl *= " << g.exp << "(rm - s); rm = s; }\n"
       << "        rl += " << g.exp << "(s - rm);\n"
       << "      }\n"
       << "      rm = (" << T << ")(float)rm;\n"
       << "      rinv = (" << T << ")(float)((" << T << ")1 / rl);\n"
       << "    }\n"
       << "    " << T << " dqb[" << D << "];\n"
       << "    for (long long jb = 0; jb < jEnd; jb += " << kSumBlock << ") {\n"
       << "    for (int c = 0; c < " << D << "; ++c) dqb[c] = 0;\n"
       << "    const long long jb1 = jb + " << kSumBlock << " < jEnd ? jb + "
       << kSumBlock << " : jEnd;\n"
       << "    for (long long j = jb; j < jb1; ++j) {\n"
       << g.score("      ") << "      const " << T << " pj = " << g.exp
       << "(s - rm) * rinv;\n"
       << "      " << T << " dp = 0;\n"
       << "      for (int c = 0; c < " << DV << "; ++c) dp += dov[c] * "
       << g.load(g.v, g.ve, AttentionGen::idx(g.vs, "b", "hk", "j", "c")) << ";\n"
       << g.keep("      ") << "      const " << T
       << " ds = pj * (dp * keep - delta) * " << g.lit(params.scale) << ";\n"
       << "      for (int c = 0; c < " << D << "; ++c) dqb[c] += ds * "
       << g.load(g.k, g.ke, AttentionGen::idx(g.ks, "b", "hk", "j", "c")) << ";\n"
       << "    }\n"
       << "    for (int c = 0; c < " << D << "; ++c) dq[c] += dqb[c];\n"
       << "    }\n"
       << "  }\n"
       << "  " << out(1) << "[3 * tid] = (float)delta;\n"
       << "  " << out(1) << "[3 * tid + 1] = (float)rm;\n"
       << "  " << out(1) << "[3 * tid + 2] = (float)rinv;\n"
       << "  for (int c = 0; c < " << D << "; ++c) " << out(0) << "["
       << AttentionGen::idx(g.qs, "b", "h", "i", "c")
       << "] = " << store(g.qe, "dq[c]") << ";\n";
    code.numThreads = d.batch * d.queryHeads * d.queryLen;
    code.hostGrain = d.kvLen * (d.headDim + d.valueDim);
  } else {
    // dV_j = Σ_{h,i} keep P dO_i; dK_j = Σ_{h,i} P (keep dO_i·V_j - delta_i)
    // Q_i scale, over the query heads of K/V head hk, in a fixed order.
    std::string stats = "a4", dO = "a5";
    int64_t off = d.kvLen - d.queryLen;
    os << "  const long long j = tid % " << d.kvLen << "LL;\n"
       << "  const long long hk = (tid / " << d.kvLen << "LL) % " << d.kvHeads
       << "LL;\n"
       << "  const long long b = tid / " << d.kvLen * d.kvHeads << "LL;\n"
       << "  " << T << " dk[" << D << "], dv[" << DV << "], vj[" << DV
       << "];\n"
       << "  for (int c = 0; c < " << D << "; ++c) dk[c] = 0;\n"
       << "  for (int c = 0; c < " << DV << "; ++c) { dv[c] = 0; vj[c] = "
       << g.load(g.v, g.ve, AttentionGen::idx(g.vs, "b", "hk", "j", "c")) << "; }\n"
       << "  const long long iStart = "
       << (params.causal ? "(j - " + std::to_string(off) + "LL > 0 ? j - " +
                               std::to_string(off) + "LL : 0LL)"
                         : std::string("0LL"))
       << ";\n"
       << "  " << T << " dkb[" << D << "], dvb[" << DV << "];\n"
       << "  for (long long h = hk * " << d.groupSize() << "LL; h < (hk + 1) * "
       << d.groupSize() << "LL; ++h)\n"
       << "  for (long long ib = iStart; ib < " << d.queryLen << "LL; ib += "
       << kSumBlock << ") {\n"
       << "  for (int c = 0; c < " << D << "; ++c) dkb[c] = 0;\n"
       << "  for (int c = 0; c < " << DV << "; ++c) dvb[c] = 0;\n"
       << "  const long long ib1 = ib + " << kSumBlock << " < " << d.queryLen
       << "LL ? ib + " << kSumBlock << " : " << d.queryLen << "LL;\n"
       << "  for (long long i = ib; i < ib1; ++i) {\n"
       << "    const long long row = (b * " << d.queryHeads << "LL + h) * "
       << d.queryLen << "LL + i;\n"
       << "    const " << T << " rm = " << stats << "[3 * row + 1];\n"
       << "    if (rm == -" << g.inf << ") continue;\n"
       << g.loadQuery("    ") << g.score("    ") << "    const " << T
       << " pj = " << g.exp << "(s - rm) * (" << T << ")" << stats
       << "[3 * row + 2];\n"
       << g.keep("    ") << "    " << T << " dp = 0;\n"
       << "    for (int c = 0; c < " << DV << "; ++c) {\n"
       << "      const " << T << " doc = "
       << g.load(dO, g.doe, AttentionGen::idx(g.os, "b", "h", "i", "c")) << ";\n"
       << "      dp += doc * vj[c];\n"
       << "      dvb[c] += pj * keep * doc;\n"
       << "    }\n"
       << "    const " << T << " ds = pj * (dp * keep - (" << T << ")" << stats
       << "[3 * row]) * " << g.lit(params.scale) << ";\n"
       << "    for (int c = 0; c < " << D << "; ++c) dkb[c] += ds * qv[c];\n"
       << "  }\n"
       << "  for (int c = 0; c < " << D << "; ++c) dk[c] += dkb[c];\n"
       << "  for (int c = 0; c < " << DV << "; ++c) dv[c] += dvb[c];\n"
       << "  }\n"
       << "  for (int c = 0; c < " << D << "; ++c) " << out(0) << "["
       << AttentionGen::idx(g.ks, "b", "hk", "j", "c")
       << "] = " << store(g.ke, "dk[c]") << ";\n"
       << "  for (int c = 0; c < " << DV << "; ++c) " << out(1) << "["
       << AttentionGen::idx(g.vs, "b", "hk", "j", "c")
       << "] = " << store(g.ve, "dv[c]") << ";\n";
    code.numThreads = d.batch * d.kvHeads * d.kvLen;
    code.hostGrain = d.groupSize() * d.queryLen * (d.headDim + d.valueDim);
  }
  // CUDA runs the per-row body, one thread a row; the host runs tiles of
  // rows (hostTiledBody), so that K and V rows are read once per tile.
  int64_t rows = code.numThreads;
  code.cudaBody = "  if (tid < " + std::to_string(rows) + "LL) {\n" + body +
                  "  }\n";
  code.blockSize = 128;
  code.numThreads = (rows + code.blockSize - 1) / code.blockSize * code.blockSize;
  code.hostThreads = hostTiles(g, name);
  code.hostGrain = code.hostGrain * rows / code.hostThreads;
  code.body = hostTiledBody(g, name, ins.size());
  if (params.dropoutRatio > 0.0f)
    code.helpers = kPhiloxSource;
  // Q, K and V all bf16 or all f16: tensor-core tiles on CUDA.
  if (failed(addAttentionTensorCoreBody(op, g, code)))
    return failure();
  return code;
}


/// Query rows (forward, dQ) or key rows (dK, dV) one host iteration takes:
/// the tile's K and V rows (or Q and dO rows) are read once for all of them
/// and stay in the L1 cache, where the per-row body reads them once a row.
constexpr int64_t kHostTile = 16;

static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Host iterations of template |name|: tiles of kHostTile rows per (batch,
/// head).
static int64_t hostTiles(const AttentionGen &g, StringRef name) {
  const auto &d = g.d;
  if (name == "attention_grad_key_value")
    return d.batch * d.kvHeads * ceilDiv(d.kvLen, kHostTile);
  return d.batch * d.queryHeads * ceilDiv(d.queryLen, kHostTile);
}

/// Statements that set `sv` to the masked, scaled score of query (b, h, i)
/// — its row in `qrow[c]` — and key j of K/V head hk — its elements
/// `krow(c)` — or to -inf where the mask removes the key (the per-row
/// score() in a form that does not leave the loop).
static std::string tileScore(const AttentionGen &g, const std::string &in,
                             const std::string &qrow,
                             const std::string &kElem) {
  std::string out;
  llvm::raw_string_ostream os(out);
  const std::string &t = g.t;
  os << in << t << " sv = 0;\n"
     << in << "for (int c = 0; c < " << g.d.headDim << "; ++c) sv += " << qrow
     << "[c] * " << kElem << ";\n"
     << in << "sv = sv * " << g.lit(g.p.scale) << ";\n";
  if (g.p.hasMask) {
    std::string m = g.mask + "[" + AttentionGen::idx(g.ms, "b", "h", "i", "j") + "]";
    if (g.maskElem.isInteger(1))
      os << in << "if (!" << m << ") sv = -" << g.inf << ";\n";
    else
      os << in << "sv += (" << t << ")" << loadExpr(g.maskElem, m) << ";\n";
  }
  return out;
}

namespace {
/// The host bodies on tiles of kHostTile rows (hostTiledBody): their sizes
/// as C literals and the pieces they share.
struct HostTile {
  const AttentionGen &g;
  unsigned numInputs; ///< operands before the outputs
  std::string T, D, DV, TILE, KB;

  HostTile(const AttentionGen &g, unsigned numInputs)
      : g(g), numInputs(numInputs), T(g.t), D(std::to_string(g.d.headDim)),
        DV(std::to_string(g.d.valueDim)), TILE(std::to_string(kHostTile)),
        KB(std::to_string(kSumBlock)) {}
  /// The name of output |i|.
  std::string out(unsigned i) const {
    return "a" + std::to_string(numInputs + i);
  }
  /// The key past the last one query |i| sees (causal), else Skv.
  std::string rowEnd(const std::string &i) const {
    const auto &d = g.d;
    if (!g.p.causal)
      return std::to_string(d.kvLen) + "LL";
    std::string off = std::to_string(d.kvLen - d.queryLen + 1);
    return "(" + i + " + " + off + "LL < " + std::to_string(d.kvLen) +
           "LL ? " + i + " + " + off + "LL : " + std::to_string(d.kvLen) +
           "LL)";
  }
  /// Decodes the query tile of `tid` (b, h, hk, rows i0 .. i0 + nr - 1),
  /// loads its Q rows into qv and sets jEnd, the keys any of them sees.
  std::string queryTile() const;
  /// The three templates' bodies.
  std::string forward() const;
  std::string gradQuery() const;
  std::string gradKeyValue() const;
};
} // namespace

std::string HostTile::queryTile() const {
  const auto &d = g.d;
  using G = AttentionGen;
  std::string body;
  llvm::raw_string_ostream os(body);
  const int64_t tiles = ceilDiv(d.queryLen, kHostTile);
  os << "  const long long qt = tid % " << tiles << "LL;\n"
     << "  const long long h = (tid / " << tiles << "LL) % " << d.queryHeads
     << "LL;\n"
     << "  const long long b = tid / " << tiles * d.queryHeads << "LL;\n"
     << "  const long long hk = h / " << d.groupSize() << "LL;\n"
     << "  const long long i0 = qt * " << TILE << "LL;\n"
     << "  const int nr = " << d.queryLen << "LL - i0 < " << TILE << " ? (int)("
     << d.queryLen << "LL - i0) : " << TILE << ";\n"
     << "  " << T << " qv[" << TILE << "][" << D << "];\n"
     << "  for (int r = 0; r < nr; ++r)\n"
     << "    for (int c = 0; c < " << D << "; ++c) qv[r][c] = "
     << g.load(g.q, g.qe, G::idx(g.qs, "b", "h", "(i0 + r)", "c")) << ";\n"
     << "  const long long jEnd = " << rowEnd("(i0 + nr - 1)") << ";\n";
  return body;
}

std::string HostTile::forward() const {
  const auto &d = g.d;
  using G = AttentionGen;
  std::string body;
  llvm::raw_string_ostream os(body);
  os << "  " << T << " acc[" << TILE << "][" << DV << "], m[" << TILE
     << "], l[" << TILE << "], st[" << KB << "];\n"
     << "  for (int r = 0; r < nr; ++r) {\n"
     << "    m[r] = -" << g.inf << ";\n    l[r] = 0;\n"
     << "    for (int c = 0; c < " << DV << "; ++c) acc[r][c] = 0;\n  }\n"
     << "  for (long long jb = 0; jb < jEnd; jb += " << KB << ") {\n"
     << "    for (int r = 0; r < nr; ++r) {\n"
     << "      const long long i = i0 + r;\n"
     << "      const long long je = " << rowEnd("i") << " < jb + " << KB
     << " ? " << rowEnd("i") << " : jb + " << KB << ";\n"
     << "      " << T << " bm = -" << g.inf << ";\n"
     << "      for (long long j = jb; j < je; ++j) {\n"
     << tileScore(g, "        ", "qv[r]",
                  g.load(g.k, g.ke, G::idx(g.ks, "b", "hk", "j", "c")))
     << "        st[j - jb] = sv;\n"
     << "        bm = sv > bm ? sv : bm;\n      }\n"
     << "      if (bm == -" << g.inf << ") continue;\n"
     << "      if (bm > m[r]) {\n"
     << "        const " << T << " f = " << g.exp << "(m[r] - bm);\n"
     << "        l[r] *= f;\n"
     << "        for (int c = 0; c < " << DV << "; ++c) acc[r][c] *= f;\n"
     << "        m[r] = bm;\n      }\n"
     << "      for (long long j = jb; j < je; ++j) {\n"
     << "        if (st[j - jb] == -" << g.inf << ") continue;\n"
     << "        const " << T << " pj = " << g.exp << "(st[j - jb] - m[r]);\n"
     << "        l[r] += pj;\n"
     << g.keep("        ") << "        const " << T << " pk = pj * keep;\n"
     << "        for (int c = 0; c < " << DV << "; ++c) acc[r][c] += pk * "
     << g.load(g.v, g.ve, G::idx(g.vs, "b", "hk", "j", "c")) << ";\n"
     << "      }\n    }\n  }\n"
     << "  for (int r = 0; r < nr; ++r) {\n"
     << "    const long long i = i0 + r;\n"
     << "    const " << T << " inv = l[r] > 0 ? (" << T << ")1 / l[r] : (" << T
     << ")0;\n"
     << "    for (int c = 0; c < " << DV << "; ++c) " << out(0) << "["
     << G::idx(g.os, "b", "h", "i", "c")
     << "] = " << storeExpr(g.oe, "acc[r][c] * inv") << ";\n"
     << "    " << out(1) << "[(b * " << d.queryHeads << "LL + h) * "
     << d.queryLen << "LL + i] = l[r] > 0 ? (float)(m[r] + " << g.log
     << "(l[r])) : -DLC_INF_F;\n  }\n";
  return body;
}

std::string HostTile::gradQuery() const {
  const auto &d = g.d;
  using G = AttentionGen;
  std::string body;
  llvm::raw_string_ostream os(body);
  std::string o = "a3", lse = "a4", dO = "a5";
  os << "  " << T << " dov[" << TILE << "][" << DV << "], dq[" << TILE << "]["
     << D << "], delta[" << TILE << "], rm[" << TILE << "], rinv[" << TILE
     << "], dqb[" << D << "];\n"
     << "  for (int r = 0; r < nr; ++r) {\n"
     << "    const long long i = i0 + r;\n"
     << "    delta[r] = 0;\n"
     << "    for (int c = 0; c < " << DV << "; ++c) {\n"
     << "      dov[r][c] = " << g.load(dO, g.doe, G::idx(g.os, "b", "h", "i", "c"))
     << ";\n"
     << "      delta[r] += dov[r][c] * "
     << g.load(o, g.oe, G::idx(g.os, "b", "h", "i", "c")) << ";\n    }\n"
     << "    delta[r] = (" << T << ")(float)delta[r];\n"
     << "    for (int c = 0; c < " << D << "; ++c) dq[r][c] = 0;\n"
     << "    const " << T << " L = " << lse << "[(b * " << d.queryHeads
     << "LL + h) * " << d.queryLen << "LL + i];\n"
     // As in the per-row body: a row whose every score is a huge finite
     // fill recomputes its maximum and sum (lse rounds to the maximum).
     << "    rm[r] = L;\n    rinv[r] = 1;\n"
     << "    if (L != -" << g.inf << " && L < (" << T << ")-1e30) {\n"
     << "      " << T << " rl = 0;\n"
     << "      rm[r] = -" << g.inf << ";\n"
     << "      for (long long j = 0; j < " << rowEnd("i") << "; ++j) {\n"
     << tileScore(g, "        ", "qv[r]",
                  g.load(g.k, g.ke, G::idx(g.ks, "b", "hk", "j", "c")))
     << "        if (sv == -" << g.inf << ") continue;\n"
     << "        if (sv > rm[r]) { rl *= " << g.exp << "(rm[r] - sv); rm[r] = sv; }\n"
     << "        rl += " << g.exp << "(sv - rm[r]);\n      }\n"
     << "      rm[r] = (" << T << ")(float)rm[r];\n"
     << "      rinv[r] = (" << T << ")(float)((" << T << ")1 / rl);\n    }\n"
     << "  }\n"
     << "  for (long long jb = 0; jb < jEnd; jb += " << KB << ") {\n"
     << "    for (int r = 0; r < nr; ++r) {\n"
     << "      if (rm[r] == -" << g.inf << ") continue;\n"
     << "      const long long i = i0 + r;\n"
     << "      const long long je = " << rowEnd("i") << " < jb + " << KB
     << " ? " << rowEnd("i") << " : jb + " << KB << ";\n"
     << "      if (je <= jb) continue;\n"
     << "      for (int c = 0; c < " << D << "; ++c) dqb[c] = 0;\n"
     << "      for (long long j = jb; j < je; ++j) {\n"
     << tileScore(g, "        ", "qv[r]",
                  g.load(g.k, g.ke, G::idx(g.ks, "b", "hk", "j", "c")))
     << "        if (sv == -" << g.inf << ") continue;\n"
     << "        const " << T << " pj = " << g.exp << "(sv - rm[r]) * rinv[r];\n"
     << "        " << T << " dp = 0;\n"
     << "        for (int c = 0; c < " << DV << "; ++c) dp += dov[r][c] * "
     << g.load(g.v, g.ve, G::idx(g.vs, "b", "hk", "j", "c")) << ";\n"
     << g.keep("        ") << "        const " << T
     << " ds = pj * (dp * keep - delta[r]) * " << g.lit(g.p.scale) << ";\n"
     << "        for (int c = 0; c < " << D << "; ++c) dqb[c] += ds * "
     << g.load(g.k, g.ke, G::idx(g.ks, "b", "hk", "j", "c")) << ";\n"
     << "      }\n"
     << "      for (int c = 0; c < " << D << "; ++c) dq[r][c] += dqb[c];\n"
     << "    }\n  }\n"
     << "  for (int r = 0; r < nr; ++r) {\n"
     << "    const long long i = i0 + r;\n"
     << "    const long long row = (b * " << d.queryHeads << "LL + h) * "
     << d.queryLen << "LL + i;\n"
     << "    " << out(1) << "[3 * row] = (float)delta[r];\n"
     << "    " << out(1) << "[3 * row + 1] = (float)rm[r];\n"
     << "    " << out(1) << "[3 * row + 2] = (float)rinv[r];\n"
     << "    for (int c = 0; c < " << D << "; ++c) " << out(0) << "["
     << G::idx(g.qs, "b", "h", "i", "c")
     << "] = " << storeExpr(g.qe, "dq[r][c]") << ";\n  }\n";
  return body;
}

std::string HostTile::gradKeyValue() const {
  const auto &d = g.d;
  using G = AttentionGen;
  std::string body;
  llvm::raw_string_ostream os(body);
  // dK, dV: a tile of key rows j0 .. j0 + nk - 1 reads each query row and
  // its dO once for all of them; sums over query rows in blocks of
  // kSumBlock starting at the tile's first visible row.
  std::string stats = "a4", dO = "a5";
  const int64_t tiles = ceilDiv(d.kvLen, kHostTile);
  int64_t off = d.kvLen - d.queryLen;
  os << "  const long long kt = tid % " << tiles << "LL;\n"
     << "  const long long hk = (tid / " << tiles << "LL) % " << d.kvHeads
     << "LL;\n"
     << "  const long long b = tid / " << tiles * d.kvHeads << "LL;\n"
     << "  const long long j0 = kt * " << TILE << "LL;\n"
     << "  const int nk = " << d.kvLen << "LL - j0 < " << TILE << " ? (int)("
     << d.kvLen << "LL - j0) : " << TILE << ";\n"
     << "  " << T << " kv[" << TILE << "][" << D << "], vv[" << TILE << "]["
     << DV << "], dk[" << TILE << "][" << D << "], dv[" << TILE << "][" << DV
     << "], dkb[" << TILE << "][" << D << "], dvb[" << TILE << "][" << DV
     << "], qv[" << D << "], dov[" << DV << "];\n"
     << "  for (int r = 0; r < nk; ++r) {\n"
     << "    const long long j = j0 + r;\n"
     << "    for (int c = 0; c < " << D << "; ++c) { kv[r][c] = "
     << g.load(g.k, g.ke, G::idx(g.ks, "b", "hk", "j", "c"))
     << "; dk[r][c] = 0; }\n"
     << "    for (int c = 0; c < " << DV << "; ++c) { vv[r][c] = "
     << g.load(g.v, g.ve, G::idx(g.vs, "b", "hk", "j", "c"))
     << "; dv[r][c] = 0; }\n  }\n"
     << "  const long long iStart = "
     << (g.p.causal ? "(j0 - " + std::to_string(off) + "LL > 0 ? j0 - " +
                          std::to_string(off) + "LL : 0LL)"
                    : std::string("0LL"))
     << ";\n"
     << "  for (long long h = hk * " << d.groupSize() << "LL; h < (hk + 1) * "
     << d.groupSize() << "LL; ++h)\n"
     << "  for (long long ib = iStart; ib < " << d.queryLen << "LL; ib += " << KB
     << ") {\n"
     << "    for (int r = 0; r < nk; ++r) {\n"
     << "      for (int c = 0; c < " << D << "; ++c) dkb[r][c] = 0;\n"
     << "      for (int c = 0; c < " << DV << "; ++c) dvb[r][c] = 0;\n    }\n"
     << "    const long long ib1 = ib + " << KB << " < " << d.queryLen
     << "LL ? ib + " << KB << " : " << d.queryLen << "LL;\n"
     << "    for (long long i = ib; i < ib1; ++i) {\n"
     << "      const long long row = (b * " << d.queryHeads << "LL + h) * "
     << d.queryLen << "LL + i;\n"
     << "      const " << T << " rm = " << stats << "[3 * row + 1];\n"
     << "      if (rm == -" << g.inf << ") continue;\n"
     << "      const " << T << " rinv = " << stats << "[3 * row + 2], delta = "
     << stats << "[3 * row];\n"
     << "      for (int c = 0; c < " << D << "; ++c) qv[c] = "
     << g.load(g.q, g.qe, G::idx(g.qs, "b", "h", "i", "c")) << ";\n"
     << "      for (int c = 0; c < " << DV << "; ++c) dov[c] = "
     << g.load(dO, g.doe, G::idx(g.os, "b", "h", "i", "c")) << ";\n"
     << "      for (int r = 0; r < nk; ++r) {\n"
     << "        const long long j = j0 + r;\n";
  if (g.p.causal)
    os << "        if (j > i + " << off << "LL) break;\n";
  os << tileScore(g, "        ", "qv", "kv[r][c]")
     << "        if (sv == -" << g.inf << ") continue;\n"
     << "        const " << T << " pj = " << g.exp << "(sv - rm) * rinv;\n"
     << g.keep("        ") << "        " << T << " dp = 0;\n"
     << "        for (int c = 0; c < " << DV << "; ++c) {\n"
     << "          dp += dov[c] * vv[r][c];\n"
     << "          dvb[r][c] += pj * keep * dov[c];\n        }\n"
     << "        const " << T << " ds = pj * (dp * keep - delta) * "
     << g.lit(g.p.scale) << ";\n"
     << "        for (int c = 0; c < " << D << "; ++c) dkb[r][c] += ds * qv[c];\n"
     << "      }\n    }\n"
     << "    for (int r = 0; r < nk; ++r) {\n"
     << "      for (int c = 0; c < " << D << "; ++c) dk[r][c] += dkb[r][c];\n"
     << "      for (int c = 0; c < " << DV << "; ++c) dv[r][c] += dvb[r][c];\n"
     << "    }\n  }\n"
     << "  for (int r = 0; r < nk; ++r) {\n"
     << "    const long long j = j0 + r;\n"
     << "    for (int c = 0; c < " << D << "; ++c) " << out(0) << "["
     << G::idx(g.ks, "b", "hk", "j", "c")
     << "] = " << storeExpr(g.ke, "dk[r][c]") << ";\n"
     << "    for (int c = 0; c < " << DV << "; ++c) " << out(1) << "["
     << G::idx(g.vs, "b", "hk", "j", "c")
     << "] = " << storeExpr(g.ve, "dv[r][c]") << ";\n  }\n";
  return body;
}

/// The host body of template |name| (|numInputs| operands before the
/// outputs): one iteration per tile of kHostTile query rows (forward, dQ)
/// or key rows (dK, dV) of one (batch, head), the same algorithm as the
/// per-row CUDA body with the same O(rows x head size) memory. The
/// forward's online softmax takes the maximum over a block of kSumBlock
/// keys before rescaling (FlashAttention-2's order); the gradients sum in
/// the per-row body's blocks of kSumBlock.
static std::string hostTiledBody(const AttentionGen &g, StringRef name,
                                 unsigned numInputs) {
  HostTile tile(g, numInputs);
  if (name == "attention")
    return tile.queryTile() + tile.forward();
  if (name == "attention_grad_query")
    return tile.queryTile() + tile.gradQuery();
  return tile.gradKeyValue();
}

} // namespace dlc::codegen::detail
