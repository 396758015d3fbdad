//===- FoldDataMovement.cpp - data movement into its consumers' layouts ---===//
// Graph rewrites, run just before lowering, that remove copies which the
// consumers can absorb: a sum of zero pads that tile a dim (the gradient of a
// split) becomes a concat, whose inputs the lowering and the memory planner
// write straight into their slots; a 2-D transpose read by a gemm becomes the
// gemm's trans_a / trans_b flag.
#include "compiler/Conversion/GraphToExec/Passes.h"

#include "dialects/Graph/GraphOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <algorithm>

namespace dlc {
#define GEN_PASS_DEF_FOLDDATAMOVEMENTPASS
#include "compiler/Conversion/GraphToExec/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;
namespace g = dlc::graph;

namespace {

/// Whether |v| is a 2-D transpose (perm [1, 0]); its input in |src|.
bool isMatrixTranspose(Value v, Value &src) {
  auto t = v.getDefiningOp<g::TransposeOp>();
  if (!t || t.getPerm().size() != 2 || t.getPerm()[0] != 1)
    return false;
  src = t.getInput();
  return true;
}

/// The leaves of the add tree rooted at |root|: the operands of adds of
/// |root|'s type, followed through inner adds that only the tree reads.
void addTreeLeaves(g::AddOp root, SmallVectorImpl<Value> &leaves) {
  for (Value v : {root.getLhs(), root.getRhs()}) {
    auto inner = v.getDefiningOp<g::AddOp>();
    if (inner && inner.getType() == root.getType() && v.hasOneUse())
      addTreeLeaves(inner, leaves);
    else
      leaves.push_back(v);
  }
}

/// add(pad(a), add(pad(b), pad(c))) -> concat(a, b, c) when the pads are
/// zero pads of the sum's shape along one axis (step 1) whose slots tile that
/// axis without overlap, and only the sum reads each pad and inner add: the
/// gradient of a split or of slices that cover their input (a transformer's
/// fused QKV projection). Each slot then holds exactly its piece (x + 0 = x),
/// and the concat's inputs are written into their slots of one buffer (XLA's
/// and TVM's buffer assignment place a concatenate's operands in slices of
/// its output; see the concat lowering in ToExec/DataMovement.cpp) instead
/// of zero-filling one full-size buffer per piece and adding them. A sum
/// with any other contribution is left as it is.
struct SumOfPadsToConcat : OpRewritePattern<g::AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(g::AddOp add,
                                PatternRewriter &rewriter) const override {
    auto rt = add.getType();
    if (add->hasOneUse())
      if (auto outer = dyn_cast<g::AddOp>(*add->getUsers().begin());
          outer && outer.getType() == rt)
        return rewriter.notifyMatchFailure(add, "not the root of the sum");
    if (add.getLhs().getType() != rt || add.getRhs().getType() != rt)
      return rewriter.notifyMatchFailure(add, "broadcasting add");
    SmallVector<Value> leaves;
    addTreeLeaves(add, leaves);
    int64_t axis = -1;
    SmallVector<std::pair<int64_t, Value>> pieces;
    for (Value leaf : leaves) {
      auto pad = leaf.getDefiningOp<g::PadOp>();
      if (!pad || !leaf.hasOneUse() || pad.getValue().convertToDouble() != 0.0)
        return rewriter.notifyMatchFailure(add, "a leaf is not a zero pad");
      auto it = cast<RankedTensorType>(pad.getInput().getType());
      for (int64_t d = 0; d < rt.getRank(); ++d) {
        if (pad.getSteps()[d] != 1)
          return rewriter.notifyMatchFailure(add, "strided pad");
        if (it.getDimSize(d) == rt.getDimSize(d) && pad.getStarts()[d] == 0)
          continue;
        if (axis != -1 && axis != d)
          return rewriter.notifyMatchFailure(add, "pads along two axes");
        axis = d;
      }
      if (axis == -1)
        return rewriter.notifyMatchFailure(add, "a pad that pads nothing");
      pieces.push_back({pad.getStarts()[axis], pad.getInput()});
    }
    llvm::stable_sort(pieces,
                      [](auto &l, auto &r) { return l.first < r.first; });
    int64_t at = 0;
    for (auto &[start, v] : pieces) {
      if (start != at)
        return rewriter.notifyMatchFailure(add,
                                           "the pads do not tile the axis");
      at += cast<RankedTensorType>(v.getType()).getDimSize(axis);
    }
    if (at != rt.getDimSize(axis))
      return rewriter.notifyMatchFailure(add, "the pads do not tile the axis");
    SmallVector<Value> inputs;
    for (auto &p : pieces)
      inputs.push_back(p.second);
    rewriter.replaceOpWithNewOp<g::ConcatOp>(add, rt, inputs,
                                             rewriter.getI64IntegerAttr(axis));
    return success();
  }
};

/// gemm(transpose(A), B, trans_a) -> gemm(A, B, !trans_a), and the same for
/// B: the library call reads the operand transposed (cuBLASLt's transa /
/// transb, the host BLAS's 'T') instead of a transpose kernel copying it.
struct TransposeIntoGemm : OpRewritePattern<g::GemmOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(g::GemmOp gemm,
                                PatternRewriter &rewriter) const override {
    Value a = gemm.getA(), bm = gemm.getB(), src;
    bool ta = gemm.getTransA(), tb = gemm.getTransB();
    bool changed = false;
    if (isMatrixTranspose(a, src)) {
      a = src;
      ta = !ta;
      changed = true;
    }
    if (isMatrixTranspose(bm, src)) {
      bm = src;
      tb = !tb;
      changed = true;
    }
    if (!changed)
      return rewriter.notifyMatchFailure(gemm, "no transposed operand");
    rewriter.modifyOpInPlace(gemm, [&] {
      gemm.getAMutable().assign(a);
      gemm.getBMutable().assign(bm);
      gemm.setTransA(ta);
      gemm.setTransB(tb);
    });
    return success();
  }
};

