//===- Collectives.cpp - dlgraph collectives to dlexec -------------------===//
// Lowers dlgraph.all_reduce to an in-place dlexec.all_reduce that runs
// asynchronously; FuncLowering::run puts the dlexec.wait before the first
// later use of the result.
#include "compiler/Conversion/GraphToExec/FuncLowering.h"

using namespace mlir;
using namespace dlc;
using namespace dlc::lowering;
namespace g = dlc::graph;
namespace x = dlc::exec;

/// True when |v|'s storage is read by nothing but the op that reads |v|
/// once: |v| and the values it views (reshapes) have one use each, and the
/// storage is computed by the function (not an argument, variable or
/// constant). Then the all-reduce may overwrite it.
static bool ownsItsStorage(Value v) {
  while (true) {
    if (!v.hasOneUse())
      return false;
    Operation *def = v.getDefiningOp();
    if (!def || isa<g::ReadVariableOp, g::ConstantOp>(def))
      return false;
    auto view = dyn_cast<g::ReshapeOp>(def);
    if (!view)
      return true;
    v = view.getInput();
  }
}

void dlc::lowering::populateLowerToExecCollectives(LoweringTable &table) {
  table.add<g::AllReduceOp>([](FuncLowering &fl,
                               g::AllReduceOp op) -> LogicalResult {
    if (failed(fl.checkFloat(op, op.getInput())))
      return failure();
    Value buffer;
    if (ownsItsStorage(op.getInput())) {
      buffer = fl.getBuffer(op.getInput(), op.getLoc());
      fl.buffers[op.getResult()] = buffer;
    } else {
      // The input lives on (or is persistent): reduce a copy.
      fl.elementwise(op, op.getInput(),
                     [](OpBuilder &, Location, ArrayRef<Value> in,
                        ArrayRef<Value>) { return SmallVector<Value>{in[0]}; });
      buffer = fl.buffers.lookup(op.getResult());
    }
    x::AllReduceOp::create(fl.b, op.getLoc(), buffer, op.getReductionAttr());
    fl.inFlight[op.getResult()] = buffer;
    return success();
  });
}
