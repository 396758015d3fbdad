//===- Random.cpp - dropout in the reference interpreter ------------------===//
// dlgraph.dropout draws its keep mask from the Philox stream that the
// kernels use (runtime/schema/Semantics/Philox.h), so the reference and the
// compiled model drop the same elements.
#include "compiler/Reference/Evaluators.h"

#include "dialects/Graph/GraphOps.h"
#include "runtime/schema/Semantics/Philox.h"

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::reference;

void dlc::reference::populateReferenceRandom(EvalTable &table) {
  // The scaled kept elements; the mask (1 kept, 0 dropped) is the second
  // result.
  table.add<DropoutOp>([](Frame &frame, DropoutOp o) {
    const Tensor &x = frame.get(o.getInput());
    auto step = (uint32_t)frame.get(o.getStep()).data[0];
    auto seed = (uint64_t)o.getSeed();
    float ratio = o.getRatio().convertToFloat();
    double scale = 1.0 / (1.0 - (double)ratio);
    Tensor y(x.shape), mask(x.shape);
    for (int64_t i = 0; i < x.numElements(); ++i) {
      bool keep = dlc_philox_uniform24(seed, (uint64_t)i, step) >= ratio;
      mask.data[i] = keep;
      y.data[i] = keep ? x.data[i] * scale : 0.0;
    }
    frame.set(o.getMask(), mask);
    return y;
  });
}
