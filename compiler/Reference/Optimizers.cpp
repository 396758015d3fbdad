//===- Optimizers.cpp - optimizer updates in the reference interpreter ----===//
// dlgraph.sgd_update and adam_update with torch.optim semantics; the new
// parameter is the first result, the new optimizer state the others.
#include "compiler/Reference/Evaluators.h"

#include "dialects/Graph/GraphOps.h"

#include <cmath>

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::reference;

namespace {

/// torch.optim.SGD (no dampening, no Nesterov): the momentum buffer starts
/// as the first step's gradient.
Tensor evalSGDUpdate(Frame &frame, SGDUpdateOp o) {
  const Tensor &p = frame.get(o.getParam()), &g = frame.get(o.getGrad()),
               &buf = frame.get(o.getMomentumBuffer());
  double lr = frame.get(o.getLr()).data[0],
         mom = o.getMomentum().convertToDouble(),
         wd = o.getWeightDecay().convertToDouble();
  bool first = frame.get(o.getStep()).data[0] == 1.0;
  Tensor np(p.shape), nb(p.shape);
  for (int64_t i = 0; i < p.numElements(); ++i) {
    double gi = g.data[i] + wd * p.data[i];
    if (mom != 0) {
      nb.data[i] = first ? gi : mom * buf.data[i] + gi;
      np.data[i] = p.data[i] - lr * nb.data[i];
    } else {
      nb.data[i] = buf.data[i];
      np.data[i] = p.data[i] - lr * gi;
    }
  }
  frame.set(o.getNewMomentumBuffer(), nb);
  return np;
}

/// torch.optim.Adam, or AdamW when decoupled, with bias correction.
Tensor evalAdamUpdate(Frame &frame, AdamUpdateOp o) {
  const Tensor &p = frame.get(o.getParam()), &g = frame.get(o.getGrad()),
               &m = frame.get(o.getExpAvg()), &v = frame.get(o.getExpAvgSq());
  double lr = frame.get(o.getLr()).data[0], b1 = o.getBeta1().convertToDouble(),
         b2 = o.getBeta2().convertToDouble(),
         eps = o.getEpsilon().convertToDouble(),
         wd = o.getWeightDecay().convertToDouble(),
         t = frame.get(o.getStep()).data[0];
  Tensor np(p.shape), nm(p.shape), nv(p.shape);
  for (int64_t i = 0; i < p.numElements(); ++i) {
    double pi = p.data[i], gi = g.data[i];
    if (o.getDecoupled())
      pi *= 1 - lr * wd;
    else
      gi += wd * pi;
    nm.data[i] = b1 * m.data[i] + (1 - b1) * gi;
    nv.data[i] = b2 * v.data[i] + (1 - b2) * gi * gi;
    double mh = nm.data[i] / (1 - std::pow(b1, t));
    double vh = nv.data[i] / (1 - std::pow(b2, t));
    np.data[i] = pi - lr * mh / (std::sqrt(vh) + eps);
  }
  frame.set(o.getNewExpAvg(), nm);
  frame.set(o.getNewExpAvgSq(), nv);
  return np;
}

} // namespace

void dlc::reference::populateReferenceOptimizers(EvalTable &table) {
  table.add<SGDUpdateOp>(evalSGDUpdate);
  table.add<AdamUpdateOp>(evalAdamUpdate);
}
