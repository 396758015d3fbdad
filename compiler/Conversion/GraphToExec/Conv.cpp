//===- Conv.cpp - convolutions to dlexec library calls -------------------===//
// dlgraph.conv and its backward ops as conv2d_* / conv3d_* library calls
// (cuDNN on CUDA, the CPU library on the host) carrying the conv attributes.
#include "compiler/Conversion/GraphToExec/FuncLowering.h"

using namespace mlir;
using namespace dlc;
using namespace dlc::lowering;
namespace g = dlc::graph;
namespace x = dlc::exec;

namespace {

/// A library call to |callee| reading the buffers of the non-null values of
/// |ins| into a new buffer for |op|'s only result, with |op|'s strides, pads,
/// dilations and group (1 when |op| has none).
LogicalResult library(FuncLowering &fl, Operation *op, StringRef callee,
                      ArrayRef<Value> ins) {
  OpBuilder &b = fl.b;
  Location loc = op->getLoc();
  SmallVector<Value> bufs;
  for (Value v : ins)
    if (v)
      bufs.push_back(fl.getBuffer(v, loc));
  Value out = fl.alloc(op->getResult(0).getType(), loc);
  auto call = x::LibraryCallOp::create(b, loc, b.getStringAttr(callee), bufs,
                                       ValueRange{out});
  for (StringRef n : {"strides", "pads", "dilations", "group"})
    if (Attribute a = op->getAttr(n))
      call->setAttr(n, a);
  if (!call->hasAttr("group"))
    call->setAttr("group", b.getI64IntegerAttr(1));
  fl.buffers[op->getResult(0)] = out;
  return success();
}

} // namespace

void dlc::lowering::populateLowerToExecConv(LoweringTable &table) {
  table.add<g::ConvOp>([](FuncLowering &fl, g::ConvOp c) -> LogicalResult {
    return library(fl, c,
                   tensorType(c.getInput()).getRank() == 5 ? "conv3d_forward"
                                                           : "conv2d_forward",
                   {c.getInput(), c.getFilter(), c.getBias()});
  });
  table.add<g::ConvBackwardDataOp>(
      [](FuncLowering &fl, g::ConvBackwardDataOp c) -> LogicalResult {
        return library(fl, c,
                       tensorType(c.getFilter()).getRank() == 5
                           ? "conv3d_backward_data"
                           : "conv2d_backward_data",
                       {c.getResultGrad(), c.getFilter()});
      });
  table.add<g::ConvBackwardFilterOp>(
      [](FuncLowering &fl, g::ConvBackwardFilterOp c) -> LogicalResult {
        return library(fl, c,
                       tensorType(c.getInput()).getRank() == 5
                           ? "conv3d_backward_filter"
                           : "conv2d_backward_filter",
                       {c.getInput(), c.getResultGrad()});
      });
}
