//===- Pipelines.cpp - the dlgraph -> planned dlexec pipeline -------------===//
#include "compiler/Lowering/Pipelines.h"

#include "dialects/Exec/Analysis/Liveness.h"
#include "dialects/Exec/Analysis/KernelQueries.h"
#include "compiler/Lowering/LayerNorm/Passes.h"
#include "compiler/Lowering/MultiTensor/Passes.h"
#include "compiler/Lowering/ReductionEpilogues/Passes.h"
#include "compiler/Lowering/Remat/Passes.h"
#include "compiler/Lowering/SiblingReductions/Passes.h"
#include "compiler/Lowering/SplitReductions/Passes.h"
#include "compiler/Lowering/Passes.h"
#include "runtime/schema/LibraryCalls.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace dlc;

void dlc::buildGraphToExecPipeline(OpPassManager &pm) {
  pm.addPass(createFoldDataMovementPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createLowerToExecPass());
}

void dlc::buildExecTransformsPipeline(OpPassManager &pm) {
  pm.addPass(createFuseElementwisePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createFuseGemmEpiloguesPass());
  pm.addPass(createMultiTensorPass());
  pm.addPass(createFuseReductionEpiloguesPass());
  pm.addPass(createFuseLayerNormPass());
  pm.addPass(createRematPersistentKernelsPass());
  pm.addPass(createFuseSiblingReductionsPass());
  pm.addPass(createSplitReductionsPass());
}

void dlc::buildMemoryPlanningPipeline(OpPassManager &pm) {
  pm.addPass(createPlanMemoryPass());
}

void dlc::buildLoweringPipeline(OpPassManager &pm) {
  buildGraphToExecPipeline(pm);
  buildExecTransformsPipeline(pm);
  buildMemoryPlanningPipeline(pm);
}

void dlc::registerLoweringPasses() { registerDLCLoweringPasses(); }

void dlc::registerLoweringPipeline() {
  PassPipelineRegistration<>(
      "dlc-lowering-pipeline",
      "canonicalize, lower dlgraph to dlexec, fuse elementwise kernels, "
      "canonicalize, fuse gemm epilogues, plan memory",
      [](OpPassManager &pm) { buildLoweringPipeline(pm); });
}
