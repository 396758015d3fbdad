//===- Attention.cpp - fused attention in the reference interpreter -------===//
// dlgraph.attention and dlgraph.attention_grad evaluated in float64 the
// direct way, one query row at a time: the row's scores, its softmax, the
// dropout of runtime/schema/Semantics/Philox.h, then the products with V
// (and, for the gradient, the textbook backward of those steps). It checks
// the fused kernels, which compute the same tile by tile.
#include "compiler/Reference/Evaluators.h"

#include "dialects/Graph/GraphOps.h"
#include "runtime/schema/Semantics/Attention.h"
#include "runtime/schema/Semantics/Philox.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::reference;
namespace semantics = dlc::semantics;

namespace {

/// One attention's operands as the evaluation reads them: sizes, each of
/// Q, K, V, O's (b, h, s, d) strides, the mask broadcast to the scores and
/// the dropout.
struct AttentionView {
  semantics::AttentionDims dims;
  std::array<int64_t, 4> qs, ks, vs, os;
  const Tensor *mask = nullptr;
  bool boolMask = false, causal = false;
  double scale = 1.0, ratio = 0.0;
  uint64_t seed = 0;
  uint32_t step = 0;

  /// The masked, scaled score of query (b, h, i) and key j, -inf where
  /// masked out.
  double score(const Tensor &q, const Tensor &k, int64_t b, int64_t h,
               int64_t i, int64_t j) const {
    const auto &d = dims;
    if (causal && !semantics::attentionCausalKeeps(i, j, d.queryLen, d.kvLen))
      return -std::numeric_limits<double>::infinity();
    int64_t hk = h / d.groupSize();
    double s = 0;
    for (int64_t c = 0; c < d.headDim; ++c)
      s += q.data[b * qs[0] + h * qs[1] + i * qs[2] + c * qs[3]] *
           k.data[b * ks[0] + hk * ks[1] + j * ks[2] + c * ks[3]];
    s *= scale;
    if (mask) {
      std::vector<int64_t> idx = {b, h, i, j};
      double m = mask->data[semantics::broadcastSourceOffset(idx, mask->shape)];
      if (boolMask) {
        if (m == 0.0)
          return -std::numeric_limits<double>::infinity();
      } else {
        s += m;
      }
    }
    return s;
  }
  /// The dropout factor of probability (b, h, i, j): 0 when dropped,
  /// 1 / (1 - ratio) when kept, 1 without dropout.
  double keep(int64_t b, int64_t h, int64_t i, int64_t j) const {
    if (ratio == 0.0)
      return 1.0;
    uint64_t e = semantics::attentionDropoutIndex(dims, b, h, i, j);
    return dlc_philox_uniform24(seed, e, step) >= (float)ratio
               ? 1.0 / (1.0 - ratio)
               : 0.0;
  }
};

template <typename OpT>
AttentionView viewOf(Frame &frame, OpT o) {
  AttentionView a;
  ArrayRef<bool> sf = o.getSeqFirst();
  auto flag = [&](int i) { return !sf.empty() && sf[i]; };
  std::vector<int64_t> q = shapeOf(o.getQuery()), k = shapeOf(o.getKey()),
                       v = shapeOf(o.getValue());
  std::string error;
  (void)semantics::attentionDims(q, k, v, flag(0), flag(1), flag(2), &a.dims,
                                 &error); // verified
  a.qs = semantics::attentionStrides(q, flag(0));
  a.ks = semantics::attentionStrides(k, flag(1));
  a.vs = semantics::attentionStrides(v, flag(2));
  const auto &d = a.dims;
  std::vector<int64_t> o4 =
      flag(3) ? std::vector<int64_t>{d.batch, d.queryLen, d.queryHeads,
                                     d.valueDim}
              : std::vector<int64_t>{d.batch, d.queryHeads, d.queryLen,
                                     d.valueDim};
  a.os = semantics::attentionStrides(o4, flag(3));
  if (Value m = o.getMask()) {
    a.mask = &frame.get(m);
    a.boolMask = cast<RankedTensorType>(m.getType()).getElementType()
                     .isInteger(1);
  }
  a.causal = o.getCausal();
  a.scale = o.getScale().convertToDouble();
  a.ratio = (double)o.getDropoutRatio().convertToFloat();
  a.seed = (uint64_t)o.getSeed();
  if (Value s = o.getStep())
    a.step = (uint32_t)frame.get(s).data[0];
  return a;
}

/// The probabilities of query row (b, h, i) into |p| (0 where masked; all
/// 0 for a fully masked row) and the row's log-sum-exp.
double rowProbabilities(const AttentionView &a, const Tensor &q,
                        const Tensor &k, int64_t b, int64_t h, int64_t i,
                        std::vector<double> &p) {
  const auto &d = a.dims;
  p.assign(d.kvLen, 0.0);
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < d.kvLen; ++j) {
    p[j] = a.score(q, k, b, h, i, j);
    mx = std::max(mx, p[j]);
  }
  if (mx == -std::numeric_limits<double>::infinity()) {
    p.assign(d.kvLen, 0.0);
    return mx;
  }
  double sum = 0;
  for (int64_t j = 0; j < d.kvLen; ++j)
    sum += (p[j] = std::exp(p[j] - mx));
  for (int64_t j = 0; j < d.kvLen; ++j)
    p[j] /= sum;
  return mx + std::log(sum);
}

