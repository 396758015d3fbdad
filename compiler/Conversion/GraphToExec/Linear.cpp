//===- Linear.cpp - gemm and matmul to dlexec library calls --------------===//
// dlgraph.gemm and dlgraph.matmul as `gemm` / `batched_gemm` library calls,
// with a bias kernel for C shapes the library call does not broadcast.
#include "compiler/Conversion/GraphToExec/FuncLowering.h"

#include <algorithm>

using namespace mlir;
using namespace dlc;
using namespace dlc::lowering;
namespace g = dlc::graph;
namespace x = dlc::exec;

namespace {

/// True for the 16-bit float types the library calls take (LibraryCalls.h
/// ElementType: f32 accumulation, one rounding).
bool isLowPrecision(Type t) { return t.isF16() || t.isBF16(); }

/// Y = alpha * op(A) op(B) + beta * C as a `gemm` library call; C is passed
/// to the call when it is a bias row or a full [M, N] matrix, else added by
/// a `gemm_bias` kernel (f32, f64), or, for f16 and bf16, broadcast to
/// [M, N] by a `gemm_broadcast_c` copy first so that the call adds it in f32
/// and rounds Y once.
LogicalResult gemm(FuncLowering &fl, Operation *op, Value a, Value bm, Value c,
                   float alpha, float beta, bool transA, bool transB) {
  OpBuilder &b = fl.b;
  Location loc = op->getLoc();
  auto rt = cast<RankedTensorType>(op->getResult(0).getType());
  Type et = rt.getElementType();
  bool low = isLowPrecision(et);
  if (!et.isF32() && !et.isF64() && !low)
    return op->emitError() << "dlgraph-lower-to-dlexec: gemm supports f32, "
                              "f64, f16 and bf16, not "
                           << et;
  int64_t M = rt.getDimSize(0), N = rt.getDimSize(1);
  Value cBuf;
  bool epilogue = false;
  if (c && low && tensorType(c).getElementType() != et)
    return op->emitError() << "dlgraph-lower-to-dlexec: gemm C has element "
                              "type "
                           << tensorType(c).getElementType()
                           << " but the result is " << et
                           << "; a low-precision gemm takes one type";
  if (c) {
    auto ct = tensorType(c);
    bool isSplat = fl.splats.count(c) && !fl.buffers.count(c);
    if (!isSplat && ct.getRank() == 1 && ct.getDimSize(0) == N) {
      cBuf = fl.getBuffer(c, loc);
    } else if (!isSplat && ct.getRank() == 2 && ct.getDimSize(0) == 1 &&
               ct.getDimSize(1) == N && M != 1) {
      auto vt = MemRefType::get({N}, ct.getElementType());
      cBuf = x::ReshapeOp::create(b, loc, vt, fl.getBuffer(c, loc)).getResult();
    } else if (!isSplat && ct.getRank() == 2 && ct.getDimSize(0) == M &&
               ct.getDimSize(1) == N) {
      cBuf = fl.getBuffer(c, loc);
    } else if (low) {
      // A copy is exact: C broadcast to [M, N] joins the call's f32 sum.
      cBuf = fl.alloc(RankedTensorType::get({M, N}, et), loc);
      fl.buildKernel(
          loc, "gemm_broadcast_c", 2, {fl.kernelInput(c, rt.getShape(), loc)},
          {cBuf}, {b.getMultiDimIdentityMap(2)}, {}, ArrayAttr(),
          [](OpBuilder &, Location, ArrayRef<Value> v,
             ArrayRef<Value>) -> SmallVector<Value> { return {v[0]}; });
    } else {
      epilogue = true;
    }
  }
  SmallVector<Value> ins{fl.getBuffer(a, loc), fl.getBuffer(bm, loc)};
  if (cBuf)
    ins.push_back(cBuf);
  Value y = fl.alloc(rt, loc);
  auto call = x::LibraryCallOp::create(b, loc, b.getStringAttr("gemm"), ins,
                                       ValueRange{y});
  call->setAttr("trans_a", b.getBoolAttr(transA));
  call->setAttr("trans_b", b.getBoolAttr(transB));
  call->setAttr("alpha", b.getF32FloatAttr(alpha));
  call->setAttr("beta", b.getF32FloatAttr(cBuf ? beta : 0.0f));
  fl.buffers[op->getResult(0)] = y;
  if (!epilogue)
    return success();
  // Y = tmp + beta * C for C shapes the library call does not broadcast.
  SmallVector<KIn> kins{{y, TypedAttr(), b.getMultiDimIdentityMap(2)},
                        fl.kernelInput(c, rt.getShape(), loc)};
  Value out = fl.alloc(rt, loc);
  fl.buildKernel(loc, "gemm_bias", 2, kins, {out},
                 {b.getMultiDimIdentityMap(2)}, {}, ArrayAttr(),
                 [&](OpBuilder &kb, Location l, ArrayRef<Value> v,
                     ArrayRef<Value>) -> SmallVector<Value> {
                   Value cv = v[1];
                   if (beta != 1.0f)
                     cv = arith::MulFOp::create(kb, l, cv,
                                                constF(kb, l, et, beta));
                   return {arith::AddFOp::create(kb, l, v[0], cv)};
                 });
  fl.buffers[op->getResult(0)] = out;
  return success();
}

/// numpy.matmul: one `gemm` when the rhs has no batch dims (the lhs
/// batch folds into its rows), else a `batched_gemm`, which reads an operand
/// that is a last-two-dims transpose left unmaterialized
/// (FuncLowering::transposedSources) from the transpose's input with its
/// trans_a / trans_b flag: each matrix of the input is the transpose of the
/// operand's, and the batch strides are the same (m * k elements per
/// matrix either way).
LogicalResult matmul(FuncLowering &fl, g::MatMulOp op) {
  OpBuilder &b = fl.b;
  Location loc = op.getLoc();
  auto at = tensorType(op.getLhs()), bt = tensorType(op.getRhs());
  auto rt = op.getType();
  Type et = rt.getElementType();
  bool rhsIsMatrix = bt.getRank() <= 2;
  if (!et.isF32() && !isLowPrecision(et) && !(et.isF64() && rhsIsMatrix))
    return op.emitError() << "dlgraph-lower-to-dlexec: matmul supports f32, "
                             "f16 and bf16 (and f64 with a 1-D or 2-D rhs), "
                             "not "
                          << et;
  // Promote 1-D operands: [K] is [1, K] on the left, [K, 1] on the right.
  SmallVector<int64_t> as(at.getShape()), bs(bt.getShape());
  if (as.size() == 1)
    as.insert(as.begin(), 1);
  if (bs.size() == 1)
    bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  auto view = [&](Value buf, ArrayRef<int64_t> shape) -> Value {
    auto mt = MemRefType::get(shape, et);
    if (cast<MemRefType>(buf.getType()) == mt)
      return buf;
    return x::ReshapeOp::create(b, loc, mt, buf).getResult();
  };
  bool transA = false, transB = false;
  auto operandBuffer = [&](Value v, bool &trans) {
    if (Value src = fl.transposedSources.lookup(v)) {
      trans = true;
      return src;
    }
    return fl.getBuffer(v, loc);
  };
  Value aBuf = operandBuffer(op.getLhs(), transA),
        bBuf = operandBuffer(op.getRhs(), transB);
  int64_t batchA = 1;
  for (size_t i = 0; i + 2 < as.size(); ++i)
    batchA *= as[i];
  auto define = [&](Value y) {
    fl.buffers[op.getResult()] = view(y, rt.getShape());
  };
  if (bs.size() == 2) {
    // Rows of every lhs matrix stack into one [batch*M, K] operand.
    Value y = fl.alloc(RankedTensorType::get({batchA * m, n}, et), loc);
    auto call = x::LibraryCallOp::create(
        b, loc, b.getStringAttr("gemm"),
        ValueRange{view(aBuf, {batchA * m, k}), view(bBuf, {k, n})},
        ValueRange{y});
    call->setAttr("trans_a", b.getBoolAttr(false));
    call->setAttr("trans_b", b.getBoolAttr(false));
    call->setAttr("alpha", b.getF32FloatAttr(1.0f));
    call->setAttr("beta", b.getF32FloatAttr(0.0f));
    define(y);
    return success();
  }
  // Batch dims of the result, with each operand's stride (elements) per
  // batch dim: 0 where the operand is broadcast. Adjacent dims whose
  // strides chain (stride[i] = stride[i+1] * dim[i+1] for A, B and Y) merge
  // into one, so the usual cases need a single batch dim.
  size_t batchRank = std::max(as.size(), bs.size()) - 2;
  SmallVector<int64_t> dims, sa, sb;
  {
    SmallVector<int64_t> rd(batchRank), ra(batchRank), rb(batchRank);
    int64_t strideA = m * k, strideB = k * n;
    size_t offA = batchRank - (as.size() - 2);
    size_t offB = batchRank - (bs.size() - 2);
    for (size_t i = batchRank; i-- > 0;) {
      int64_t da = i < offA ? 1 : as[i - offA];
      int64_t db = i < offB ? 1 : bs[i - offB];
      rd[i] = std::max(da, db);
      ra[i] = da == 1 ? 0 : strideA;
      rb[i] = db == 1 ? 0 : strideB;
      strideA *= da;
      strideB *= db;
    }
    for (size_t i = 0; i < batchRank; ++i) {
      if (rd[i] == 1)
        continue;
      if (!dims.empty() && sa.back() == ra[i] * rd[i] &&
          sb.back() == rb[i] * rd[i]) {
        // Y is contiguous, so its strides always chain.
        dims.back() *= rd[i];
        sa.back() = ra[i];
        sb.back() = rb[i];
        continue;
      }
      dims.push_back(rd[i]);
      sa.push_back(ra[i]);
      sb.push_back(rb[i]);
    }
  }
  int64_t batch = 1;
  for (int64_t d : dims)
    batch *= d;
  Value y = fl.alloc(RankedTensorType::get({batch * m, n}, et), loc);
  auto call =
      x::LibraryCallOp::create(b, loc, b.getStringAttr("batched_gemm"),
                               ValueRange{view(aBuf, {at.getNumElements()}),
                                          view(bBuf, {bt.getNumElements()})},
                               ValueRange{y});
  call->setAttr("m", b.getI64IntegerAttr(m));
  call->setAttr("n", b.getI64IntegerAttr(n));
  call->setAttr("k", b.getI64IntegerAttr(k));
  call->setAttr("batch", b.getDenseI64ArrayAttr(dims));
  call->setAttr("stride_a", b.getDenseI64ArrayAttr(sa));
  call->setAttr("stride_b", b.getDenseI64ArrayAttr(sb));
  if (transA)
    call->setAttr("trans_a", b.getBoolAttr(true));
  if (transB)
    call->setAttr("trans_b", b.getBoolAttr(true));
  define(y);
  return success();
}

} // namespace

