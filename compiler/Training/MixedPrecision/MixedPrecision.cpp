//===- MixedPrecision.cpp - the --precision cast policy -------------------===//
#include "compiler/Training/MixedPrecision/Passes.h"

namespace dlc {
#define GEN_PASS_DEF_MIXEDPRECISIONPASS
#include "compiler/Training/MixedPrecision/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;

llvm::ArrayRef<llvm::StringLiteral> dlc::supportedPrecisions() {
  static const llvm::StringLiteral kPrecisions[] = {"fp32", "bf16", "fp16"};
  return kPrecisions;
}

namespace {
struct MixedPrecisionPass
    : dlc::impl::MixedPrecisionPassBase<MixedPrecisionPass> {
  using MixedPrecisionPassBase::MixedPrecisionPassBase;
  void runOnOperation() override {}
};
} // namespace
