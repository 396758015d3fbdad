//===- Conv.cpp - convolutions in the reference interpreter ---------------===//
// dlgraph.conv and its two gradients, all visiting the same product terms.
#include "compiler/Reference/Evaluators.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::reference;

namespace {

/// Convolution visitor: calls f(xIndex, wIndex, yIndex) for every product
/// term of y = conv(x, w), for 2-D (rank-4) and 3-D (rank-5) operands; a 2-D
/// convolution is visited as a 3-D one over a depth of 1 (same flat indices).
template <typename F>
void forEachConvTerm(std::vector<int64_t> xs, std::vector<int64_t> ws,
                     std::vector<int64_t> ys, ArrayRef<int64_t> stridesIn,
                     ArrayRef<int64_t> padsIn, ArrayRef<int64_t> dilIn,
                     int64_t group, F f) {
  std::vector<int64_t> st(stridesIn.begin(), stridesIn.end()),
      pd(padsIn.begin(), padsIn.end()), dl(dilIn.begin(), dilIn.end());
  if (xs.size() == 4) {
    for (auto *s : {&xs, &ws, &ys})
      s->insert(s->begin() + 2, 1);
    st.insert(st.begin(), 1);
    dl.insert(dl.begin(), 1);
    pd = {0, pd[0], pd[1], 0, pd[2], pd[3]};
  }
  auto at5 = [](const std::vector<int64_t> &s, int64_t a, int64_t b, int64_t c,
                int64_t d, int64_t e) {
    return (((a * s[1] + b) * s[2] + c) * s[3] + d) * s[4] + e;
  };
  int64_t cPerG = ws[1], oPerG = ws[0] / group;
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t o = 0; o < ys[1]; ++o) {
      int64_t g = o / oPerG;
      for (int64_t od = 0; od < ys[2]; ++od)
        for (int64_t oh = 0; oh < ys[3]; ++oh)
          for (int64_t ow = 0; ow < ys[4]; ++ow)
            for (int64_t c = 0; c < cPerG; ++c)
              for (int64_t k = 0; k < ws[2]; ++k)
                for (int64_t i = 0; i < ws[3]; ++i)
                  for (int64_t j = 0; j < ws[4]; ++j) {
                    int64_t id = od * st[0] - pd[0] + k * dl[0];
                    int64_t ih = oh * st[1] - pd[1] + i * dl[1];
                    int64_t iw = ow * st[2] - pd[2] + j * dl[2];
                    if (id < 0 || id >= xs[2] || ih < 0 || ih >= xs[3] ||
                        iw < 0 || iw >= xs[4])
                      continue;
                    f(at5(xs, n, g * cPerG + c, id, ih, iw),
                      at5(ws, o, c, k, i, j), at5(ys, n, o, od, oh, ow));
                  }
    }
}

Tensor evalConv(Frame &frame, ConvOp o) {
  const Tensor &x = frame.get(o.getInput()), &w = frame.get(o.getFilter());
  Tensor y(shapeOf(o.getResult()));
  forEachConvTerm(x.shape, w.shape, y.shape, o.getStrides(), o.getPads(),
                  o.getDilations(), o.getGroup(),
                  [&](int64_t xi, int64_t wi, int64_t yi) {
                    y.data[yi] += x.data[xi] * w.data[wi];
                  });
  if (o.getBias()) {
    const Tensor &b = frame.get(o.getBias());
    int64_t hw = y.numElements() / (y.shape[0] * y.shape[1]);
    for (int64_t i = 0; i < y.numElements(); ++i)
      y.data[i] += b.data[(i / hw) % y.shape[1]];
  }
  return y;
}

Tensor evalConvBackwardData(Frame &frame, ConvBackwardDataOp o) {
  const Tensor &dy = frame.get(o.getResultGrad()),
               &w = frame.get(o.getFilter());
  Tensor dx(shapeOf(o.getInputGrad()));
  forEachConvTerm(dx.shape, w.shape, dy.shape, o.getStrides(), o.getPads(),
                  o.getDilations(), o.getGroup(),
                  [&](int64_t xi, int64_t wi, int64_t yi) {
                    dx.data[xi] += dy.data[yi] * w.data[wi];
                  });
  return dx;
}

Tensor evalConvBackwardFilter(Frame &frame, ConvBackwardFilterOp o) {
  const Tensor &x = frame.get(o.getInput()), &dy = frame.get(o.getResultGrad());
  Tensor dw(shapeOf(o.getFilterGrad()));
  forEachConvTerm(x.shape, dw.shape, dy.shape, o.getStrides(), o.getPads(),
                  o.getDilations(), o.getGroup(),
                  [&](int64_t xi, int64_t wi, int64_t yi) {
                    dw.data[wi] += x.data[xi] * dy.data[yi];
                  });
  return dw;
}

} // namespace

void dlc::reference::populateReferenceConv(EvalTable &table) {
  table.add<ConvOp>(evalConv);
  table.add<ConvBackwardDataOp>(evalConvBackwardData);
  table.add<ConvBackwardFilterOp>(evalConvBackwardFilter);
}
