//===- Attention.cpp - fused attention to dlexec builtin kernels ----------===//
// dlgraph.attention as the `attention` builtin kernel (O and the row
// log-sum-exp); dlgraph.attention_grad as two kernels without atomics:
// `attention_grad_query` (dQ, one query row per thread, and delta =
// rowsum(dO ∘ O)) then `attention_grad_key_value` (dK and dV, one key row
// per thread, summing its query heads and rows in a fixed order). The rows'
// statistics (delta, max, 1 / sum) are a [B, Hq, Sq, 3] f32 buffer of the
// arena; nothing of size Sq x Skv is.
#include "compiler/Conversion/GraphToExec/FuncLowering.h"

using namespace mlir;
using namespace dlc;
using namespace dlc::lowering;
namespace g = dlc::graph;
namespace x = dlc::exec;

/// Copies the attention attributes of |from| onto the builtin |k|, with
/// seq_first as four i64 flags.
template <typename OpT>
static void copyAttentionAttrs(OpBuilder &b, OpT from, Operation *k) {
  k->setAttr("scale", from.getScaleAttr());
  k->setAttr("causal", b.getI64IntegerAttr(from.getCausal()));
  SmallVector<int64_t> flags(4, 0);
  for (auto [i, f] : llvm::enumerate(from.getSeqFirst()))
    flags[i] = f;
  k->setAttr("seq_first", b.getDenseI64ArrayAttr(flags));
  k->setAttr("dropout_ratio", from.getDropoutRatioAttr());
  k->setAttr("seed", from.getSeedAttr());
}

/// The optional mask and step buffers, in the kernels' operand order.
template <typename OpT>
static void appendOptional(FuncLowering &fl, OpT op,
                           SmallVectorImpl<Value> &ins) {
  if (Value m = op.getMask())
    ins.push_back(fl.getBuffer(m, op.getLoc()));
  if (Value s = op.getStep())
    ins.push_back(fl.getBuffer(s, op.getLoc()));
}

void dlc::lowering::populateLowerToExecAttention(LoweringTable &table) {
  table.add<g::AttentionOp>(
      [](FuncLowering &fl, g::AttentionOp a) -> LogicalResult {
        OpBuilder &b = fl.b;
        Location loc = a.getLoc();
        SmallVector<Value> ins;
        for (Value v : {a.getQuery(), a.getKey(), a.getValue()})
          ins.push_back(fl.getBuffer(v, loc));
        appendOptional(fl, a, ins);
        Value o = fl.alloc(a.getResult().getType(), loc);
        Value lse = fl.alloc(a.getLse().getType(), loc);
        auto k = x::BuiltinKernelOp::create(
            b, loc, b.getStringAttr(fl.nextKernelName("attention")),
            b.getStringAttr("attention"), ins, ValueRange{o, lse});
        copyAttentionAttrs(b, a, k);
        fl.buffers[a.getResult()] = o;
        fl.buffers[a.getLse()] = lse;
        return success();
      });
  table.add<g::AttentionGradOp>(
      [](FuncLowering &fl, g::AttentionGradOp a) -> LogicalResult {
        OpBuilder &b = fl.b;
        Location loc = a.getLoc();
        Value q = fl.getBuffer(a.getQuery(), loc),
              k = fl.getBuffer(a.getKey(), loc),
              v = fl.getBuffer(a.getValue(), loc),
              o = fl.getBuffer(a.getResult(), loc),
              lse = fl.getBuffer(a.getLse(), loc),
              dO = fl.getBuffer(a.getResultGrad(), loc);
        Value dq = fl.alloc(a.getQueryGrad().getType(), loc);
        // Per query row (delta, row max, 1 / row sum), f32.
        auto lseType = cast<RankedTensorType>(a.getLse().getType());
        SmallVector<int64_t> statsShape(lseType.getShape());
        statsShape.push_back(3);
        Value delta = fl.alloc(lseType.clone(statsShape), loc);
        SmallVector<Value> qIns{q, k, v, o, lse, dO};
        appendOptional(fl, a, qIns);
        auto kq = x::BuiltinKernelOp::create(
            b, loc, b.getStringAttr(fl.nextKernelName("attention_grad_query")),
            b.getStringAttr("attention_grad_query"), qIns,
            ValueRange{dq, delta});
        copyAttentionAttrs(b, a, kq);
        Value dk = fl.alloc(a.getKeyGrad().getType(), loc);
        Value dv = fl.alloc(a.getValueGrad().getType(), loc);
        SmallVector<Value> kvIns{q, k, v, lse, delta, dO};
        appendOptional(fl, a, kvIns);
        auto kkv = x::BuiltinKernelOp::create(
            b, loc,
            b.getStringAttr(fl.nextKernelName("attention_grad_key_value")),
            b.getStringAttr("attention_grad_key_value"), kvIns,
            ValueRange{dk, dv});
        copyAttentionAttrs(b, a, kkv);
        fl.buffers[a.getQueryGrad()] = dq;
        fl.buffers[a.getKeyGrad()] = dk;
        fl.buffers[a.getValueGrad()] = dv;
        return success();
      });
}
