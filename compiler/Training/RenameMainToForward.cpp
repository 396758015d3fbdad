//===- RenameMainToForward.cpp - the inference entry point is @forward ----===//
#include "compiler/Training/Passes.h"

namespace dlc {
#define GEN_PASS_DEF_RENAMEMAINTOFORWARDPASS
#include "compiler/Training/Passes.h.inc"
} // namespace dlc

using namespace mlir;

namespace {

struct RenameMainToForwardPass
    : public dlc::impl::RenameMainToForwardPassBase<RenameMainToForwardPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (module.lookupSymbol("forward"))
      return;
    if (auto main = module.lookupSymbol<func::FuncOp>("main"))
      main.setSymName("forward");
  }
};

} // namespace