bool dlc::lowering::swapsLastTwoDims(ArrayRef<int64_t> perm) {
  size_t r = perm.size();
  if (r < 2 || perm[r - 2] != int64_t(r - 1) || perm[r - 1] != int64_t(r - 2))
    return false;
  for (size_t i = 0; i + 2 < r; ++i)
    if (perm[i] != int64_t(i))
      return false;
  return true;
}

bool dlc::lowering::matmulAbsorbsTranspose(g::MatMulOp mm, unsigned operand) {
  // A rank-2 (or 1-D) rhs makes the matmul one `gemm` whose rows stack the
  // lhs matrices, which no flag transposes one by one; 2-D transposes into
  // such gemms are folded before the lowering (FoldDataMovement).
  if (operand > 1 || tensorType(mm.getRhs()).getRank() < 3)
    return false;
  auto t = mm->getOperand(operand).getDefiningOp<g::TransposeOp>();
  return t && swapsLastTwoDims(t.getPerm());
}

void dlc::lowering::populateLowerToExecLinear(LoweringTable &table) {
  table.add<g::GemmOp>([](FuncLowering &fl, g::GemmOp gm) -> LogicalResult {
    return gemm(fl, gm, gm.getA(), gm.getB(), gm.getC(),
                gm.getAlpha().convertToFloat(), gm.getBeta().convertToFloat(),
                gm.getTransA(), gm.getTransB());
  });
  table.add<g::MatMulOp>([](FuncLowering &fl, g::MatMulOp mm) -> LogicalResult {
    return matmul(fl, mm);
  });
}
