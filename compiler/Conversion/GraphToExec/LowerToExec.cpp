//===- LowerToExec.cpp - dlgraph -> dlexec lowering ----------------------===//
// Turns dlgraph variables and func.func graphs into dlexec variables and step
// functions: buffers, generated kernels, library calls and builtin kernels.
// Each op family's lowering lives in ToExec/<Family>.cpp and registers itself
// in the LoweringTable built here.
#include "compiler/Conversion/GraphToExec/Passes.h"
#include "compiler/Conversion/GraphToExec/FuncLowering.h"

#include "dialects/Exec/ExecAttributes.h"
#include "dialects/Graph/GraphAttributes.h"
#include "dialects/Graph/GraphOps.h"
#include "dialects/PhaseRecords.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSet.h"

namespace dlc {
#define GEN_PASS_DEF_LOWERTOEXECPASS
#include "compiler/Conversion/GraphToExec/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;
using namespace dlc::lowering;
namespace g = dlc::graph;
namespace x = dlc::exec;

void dlc::lowering::populateLowerToExecTable(LoweringTable &table) {
  populateLowerToExecVariables(table);
  populateLowerToExecElementwise(table);
  populateLowerToExecNormalization(table);
  populateLowerToExecLinear(table);
  populateLowerToExecConv(table);
  populateLowerToExecPool(table);
  populateLowerToExecReductions(table);
  populateLowerToExecDataMovement(table);
  populateLowerToExecLosses(table);
  populateLowerToExecRandom(table);
  populateLowerToExecOptimizers(table);
  populateLowerToExecCollectives(table);
  populateLowerToExecAttention(table);
}

namespace {

/// Carries what the dlgraph phases recorded for codegen and `dlc --stats`
/// from |f| to |ef| (the gradient buckets and the remat summary) under their
/// dlexec names (dialects/Exec/ExecAttributes.h).
void carryRecords(func::FuncOp f, x::FuncOp ef) {
  if (Attribute buckets = f->getAttr(g::kBucketsAttr))
    ef->setAttr(x::kBucketsAttr, buckets);
  for (StringRef key : records::kRematSummaryKeys)
    if (Attribute v = f->getAttr((g::kRematSummaryPrefix + key).str()))
      ef->setAttr((x::kRematSummaryPrefix + key).str(), v);
}

struct LowerToExecPass : dlc::impl::LowerToExecPassBase<LowerToExecPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The pipeline record moves to its dlexec name for the package writer.
    if (Attribute record = module->removeAttr(g::kPipelineAttr))
      module->setAttr(x::kPipelineAttr, record);
    // The attention fusion's record is read (by `dlc --stats`) before.
    module->removeAttr(g::kAttentionFusionAttr);
    llvm::StringSet<> symbols;
    LoweringTable table;
    populateLowerToExecTable(table);
    for (Operation &op : module.getBody()->getOperations())
      if (auto s =
              op.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName()))
        symbols.insert(s.getValue());

    SmallVector<Operation *> toErase;
    for (Operation &op :
         llvm::make_early_inc_range(module.getBody()->getOperations())) {
      if (auto v = dyn_cast<g::VariableOp>(op)) {
        OpBuilder mb(v);
        StringRef kind = v.getTrainable() ? "parameter"
                         : v->hasAttr(g::kOptimizerStateAttr)
                             ? "optimizer_state"
                             : "buffer";
        x::VariableOp::create(mb, v.getLoc(), v.getSymNameAttr(),
                              TypeAttr::get(toMemRef(v.getType())),
                              mb.getStringAttr(kind), v.getInitialValueAttr());
        toErase.push_back(v);
      }
    }
    for (auto f : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (f.isDeclaration()) {
        f.emitError() << "dlgraph-lower-to-dlexec: function '" << f.getName()
                      << "' has no body";
        return signalPassFailure();
      }
      if (!f.getBody().hasOneBlock()) {
        f.emitError() << "dlgraph-lower-to-dlexec: function '" << f.getName()
                      << "' must have a single block (straight-line code)";
        return signalPassFailure();
      }
      OpBuilder mb(f);
      auto ef =
          x::FuncOp::create(mb, f.getLoc(), f.getSymNameAttr(), IntegerAttr());
      carryRecords(f, ef);
      FuncLowering lowering(module, f, ef, symbols, table);
      if (failed(lowering.run()))
        return signalPassFailure();
      toErase.push_back(f);
    }
    for (Operation *op : toErase)
      op->erase();
  }
};

} // namespace

void dlc::buildGraphToExecPipeline(OpPassManager &pm) {
  pm.addPass(createFoldDataMovementPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createLowerToExecPass());
}