/// matmul(X, transpose(W)) with a 2-D W (an exported nn.Linear: X W^T), and
/// matmul(transpose(A), B) of two matrices, as a gemm (X's leading dims
/// folded into its rows by reshapes) that TransposeIntoGemm then folds the
/// transpose into.
struct TransposedMatMulToGemm : OpRewritePattern<g::MatMulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(g::MatMulOp mm,
                                PatternRewriter &rewriter) const override {
    auto lt = cast<RankedTensorType>(mm.getLhs().getType());
    auto rt = cast<RankedTensorType>(mm.getRhs().getType());
    auto yt = mm.getType();
    Value src;
    if (rt.getRank() != 2 || lt.getRank() < 2 ||
        !(isMatrixTranspose(mm.getRhs(), src) ||
          (lt.getRank() == 2 && isMatrixTranspose(mm.getLhs(), src))))
      return rewriter.notifyMatchFailure(mm, "no foldable transposed matrix");
    Location loc = mm.getLoc();
    Type et = yt.getElementType();
    int64_t k = lt.getShape().back(), n = rt.getDimSize(1);
    int64_t m = lt.getNumElements() / k;
    Value lhs = mm.getLhs();
    if (lt.getRank() != 2)
      lhs = g::ReshapeOp::create(rewriter, loc,
                                 RankedTensorType::get({m, k}, et), lhs);
    Value y = g::GemmOp::create(
        rewriter, loc, RankedTensorType::get({m, n}, et), lhs, mm.getRhs(),
        /*c=*/Value(), rewriter.getF32FloatAttr(1.0f),
        rewriter.getF32FloatAttr(1.0f), rewriter.getBoolAttr(false),
        rewriter.getBoolAttr(false));
    if (yt.getRank() != 2)
      y = g::ReshapeOp::create(rewriter, loc, yt, y);
    rewriter.replaceOp(mm, y);
    return success();
  }
};

struct FoldDataMovementPass
    : dlc::impl::FoldDataMovementPassBase<FoldDataMovementPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFoldDataMovementPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void dlc::populateFoldDataMovementPatterns(RewritePatternSet &patterns) {
  patterns.add<SumOfPadsToConcat, TransposeIntoGemm, TransposedMatMulToGemm>(
      patterns.getContext());
}
