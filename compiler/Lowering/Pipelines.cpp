//===- Pipelines.cpp - the dlgraph -> planned dlexec pipeline -------------===//
#include "compiler/Lowering/Pipelines.h"

#include "compiler/Lowering/Liveness.h"
#include "compiler/Lowering/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace dlc;

void dlc::buildLoweringPipeline(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createLowerToExecPass());
  pm.addPass(createFuseElementwisePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createPlanMemoryPass());
}

/// Whether |k| only converts its one input's element type.
static bool isCastKernel(exec::KernelOp k) {
  if (k.getInputs().size() != 1 || k.getOutputs().size() != 1)
    return false;
  Block &body = k.getBody().front();
  if (body.getOperations().size() != 2)
    return false;
  Operation &op = body.front();
  return isa<arith::ExtFOp, arith::TruncFOp>(op) &&
         op.getOperand(0) == body.getArgument(0);
}

static bool allParallel(exec::KernelOp k) {
  return llvm::all_of(k.getIteratorTypes(), [](Attribute a) {
    return cast<StringAttr>(a).getValue() == "parallel";
  });
}

static Value stripViews(Value v) {
  while (auto r = v.getDefiningOp<exec::ReshapeOp>())
    v = r.getSource();
  return v;
}

/// Counts cast kernels and those next to an elementwise kernel (PlanStats).
static void countCastKernels(ModuleOp planned, PlanStats &s) {
  llvm::DenseMap<Value, SmallVector<exec::KernelOp>> writers, readers;
  planned.walk([&](exec::KernelOp k) {
    for (Value v : k.getInputs())
      readers[stripViews(v)].push_back(k);
    for (Value v : k.getOutputs())
      writers[stripViews(v)].push_back(k);
  });
  planned.walk([&](exec::KernelOp k) {
    if (!isCastKernel(k))
      return;
    ++s.castKernels;
    auto elementwise = [&](exec::KernelOp o) {
      return o != k && allParallel(o) && !isCastKernel(o);
    };
    if (llvm::any_of(writers.lookup(stripViews(k.getInputs()[0])),
                     elementwise) ||
        llvm::any_of(readers.lookup(stripViews(k.getOutputs()[0])),
                     elementwise))
      ++s.castKernelsNextToElementwise;
  });
}

dlc::PlanStats dlc::computePlanStats(ModuleOp planned) {
  PlanStats s;
  countCastKernels(planned, s);
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