FailureOr<Tensor> evalAttention(Frame &frame, AttentionOp o) {
  AttentionView a = viewOf(frame, o);
  const Tensor &q = frame.get(o.getQuery()), &k = frame.get(o.getKey()),
               &v = frame.get(o.getValue());
  const auto &d = a.dims;
  Tensor out(shapeOf(o.getResult())), lse(shapeOf(o.getLse()));
  std::vector<double> p;
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.queryHeads; ++h)
      for (int64_t i = 0; i < d.queryLen; ++i) {
        lse.data[(b * d.queryHeads + h) * d.queryLen + i] =
            rowProbabilities(a, q, k, b, h, i, p);
        int64_t hk = h / d.groupSize();
        for (int64_t c = 0; c < d.valueDim; ++c) {
          double s = 0;
          for (int64_t j = 0; j < d.kvLen; ++j)
            if (p[j] != 0.0)
              s += p[j] * a.keep(b, h, i, j) *
                   v.data[b * a.vs[0] + hk * a.vs[1] + j * a.vs[2] +
                          c * a.vs[3]];
          out.data[b * a.os[0] + h * a.os[1] + i * a.os[2] + c * a.os[3]] = s;
        }
      }
  frame.set(o.getLse(), lse);
  return out;
}

FailureOr<Tensor> evalAttentionGrad(Frame &frame, AttentionGradOp o) {
  AttentionView a = viewOf(frame, o);
  const Tensor &q = frame.get(o.getQuery()), &k = frame.get(o.getKey()),
               &v = frame.get(o.getValue()), &dO = frame.get(o.getResultGrad());
  const auto &d = a.dims;
  Tensor dq(shapeOf(o.getQuery())), dk(shapeOf(o.getKey())),
      dv(shapeOf(o.getValue()));
  std::vector<double> p, dp(d.kvLen);
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.queryHeads; ++h)
      for (int64_t i = 0; i < d.queryLen; ++i) {
        rowProbabilities(a, q, k, b, h, i, p);
        int64_t hk = h / d.groupSize();
        auto vAt = [&](int64_t j, int64_t c) {
          return b * a.vs[0] + hk * a.vs[1] + j * a.vs[2] + c * a.vs[3];
        };
        auto kAt = [&](int64_t j, int64_t c) {
          return b * a.ks[0] + hk * a.ks[1] + j * a.ks[2] + c * a.ks[3];
        };
        auto oAt = [&](int64_t c) {
          return b * a.os[0] + h * a.os[1] + i * a.os[2] + c * a.os[3];
        };
        auto qAt = [&](int64_t c) {
          return b * a.qs[0] + h * a.qs[1] + i * a.qs[2] + c * a.qs[3];
        };
        // dP_j = keep_j * dO·V_j; dV_j += P_j keep_j dO; dS = P (dP - Σ P dP).
        double rowDot = 0;
        for (int64_t j = 0; j < d.kvLen; ++j) {
          dp[j] = 0;
          if (p[j] == 0.0)
            continue;
          double kf = a.keep(b, h, i, j), s = 0;
          for (int64_t c = 0; c < d.valueDim; ++c) {
            s += dO.data[oAt(c)] * v.data[vAt(j, c)];
            dv.data[vAt(j, c)] += p[j] * kf * dO.data[oAt(c)];
          }
          dp[j] = s * kf;
          rowDot += p[j] * dp[j];
        }
        for (int64_t j = 0; j < d.kvLen; ++j) {
          if (p[j] == 0.0)
            continue;
          double ds = p[j] * (dp[j] - rowDot) * a.scale;
          for (int64_t c = 0; c < d.headDim; ++c) {
            dq.data[qAt(c)] += ds * k.data[kAt(j, c)];
            dk.data[kAt(j, c)] += ds * q.data[qAt(c)];
          }
        }
      }
  frame.set(o.getKeyGrad(), dk);
  frame.set(o.getValueGrad(), dv);
  return dq;
}

} // namespace

void dlc::reference::populateReferenceAttention(EvalTable &table) {
  table.add<AttentionOp>(evalAttention);
  table.add<AttentionGradOp>(evalAttentionGrad);
}
