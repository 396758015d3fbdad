//===- Random.cpp - random dlgraph ops to dlexec builtin kernels ---------===//
// Training-mode dropout as the `dropout` builtin kernel (Philox stream keyed
// by the seed, counter by element and step), producing the output and mask.
#include "compiler/Conversion/GraphToExec/FuncLowering.h"

using namespace mlir;
using namespace dlc;
using namespace dlc::lowering;
namespace g = dlc::graph;
namespace x = dlc::exec;

void dlc::lowering::populateLowerToExecRandom(LoweringTable &table) {
  table.add<g::DropoutOp>(
      [](FuncLowering &fl, g::DropoutOp d) -> LogicalResult {
        OpBuilder &b = fl.b;
        Location loc = d.getLoc();
        if (failed(fl.checkFloat(d, d.getInput())))
          return failure();
        SmallVector<Value> bufs{fl.getBuffer(d.getInput(), loc),
                                fl.getBuffer(d.getStep(), loc)};
        Value y = fl.alloc(d.getResult().getType(), loc);
        Value mask = fl.alloc(d.getMask().getType(), loc);
        auto k = x::BuiltinKernelOp::create(
            b, loc, b.getStringAttr(fl.nextKernelName("dropout")),
            b.getStringAttr("dropout"), bufs, ValueRange{y, mask});
        k->setAttr("ratio", d.getRatioAttr());
        k->setAttr("seed", d.getSeedAttr());
        fl.buffers[d.getResult()] = y;
        fl.buffers[d.getMask()] = mask;
        return success();
      });
}
