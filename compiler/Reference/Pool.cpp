//===- Pool.cpp - pooling in the reference interpreter --------------------===//
// Max and average pooling over 2-D windows, their gradients, the argmax
// indices of max pooling and their gradient, and global average pooling.
#include "compiler/Reference/Evaluators.h"

#include "dialects/Graph/GraphOps.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::reference;

namespace {

struct Window {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
};

template <typename PoolOp> Window windowOf(PoolOp op) {
  auto k = op.getKernelShape(), s = op.getStrides(), p = op.getPads(),
       d = op.getDilations();
  return {k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1]};
}

/// Visits each (n, c, oh, ow) output position and its in-range window
/// input positions (ih, iw); |count| is the divisor average pooling uses.
template <typename F>
void forEachWindow(const std::vector<int64_t> &xs,
                   const std::vector<int64_t> &ys, const Window &w,
                   bool includePad, F f) {
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t c = 0; c < ys[1]; ++c)
      for (int64_t oh = 0; oh < ys[2]; ++oh)
        for (int64_t ow = 0; ow < ys[3]; ++ow) {
          std::vector<std::pair<int64_t, int64_t>> pos;
          int64_t padded = 0;
          for (int64_t i = 0; i < w.kh; ++i)
            for (int64_t j = 0; j < w.kw; ++j) {
              int64_t ih = oh * w.sh - w.ph + i * w.dh;
              int64_t iw = ow * w.sw - w.pw + j * w.dw;
              bool inPadded = ih < xs[2] + w.ph && iw < xs[3] + w.pw;
              if (inPadded)
                ++padded;
              if (ih >= 0 && ih < xs[2] && iw >= 0 && iw < xs[3])
                pos.push_back({ih, iw});
            }
          int64_t count = includePad ? padded : (int64_t)pos.size();
          f(n, c, oh, ow, pos, count);
        }
}

int64_t at4(const std::vector<int64_t> &s, int64_t a, int64_t b, int64_t c,
            int64_t d) {
  return ((a * s[1] + b) * s[2] + c) * s[3] + d;
}

Tensor evalMaxPool(Frame &frame, MaxPoolOp o) {
  const Tensor &x = frame.get(o.getInput());
  Tensor y(shapeOf(o.getResult()));
  forEachWindow(
      x.shape, y.shape, windowOf(o), false,
      [&](int64_t n, int64_t c, int64_t oh, int64_t ow, auto &pos, int64_t) {
        double best = -std::numeric_limits<double>::infinity();
        for (auto [ih, iw] : pos)
          best = std::max(best, x.data[at4(x.shape, n, c, ih, iw)]);
        y.data[at4(y.shape, n, c, oh, ow)] = best;
      });
  return y;
}

Tensor evalMaxPoolGrad(Frame &frame, MaxPoolGradOp o) {
  const Tensor &x = frame.get(o.getInput()), &dy = frame.get(o.getResultGrad());
  Tensor dx(x.shape);
  forEachWindow(
      x.shape, dy.shape, windowOf(o), false,
      [&](int64_t n, int64_t c, int64_t oh, int64_t ow, auto &pos, int64_t) {
        int64_t arg = -1;
        for (auto [ih, iw] : pos) {
          int64_t i = at4(x.shape, n, c, ih, iw);
          if (arg < 0 || x.data[i] > x.data[arg])
            arg = i;
        }
        if (arg >= 0)
          dx.data[arg] += dy.data[at4(dy.shape, n, c, oh, ow)];
      });
  return dx;
}

Tensor evalMaxPoolIndices(Frame &frame, MaxPoolIndicesOp o) {
  const Tensor &x = frame.get(o.getInput());
  Tensor idx(shapeOf(o.getIndices()));
  forEachWindow(
      x.shape, idx.shape, windowOf(o), false,
      [&](int64_t n, int64_t c, int64_t oh, int64_t ow, auto &pos, int64_t) {
        int64_t arg = -1;
        double best = 0;
        for (auto [ih, iw] : pos) {
          double v = x.data[at4(x.shape, n, c, ih, iw)];
          if (arg < 0 || v > best) {
            best = v;
            arg = ih * x.shape[3] + iw;
          }
        }
        idx.data[at4(idx.shape, n, c, oh, ow)] = static_cast<double>(arg);
      });
  return idx;
}

Tensor evalMaxPoolIndicesGrad(Frame &frame, MaxPoolIndicesGradOp o) {
  const Tensor &idx = frame.get(o.getIndices()),
               &dy = frame.get(o.getResultGrad());
  Tensor dx(shapeOf(o.getInputGrad()));
  int64_t plane = dx.shape[2] * dx.shape[3];
  int64_t pooled = dy.shape[2] * dy.shape[3];
  for (int64_t nc = 0; nc < dx.shape[0] * dx.shape[1]; ++nc)
    for (int64_t k = 0; k < pooled; ++k) {
      auto i = static_cast<int64_t>(idx.data[nc * pooled + k]);
      if (i >= 0 && i < plane)
        dx.data[nc * plane + i] += dy.data[nc * pooled + k];
    }
  return dx;
}

Tensor evalAveragePool(Frame &frame, AveragePoolOp o) {
  const Tensor &x = frame.get(o.getInput());
  Tensor y(shapeOf(o.getResult()));
  forEachWindow(x.shape, y.shape, windowOf(o), o.getCountIncludePad(),
                [&](int64_t n, int64_t c, int64_t oh, int64_t ow, auto &pos,
                    int64_t count) {
                  double s = 0;
                  for (auto [ih, iw] : pos)
                    s += x.data[at4(x.shape, n, c, ih, iw)];
                  y.data[at4(y.shape, n, c, oh, ow)] = s / count;
                });
  return y;
}

Tensor evalAveragePoolGrad(Frame &frame, AveragePoolGradOp o) {
  const Tensor &x = frame.get(o.getInput()), &dy = frame.get(o.getResultGrad());
  Tensor dx(x.shape);
  forEachWindow(x.shape, dy.shape, windowOf(o), o.getCountIncludePad(),
                [&](int64_t n, int64_t c, int64_t oh, int64_t ow, auto &pos,
                    int64_t count) {
                  double g = dy.data[at4(dy.shape, n, c, oh, ow)] / count;
                  for (auto [ih, iw] : pos)
                    dx.data[at4(x.shape, n, c, ih, iw)] += g;
                });
  return dx;
}

Tensor evalGlobalAveragePool(Frame &frame, GlobalAveragePoolOp o) {
  const Tensor &x = frame.get(o.getInput());
  SmallVector<int64_t> axes;
  for (size_t d = 2; d < x.shape.size(); ++d)
    axes.push_back(d);
  return reduce(
      x, axes, shapeOf(o.getResult()), [] { return 0.0; },
      [](double a, double v) { return a + v; },
      [](double a, int64_t n) { return a / n; });
}

} // namespace

void dlc::reference::populateReferencePool(EvalTable &table) {
  table.add<MaxPoolOp>(evalMaxPool);
  table.add<MaxPoolGradOp>(evalMaxPoolGrad);
  table.add<MaxPoolIndicesOp>(evalMaxPoolIndices);
  table.add<MaxPoolIndicesGradOp>(evalMaxPoolIndicesGrad);
  table.add<AveragePoolOp>(evalAveragePool);
  table.add<AveragePoolGradOp>(evalAveragePoolGrad);
  table.add<GlobalAveragePoolOp>(evalGlobalAveragePool);
}
