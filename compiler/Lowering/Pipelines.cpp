//===- Pipelines.cpp - the dlgraph -> planned dlexec pipeline -------------===//
#include "compiler/Lowering/Pipelines.h"

#include "compiler/Lowering/Liveness.h"
#include "compiler/Lowering/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void dlc::buildLoweringPipeline(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createLowerToExecPass());
  pm.addPass(createFuseElementwisePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createPlanMemoryPass());
}

dlc::PlanStats dlc::computePlanStats(ModuleOp planned) {
  PlanStats s;
  planned.walk([&](Operation *op) {
    if (isa<exec::KernelOp>(op))
      ++s.kernels;
    else if (isa<exec::BuiltinKernelOp>(op))
      ++s.builtinKernels;
    else if (isa<exec::LibraryCallOp>(op))
      ++s.libraryCalls;
    else if (auto f = dyn_cast<exec::FuncOp>(op))
      s.arenaBytes =
          std::max<int64_t>(s.arenaBytes, f.getArenaBytes().value_or(0));
    else if (auto v = dyn_cast<exec::VariableOp>(op))
      s.persistentBytes += bufferBytes(cast<MemRefType>(v.getType()));
  });
  return s;
}

void dlc::registerLoweringPasses() { registerDLCLoweringPasses(); }

void dlc::registerLoweringPipeline() {
  PassPipelineRegistration<>(
      "dlc-lowering-pipeline",
      "canonicalize, lower dlgraph to dlexec, fuse elementwise kernels, "
      "canonicalize, plan memory",
      [](OpPassManager &pm) { buildLoweringPipeline(pm); });
}
