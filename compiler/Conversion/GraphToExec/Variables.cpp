//===- Variables.cpp - variables, constants and results to dlexec --------===//
// Lowers dlgraph.read_variable / write_variable, dlgraph.constant and the
// function's results: they define buffers or record what the function's end
// does (variable writes, outputs) rather than compute anything.
#include "compiler/Conversion/GraphToExec/FuncLowering.h"

using namespace mlir;
using namespace dlc;
using namespace dlc::lowering;
namespace g = dlc::graph;
namespace x = dlc::exec;

void dlc::lowering::populateLowerToExecVariables(LoweringTable &table) {
  table.add<g::ReadVariableOp>(
      [](FuncLowering &fl, g::ReadVariableOp r) -> LogicalResult {
        OpBuilder &b = fl.b;
        Location loc = r.getLoc();
        fl.buffers[r.getResult()] =
            x::VariableRefOp::create(b, loc, toMemRef(r.getType()),
                                     r.getVariableAttr())
                .getResult();
        return success();
      });
  table.add<g::WriteVariableOp>(
      [](FuncLowering &fl, g::WriteVariableOp w) -> LogicalResult {
        fl.writes.push_back({w.getVariableAttr().getAttr(), w.getValue()});
        return success();
      });
  table.add<g::ConstantOp>([](FuncLowering &fl,
                              g::ConstantOp c) -> LogicalResult {
    OpBuilder &b = fl.b;
    Location loc = c.getLoc();
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (dense && dense.isSplat()) {
      fl.splats[c.getResult()] = dense.getSplatValue<TypedAttr>();
      return success();
    }
    OpBuilder mb(fl.dst);
    std::string name = fl.uniqueSymbol("__constant");
    x::VariableOp::create(mb, loc, mb.getStringAttr(name),
                          TypeAttr::get(toMemRef(c.getType())),
                          mb.getStringAttr("constant"), c.getValue());
    fl.buffers[c.getResult()] =
        x::VariableRefOp::create(b, loc, toMemRef(c.getType()),
                                 FlatSymbolRefAttr::get(b.getStringAttr(name)))
            .getResult();
    return success();
  });
  table.add<func::ReturnOp>([](FuncLowering &fl,
                               func::ReturnOp r) -> LogicalResult {
    for (auto [i, v] : llvm::enumerate(r.getOperands())) {
      auto nameAttr =
          fl.src.getResultAttrOfType<StringAttr>(i, graph::kNameAttr);
      fl.results.push_back(
          {nameAttr ? nameAttr.str() : ("result" + Twine(i)).str(), v});
    }
    return success();
  });
}
