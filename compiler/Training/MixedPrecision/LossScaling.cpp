//===- LossScaling.cpp - in-graph dynamic loss scaling --------------------===//
#include "compiler/Training/MixedPrecision/Passes.h"

namespace dlc {
#define GEN_PASS_DEF_LOSSSCALINGPASS
#include "compiler/Training/MixedPrecision/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;

namespace {
struct LossScalingPass : dlc::impl::LossScalingPassBase<LossScalingPass> {
  using LossScalingPassBase::LossScalingPassBase;
  void runOnOperation() override {}
};
} // namespace
