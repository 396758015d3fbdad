//===- Attention.h - shapes, layouts and masks of fused attention -*- C++ -*-===//
//
// What dlgraph.attention and dlgraph.attention_grad compute, in the terms
// every layer needs: the dimensions read from Q, K and V in either layout
// ([B, H, S, D] or [B, S, H, D], `seq_first`), the element strides an
// operand is read with, which key a causal query sees, and the element
// index the attention dropout draws its Philox number for. Shared by the
// dlgraph verifier and type inference, the reference interpreter, the
// recognizing pass and the kernels' codegen. MLIR-free, plain C++17.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_SCHEMA_SEMANTICS_ATTENTION_H
#define DLC_RUNTIME_SCHEMA_SEMANTICS_ATTENTION_H

#include <array>
#include <cstdint>
#include <string>

namespace dlc::semantics {

/// The operands of an attention in the order of its `seq_first` flags.
enum AttentionOperand { kAttnQuery = 0, kAttnKey = 1, kAttnValue = 2,
                        kAttnResult = 3 };

/// The sizes of one attention: batch B, query heads Hq, key/value heads Hkv
/// (Hq % Hkv == 0), query length Sq, key length Skv, the Q/K head size D and
/// V's head size Dv.
struct AttentionDims {
  int64_t batch = 0, queryHeads = 0, kvHeads = 0, queryLen = 0, kvLen = 0,
          headDim = 0, valueDim = 0;
  /// Query heads per key/value head (grouped-query attention's group size).
  int64_t groupSize() const { return queryHeads / kvHeads; }
};

/// The [B, H, S, D] sizes of a rank-4 operand stored [B, H, S, D], or
/// [B, S, H, D] when |seqFirst|.
template <typename Shape>
std::array<int64_t, 4> attentionHeadMajor(const Shape &shape, bool seqFirst) {
  if (seqFirst)
    return {shape[0], shape[2], shape[1], shape[3]};
  return {shape[0], shape[1], shape[2], shape[3]};
}

/// The element strides, in (b, h, s, d) order, of a contiguous rank-4
/// operand stored [B, H, S, D], or [B, S, H, D] when |seqFirst|: element
/// (b, h, s, d) is at b*st[0] + h*st[1] + s*st[2] + d*st[3].
template <typename Shape>
std::array<int64_t, 4> attentionStrides(const Shape &shape, bool seqFirst) {
  int64_t s3 = 1, s2 = shape[3], s1 = shape[3] * shape[2],
          s0 = shape[3] * shape[2] * shape[1];
  if (seqFirst) // stored (b, s, h, d): h has stride s2, s has stride s1
    return {s0, s2, s1, s3};
  return {s0, s1, s2, s3};
}

/// The dimensions of an attention over Q, K, V (rank-4 shapes, layouts by
/// |qSeqFirst| etc.), or false with a message in |error| naming the sizes
/// that disagree: K and V need Q's batch, one head count dividing Q's and
/// one sequence length; K needs Q's head size; every size is positive.
template <typename Shape>
bool attentionDims(const Shape &q, const Shape &k, const Shape &v,
                   bool qSeqFirst, bool kSeqFirst, bool vSeqFirst,
                   AttentionDims *dims, std::string *error) {
  if (q.size() != 4 || k.size() != 4 || v.size() != 4) {
    *error = "query, key and value must have rank 4";
    return false;
  }
  auto qs = attentionHeadMajor(q, qSeqFirst);
  auto ks = attentionHeadMajor(k, kSeqFirst);
  auto vs = attentionHeadMajor(v, vSeqFirst);
  auto str = [](const std::array<int64_t, 4> &s) {
    return "[" + std::to_string(s[0]) + ", " + std::to_string(s[1]) + ", " +
           std::to_string(s[2]) + ", " + std::to_string(s[3]) + "]";
  };
  for (int i = 0; i < 4; ++i)
    if (qs[i] <= 0 || ks[i] <= 0 || vs[i] <= 0) {
      *error = "every size must be positive; [batch, heads, sequence, "
               "head size] of query " + str(qs) + ", key " + str(ks) +
               ", value " + str(vs);
      return false;
    }
  if (ks[0] != qs[0] || vs[0] != qs[0] || vs[1] != ks[1] || vs[2] != ks[2] ||
      ks[3] != qs[3]) {
    *error = "[batch, heads, sequence, head size] of query " + str(qs) +
             ", key " + str(ks) + " and value " + str(vs) +
             " disagree: key and value need the query's batch, one head "
             "count and one sequence length, the key the query's head size";
    return false;
  }
  if (qs[1] % ks[1] != 0) {
    *error = "the query's " + std::to_string(qs[1]) +
             " heads are not a multiple of the key/value's " +
             std::to_string(ks[1]) + " heads";
    return false;
  }
  *dims = {qs[0], qs[1], ks[1], qs[2], ks[2], qs[3], vs[3]};
  return true;
}

/// Whether a causal attention lets query |i| see key |j|: keys up to the
/// query's own position, aligned at the bottom right (j <= i + Skv - Sq),
/// as a KV cache's queries are the last Sq positions.
inline bool attentionCausalKeeps(int64_t i, int64_t j, int64_t queryLen,
                                 int64_t kvLen) {
  return j <= i + kvLen - queryLen;
}

/// The flat index whose Philox number drops probability (b, h, i, j):
/// row-major in [B, Hq, Sq, Skv], as dlgraph.dropout numbers the elements of
/// the probabilities of the decomposed attention.
inline uint64_t attentionDropoutIndex(const AttentionDims &d, int64_t b,
                                      int64_t h, int64_t i, int64_t j) {
  return (((uint64_t)b * d.queryHeads + h) * d.queryLen + i) * d.kvLen + j;
}

} // namespace dlc::semantics

#endif
