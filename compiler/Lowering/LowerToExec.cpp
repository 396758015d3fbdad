//===- LowerToExec.cpp - dlgraph -> dlexec lowering
//-------------------------===//
// Turns dlgraph variables and func.func graphs into dlexec variables and step
// functions: buffers, generated kernels, library calls and builtin kernels.
#include "compiler/Lowering/Passes.h"

#include "dialects/Graph/GraphOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstdio>
#include <cstdlib>

namespace dlc {
#define GEN_PASS_DEF_LOWERTOEXECPASS
#include "compiler/Lowering/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;
namespace g = dlc::graph;
namespace x = dlc::exec;

namespace {

MemRefType toMemRef(Type t) {
  auto rt = cast<RankedTensorType>(t);
  return MemRefType::get(rt.getShape(), rt.getElementType());
}

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The buffer a view was made from (follows dlexec.reshape).
Value rootOf(Value v) {
  while (auto r = v.getDefiningOp<x::ReshapeOp>())
    v = r.getSource();
  return v;
}

/// Maps the loops of an iteration space of shape |outShape| to the elements of
/// an operand of shape |inShape| under NumPy broadcasting: trailing dims line
/// up, and a size-1 operand dim against a larger loop maps to constant 0.
AffineMap broadcastMap(ArrayRef<int64_t> inShape, ArrayRef<int64_t> outShape,
                       MLIRContext *ctx) {
  unsigned r = inShape.size(), R = outShape.size();
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i < r; ++i) {
    unsigned od = R - r + i;
    if (inShape[i] == 1 && outShape[od] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(od, ctx));
  }
  return AffineMap::get(R, 0, exprs, ctx);
}

/// The value of an f32 attribute as the shortest decimal that round-trips
/// (0.9f -> 0.9), so that derived constants such as 1 - beta1 are computed
/// the way PyTorch computes them from the Python float.
double decimalValue(FloatAttr a) {
  double d = a.getValueAsDouble();
  if (!a.getType().isF32())
    return d;
  float f = (float)d;
  for (int digits = 1; digits <= 9; ++digits) {
    char buf[48];
    std::snprintf(buf, sizeof(buf), "%.*g", digits, d);
    double shortest = std::strtod(buf, nullptr);
    if ((float)shortest == f)
      return shortest;
  }
  return d;
}

Value constF(OpBuilder &b, Location loc, Type t, double v) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(t, v)).getResult();
}

/// One kernel operand: a buffer read through |map|, or a splat constant that
/// is materialized inside the kernel body.
struct KIn {
  Value buffer;
  TypedAttr scalar;
  AffineMap map;
};

using BodyFn = llvm::function_ref<SmallVector<Value>(
    OpBuilder &, Location, ArrayRef<Value> ins, ArrayRef<Value> outs)>;

/// Lowers one func.func to one dlexec.func.
class FuncLowering {
public:
  FuncLowering(ModuleOp module, func::FuncOp src, x::FuncOp dst,
               llvm::StringSet<> &symbols)
      : module(module), src(src), dst(dst), b(dst.getContext()),
        symbols(symbols) {}

  LogicalResult run();

private:
  LogicalResult lowerOp(Operation *op);
  LogicalResult finishWrites();

  std::string nextKernelName(StringRef what) {
    return (dst.getSymName() + "_k" + Twine(counter++) + "_" + what).str();
  }
  std::string uniqueSymbol(StringRef base) {
    std::string name = base.str();
    for (int i = 0; symbols.contains(name); ++i)
      name = (base + "_" + Twine(i)).str();
    symbols.insert(name);
    return name;
  }

  Value getBuffer(Value v, Location loc);
  Value alloc(Type tensorTy, Location loc) {
    return x::AllocOp::create(b, loc, toMemRef(tensorTy), IntegerAttr())
        .getResult();
  }
  KIn kernelInput(Value v, ArrayRef<int64_t> loopShape, Location loc);
  x::KernelOp buildKernel(Location loc, StringRef what, unsigned numLoops,
                          ArrayRef<KIn> ins, ArrayRef<Value> outs,
                          ArrayRef<AffineMap> outMaps,
                          ArrayRef<StringRef> iters, ArrayAttr init,
                          BodyFn body);
  /// An all-parallel kernel over the result's shape reading |operands| with
  /// broadcasting; defines the buffer of |op|'s only result.
  void elementwise(Operation *op, ValueRange operands, BodyFn body);
  LogicalResult reduce(Operation *op, Value input, ArrayRef<int64_t> axes,
                       bool keepdims, StringRef kind);
  LogicalResult gemm(Operation *op, Value a, Value bm, Value c, float alpha,
                     float beta, bool transA, bool transB);
  /// numpy.matmul: one `gemm` when the rhs has no batch dims (the lhs
  /// batch folds into its rows), else a `batched_gemm`.
  LogicalResult matmul(dlc::graph::MatMulOp op);

  ModuleOp module;
  func::FuncOp src;
  x::FuncOp dst;
  OpBuilder b;
  llvm::StringSet<> &symbols;
  DenseMap<Value, Value> buffers;
  DenseMap<Value, TypedAttr> splats;
  SmallVector<std::pair<StringAttr, Value>> writes;
  SmallVector<std::pair<std::string, Value>> results;
  int counter = 0;
};

Value FuncLowering::getBuffer(Value v, Location loc) {
  auto it = buffers.find(v);
  if (it != buffers.end())
    return it->second;
  // A splat constant needed as a buffer: a constant variable.
  auto sit = splats.find(v);
  auto tt = tensorType(v);
  Attribute init = DenseElementsAttr::get(tt, sit->second);
  OpBuilder mb(dst);
  std::string name = uniqueSymbol("__constant");
  x::VariableOp::create(mb, loc, mb.getStringAttr(name),
                        TypeAttr::get(toMemRef(tt)),
                        mb.getStringAttr("constant"), cast<ElementsAttr>(init));
  Value ref =
      x::VariableRefOp::create(b, loc, toMemRef(tt),
                               FlatSymbolRefAttr::get(b.getStringAttr(name)))
          .getResult();
  buffers[v] = ref;
  return ref;
}

KIn FuncLowering::kernelInput(Value v, ArrayRef<int64_t> loopShape,
                              Location loc) {
  AffineMap map =
      broadcastMap(tensorType(v).getShape(), loopShape, b.getContext());
  auto sit = splats.find(v);
  if (sit != splats.end())
    return {Value(), sit->second, map};
  return {getBuffer(v, loc), TypedAttr(), map};
}

x::KernelOp FuncLowering::buildKernel(Location loc, StringRef what,
                                      unsigned numLoops, ArrayRef<KIn> ins,
                                      ArrayRef<Value> outs,
                                      ArrayRef<AffineMap> outMaps,
                                      ArrayRef<StringRef> iters, ArrayAttr init,
                                      BodyFn body) {
  SmallVector<Value> inBufs;
  SmallVector<AffineMap> maps;
  for (const KIn &in : ins)
    if (in.buffer) {
      inBufs.push_back(in.buffer);
      maps.push_back(in.map);
    }
  maps.append(outMaps.begin(), outMaps.end());
  SmallVector<StringRef> iterNames(iters.begin(), iters.end());
  if (iterNames.empty())
    iterNames.assign(numLoops, "parallel");
  auto k = x::KernelOp::create(b, loc, b.getStringAttr(nextKernelName(what)),
                               inBufs, outs, b.getAffineMapArrayAttr(maps),
                               b.getStrArrayAttr(iterNames), init);
  Block *blk = new Block();
  k.getBody().push_back(blk);
  for (Value v : inBufs)
    blk->addArgument(cast<MemRefType>(v.getType()).getElementType(), loc);
  for (Value v : outs)
    blk->addArgument(cast<MemRefType>(v.getType()).getElementType(), loc);
  OpBuilder kb = OpBuilder::atBlockEnd(blk);
  SmallVector<Value> inVals, outVals;
  unsigned argNo = 0;
  for (const KIn &in : ins) {
    if (in.buffer)
      inVals.push_back(blk->getArgument(argNo++));
    else
      inVals.push_back(arith::ConstantOp::create(kb, loc, in.scalar));
  }
  for (unsigned i = 0; i < outs.size(); ++i)
    outVals.push_back(blk->getArgument(argNo++));
  SmallVector<Value> yielded = body(kb, loc, inVals, outVals);
  x::YieldOp::create(kb, loc, yielded);
  return k;
}

void FuncLowering::elementwise(Operation *op, ValueRange operands,
                               BodyFn body) {
  Location loc = op->getLoc();
  auto rt = cast<RankedTensorType>(op->getResult(0).getType());
  SmallVector<KIn> ins;
  for (Value v : operands)
    ins.push_back(kernelInput(v, rt.getShape(), loc));
  Value out = alloc(rt, loc);
  AffineMap id = b.getMultiDimIdentityMap(rt.getRank());
  StringRef what = op->getName().stripDialect();
  buildKernel(loc, what, rt.getRank(), ins, {out}, {id}, {}, ArrayAttr(), body);
  buffers[op->getResult(0)] = out;
}

LogicalResult FuncLowering::reduce(Operation *op, Value input,
                                   ArrayRef<int64_t> axes, bool keepdims,
                                   StringRef kind) {
  Location loc = op->getLoc();
  auto in = tensorType(input);
  Type et = in.getElementType();
  if (!isa<FloatType>(et))
    return op->emitError() << "dlgraph-lower-to-dlexec: '" << op->getName()
                           << "' supports float tensors, not " << et;
  unsigned rank = in.getRank();
  MLIRContext *ctx = b.getContext();
  SmallVector<StringRef> iters;
  SmallVector<AffineExpr> outExprs;
  int64_t count = 1;
  for (unsigned i = 0; i < rank; ++i) {
    bool reduced = llvm::is_contained(axes, (int64_t)i);
    iters.push_back(reduced ? "reduction" : "parallel");
    if (reduced) {
      count *= in.getDimSize(i);
      if (keepdims)
        outExprs.push_back(getAffineConstantExpr(0, ctx));
    } else {
      outExprs.push_back(getAffineDimExpr(i, ctx));
    }
  }
  auto outMap = AffineMap::get(rank, 0, outExprs, ctx);
  auto ft = cast<FloatType>(et);
  Attribute initAttr =
      kind == "max"
          ? (Attribute)b.getFloatAttr(
                ft, APFloat::getInf(ft.getFloatSemantics(), /*Negative=*/true))
          : (Attribute)b.getFloatAttr(ft, kind == "prod" ? 1.0 : 0.0);
  Value out = alloc(op->getResult(0).getType(), loc);
  KIn kin{getBuffer(input, loc), TypedAttr(), b.getMultiDimIdentityMap(rank)};
  double scale = 1.0 / (double)count;
  buildKernel(loc, op->getName().stripDialect(), rank, {kin}, {out}, {outMap},
              iters, b.getArrayAttr({initAttr}),
              [&](OpBuilder &kb, Location l, ArrayRef<Value> ins,
                  ArrayRef<Value> outs) -> SmallVector<Value> {
                Value v = ins[0];
                if (kind == "max")
                  return {arith::MaximumFOp::create(kb, l, outs[0], v)};
                if (kind == "prod")
                  return {arith::MulFOp::create(kb, l, outs[0], v)};
                if (kind == "mean")
                  v = arith::MulFOp::create(kb, l, v, constF(kb, l, et, scale));
                return {arith::AddFOp::create(kb, l, outs[0], v)};
              });
  buffers[op->getResult(0)] = out;
  return success();
}

LogicalResult FuncLowering::gemm(Operation *op, Value a, Value bm, Value c,
                                 float alpha, float beta, bool transA,
                                 bool transB) {
  Location loc = op->getLoc();
  auto rt = cast<RankedTensorType>(op->getResult(0).getType());
  if (!rt.getElementType().isF32() && !rt.getElementType().isF64())
    return op->emitError() << "dlgraph-lower-to-dlexec: gemm supports f32 and "
                              "f64, not "
                           << rt.getElementType();
  int64_t M = rt.getDimSize(0), N = rt.getDimSize(1);
  Value cBuf;
  bool epilogue = false;
  if (c) {
    auto ct = tensorType(c);
    bool isSplat = splats.count(c) && !buffers.count(c);
    if (!isSplat && ct.getRank() == 1 && ct.getDimSize(0) == N) {
      cBuf = getBuffer(c, loc);
    } else if (!isSplat && ct.getRank() == 2 && ct.getDimSize(0) == 1 &&
               ct.getDimSize(1) == N && M != 1) {
      auto vt = MemRefType::get({N}, ct.getElementType());
      cBuf = x::ReshapeOp::create(b, loc, vt, getBuffer(c, loc)).getResult();
    } else if (!isSplat && ct.getRank() == 2 && ct.getDimSize(0) == M &&
               ct.getDimSize(1) == N) {
      cBuf = getBuffer(c, loc);
    } else {
      epilogue = true;
    }
  }
  SmallVector<Value> ins{getBuffer(a, loc), getBuffer(bm, loc)};
  if (cBuf)
    ins.push_back(cBuf);
  Value y = alloc(rt, loc);
  auto call = x::LibraryCallOp::create(b, loc, b.getStringAttr("gemm"), ins,
                                       ValueRange{y});
  call->setAttr("trans_a", b.getBoolAttr(transA));
  call->setAttr("trans_b", b.getBoolAttr(transB));
  call->setAttr("alpha", b.getF32FloatAttr(alpha));
  call->setAttr("beta", b.getF32FloatAttr(cBuf ? beta : 0.0f));
  buffers[op->getResult(0)] = y;
  if (!epilogue)
    return success();
  // Y = tmp + beta * C for C shapes the library call does not broadcast.
  SmallVector<KIn> kins{{y, TypedAttr(), b.getMultiDimIdentityMap(2)},
                        kernelInput(c, rt.getShape(), loc)};
  Value out = alloc(rt, loc);
  Type et = rt.getElementType();
  buildKernel(loc, "gemm_bias", 2, kins, {out}, {b.getMultiDimIdentityMap(2)},
              {}, ArrayAttr(),
              [&](OpBuilder &kb, Location l, ArrayRef<Value> v,
                  ArrayRef<Value>) -> SmallVector<Value> {
                Value cv = v[1];
                if (beta != 1.0f)
                  cv =
                      arith::MulFOp::create(kb, l, cv, constF(kb, l, et, beta));
                return {arith::AddFOp::create(kb, l, v[0], cv)};
              });
  buffers[op->getResult(0)] = out;
  return success();
}

LogicalResult FuncLowering::matmul(g::MatMulOp op) {
  Location loc = op.getLoc();
  auto at = tensorType(op.getLhs()), bt = tensorType(op.getRhs());
  auto rt = op.getType();
  Type et = rt.getElementType();
  bool rhsIsMatrix = bt.getRank() <= 2;
  if (!et.isF32() && !(et.isF64() && rhsIsMatrix))
    return op.emitError() << "dlgraph-lower-to-dlexec: matmul supports f32 "
                             "(and f64 with a 1-D or 2-D rhs), not "
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
  Value aBuf = getBuffer(op.getLhs(), loc), bBuf = getBuffer(op.getRhs(), loc);
  int64_t batchA = 1;
  for (size_t i = 0; i + 2 < as.size(); ++i)
    batchA *= as[i];
  auto define = [&](Value y) {
    buffers[op.getResult()] = view(y, rt.getShape());
  };
  if (bs.size() == 2) {
    // Rows of every lhs matrix stack into one [batch*M, K] operand.
    Value y = alloc(RankedTensorType::get({batchA * m, n}, et), loc);
    auto call = x::LibraryCallOp::create(
        b, loc, b.getStringAttr("gemm"),
        ValueRange{view(aBuf, {batchA * m, k}), bBuf}, ValueRange{y});
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
  Value y = alloc(RankedTensorType::get({batch * m, n}, et), loc);
  auto call = x::LibraryCallOp::create(
      b, loc, b.getStringAttr("batched_gemm"),
      ValueRange{view(aBuf, {at.getNumElements()}),
                 view(bBuf, {bt.getNumElements()})},
      ValueRange{y});
  call->setAttr("m", b.getI64IntegerAttr(m));
  call->setAttr("n", b.getI64IntegerAttr(n));
  call->setAttr("k", b.getI64IntegerAttr(k));
  call->setAttr("batch", b.getDenseI64ArrayAttr(dims));
  call->setAttr("stride_a", b.getDenseI64ArrayAttr(sa));
  call->setAttr("stride_b", b.getDenseI64ArrayAttr(sb));
  define(y);
  return success();
}

enum class ElemKind { Float, Int, Bool, Other };
ElemKind kindOf(Type t) {
  if (isa<FloatType>(t))
    return ElemKind::Float;
  if (t.isInteger(1))
    return ElemKind::Bool;
  if (isa<IntegerType>(t))
    return ElemKind::Int;
  return ElemKind::Other;
}

/// The scalar body of a binary dlgraph op, or null when |t| is unsupported.
Value binaryScalar(OpBuilder &b, Location loc, StringRef op, Value l, Value r) {
  ElemKind k = kindOf(l.getType());
  if (k == ElemKind::Float) {
    if (op == "add")
      return arith::AddFOp::create(b, loc, l, r);
    if (op == "sub")
      return arith::SubFOp::create(b, loc, l, r);
    if (op == "mul")
      return arith::MulFOp::create(b, loc, l, r);
    if (op == "div")
      return arith::DivFOp::create(b, loc, l, r);
    if (op == "max")
      return arith::MaximumFOp::create(b, loc, l, r);
    if (op == "min")
      return arith::MinimumFOp::create(b, loc, l, r);
    if (op == "pow")
      return math::PowFOp::create(b, loc, l, r);
    if (op == "fmod")
      return arith::RemFOp::create(b, loc, l, r);
  }
  if (k == ElemKind::Int) {
    if (op == "add")
      return arith::AddIOp::create(b, loc, l, r);
    if (op == "sub")
      return arith::SubIOp::create(b, loc, l, r);
    if (op == "mul")
      return arith::MulIOp::create(b, loc, l, r);
    if (op == "div")
      return arith::DivSIOp::create(b, loc, l, r);
    if (op == "max")
      return arith::MaxSIOp::create(b, loc, l, r);
    if (op == "min")
      return arith::MinSIOp::create(b, loc, l, r);
    if (op == "pow") {
      // Integer pow (ONNX Pow on int32/int64): computed in double, then
      // truncated toward zero, as ONNX Runtime does.
      Type f64 = b.getF64Type();
      Value p =
          math::PowFOp::create(b, loc, arith::SIToFPOp::create(b, loc, f64, l),
                               arith::SIToFPOp::create(b, loc, f64, r));
      return arith::FPToSIOp::create(b, loc, l.getType(), p);
    }
    if (op == "fmod")
      return arith::RemSIOp::create(b, loc, l, r);
    if (op == "mod") {
      // Floored remainder (sign of the divisor): the truncated one, plus the
      // divisor when it is nonzero and the signs differ.
      Value rem = arith::RemSIOp::create(b, loc, l, r);
      Value zero = arith::ConstantOp::create(
          b, loc, b.getIntegerAttr(l.getType(), 0));
      auto lt = [&](Value v) {
        return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, v,
                                     zero);
      };
      Value nonzero =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, rem, zero);
      Value differ = arith::XOrIOp::create(b, loc, lt(rem), lt(r));
      Value fix = arith::AndIOp::create(b, loc, nonzero, differ);
      Value fixed = arith::AddIOp::create(b, loc, rem, r);
      return arith::SelectOp::create(b, loc, fix, fixed, rem);
    }
  }
  return Value();
}

bool binarySupported(StringRef op, Type t) {
  ElemKind k = kindOf(t);
  if (k == ElemKind::Float)
    return true;
  return k == ElemKind::Int;
}

/// Converts scalar |v| to |to| with ONNX Cast semantics; null if unsupported.
Value castScalar(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  ElemKind fk = kindOf(from), tk = kindOf(to);
  if (fk == ElemKind::Float && tk == ElemKind::Float)
    return from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()
               ? (Value)arith::ExtFOp::create(b, loc, to, v)
               : (Value)arith::TruncFOp::create(b, loc, to, v);
  if (fk == ElemKind::Int && tk == ElemKind::Float)
    return arith::SIToFPOp::create(b, loc, to, v);
  if (fk == ElemKind::Bool && tk == ElemKind::Float)
    return arith::UIToFPOp::create(b, loc, to, v);
  if (fk == ElemKind::Float && tk == ElemKind::Int)
    return arith::FPToSIOp::create(b, loc, to, v);
  if (fk == ElemKind::Float && tk == ElemKind::Bool)
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v,
                                 constF(b, loc, from, 0.0));
  if (fk == ElemKind::Int && tk == ElemKind::Int)
    return from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()
               ? (Value)arith::ExtSIOp::create(b, loc, to, v)
               : (Value)arith::TruncIOp::create(b, loc, to, v);
  if (fk == ElemKind::Bool && tk == ElemKind::Int)
    return arith::ExtUIOp::create(b, loc, to, v);
  if (fk == ElemKind::Int && tk == ElemKind::Bool) {
    Value zero = arith::ConstantOp::create(b, loc, b.getIntegerAttr(from, 0));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v, zero);
  }
  return Value();
}

bool castSupported(Type from, Type to) {
  return kindOf(from) != ElemKind::Other && kindOf(to) != ElemKind::Other;
}

LogicalResult FuncLowering::run() {
  Block &body = dst.getBody().emplaceBlock();
  b.setInsertionPointToEnd(&body);
  Location floc = src.getLoc();
  for (auto [i, arg] : llvm::enumerate(src.getArguments())) {
    auto nameAttr = src.getArgAttrOfType<StringAttr>(i, "dlgraph.name");
    std::string name = nameAttr ? nameAttr.str() : ("arg" + Twine(i)).str();
    if (!isa<RankedTensorType>(arg.getType()))
      return src.emitError()
             << "dlgraph-lower-to-dlexec: argument #" << i << " has type "
             << arg.getType() << "; expected a ranked tensor";
    buffers[arg] = x::InputOp::create(b, floc, toMemRef(arg.getType()),
                                      b.getStringAttr(name))
                       .getResult();
  }
  for (Operation &op : src.getBody().front())
    if (failed(lowerOp(&op)))
      return failure();
  // Outputs first (so that a write into a returned buffer is seen as unsafe),
  // then the variable writes are placed before them.
  for (auto &[name, v] : results) {
    Value buf = getBuffer(v, floc);
    x::OutputOp::create(b, floc, b.getStringAttr(name), buf);
  }
  return finishWrites();
}

LogicalResult FuncLowering::lowerOp(Operation *op) {
  Location loc = op->getLoc();
  auto unsupported = [&](const Twine &why) -> LogicalResult {
    return op->emitError() << "dlgraph-lower-to-dlexec: cannot lower '"
                           << op->getName() << "': " << why;
  };
  auto checkFloat = [&](Value v) -> LogicalResult {
    Type et = tensorType(v).getElementType();
    if (!isa<FloatType>(et))
      return op->emitError()
             << "dlgraph-lower-to-dlexec: cannot lower '" << op->getName()
             << "': supports float tensors, not " << et;
    return success();
  };
  auto unary = [&](Value in, auto fn) -> LogicalResult {
    if (failed(checkFloat(in)))
      return failure();
    elementwise(op, {in},
                [&](OpBuilder &kb, Location l, ArrayRef<Value> v,
                    ArrayRef<Value>) -> SmallVector<Value> {
                  return {fn(kb, l, v[0])};
                });
    return success();
  };
  auto binary = [&](Value lhs, Value rhs) -> LogicalResult {
    StringRef name = op->getName().stripDialect();
    if (!binarySupported(name, tensorType(lhs).getElementType()))
      return op->emitError()
             << "dlgraph-lower-to-dlexec: cannot lower '" << op->getName()
             << "': element type " << tensorType(lhs).getElementType()
             << " is not supported (float or integer)";
    elementwise(op, {lhs, rhs},
                [&](OpBuilder &kb, Location l, ArrayRef<Value> v,
                    ArrayRef<Value>) -> SmallVector<Value> {
                  return {binaryScalar(kb, l, name, v[0], v[1])};
                });
    return success();
  };
  auto builtin = [&](StringRef tmpl, ArrayRef<Value> ins,
                     ArrayRef<StringRef> attrNames) {
    SmallVector<Value> bufs;
    for (Value v : ins)
      bufs.push_back(getBuffer(v, loc));
    Value out = alloc(op->getResult(0).getType(), loc);
    auto k = x::BuiltinKernelOp::create(
        b, loc, b.getStringAttr(nextKernelName(op->getName().stripDialect())),
        b.getStringAttr(tmpl), bufs, ValueRange{out});
    for (StringRef n : attrNames)
      if (Attribute a = op->getAttr(n))
        k->setAttr(n, isa<UnitAttr>(a) ? b.getBoolAttr(true) : a);
    buffers[op->getResult(0)] = out;
    return k;
  };
  auto library = [&](StringRef callee, ArrayRef<Value> ins) {
    SmallVector<Value> bufs;
    for (Value v : ins)
      if (v)
        bufs.push_back(getBuffer(v, loc));
    Value out = alloc(op->getResult(0).getType(), loc);
    auto call = x::LibraryCallOp::create(b, loc, b.getStringAttr(callee), bufs,
                                         ValueRange{out});
    for (StringRef n : {"strides", "pads", "dilations", "group"})
      if (Attribute a = op->getAttr(n))
        call->setAttr(n, a);
    if (!call->hasAttr("group"))
      call->setAttr("group", b.getI64IntegerAttr(1));
    buffers[op->getResult(0)] = out;
    return success();
  };
  // (i_0, ...) -> (starts[d] + steps[d] * i_d, ...) into a buffer of shape
  // |big| from loops of shape |small|. Codegen takes a loop's size from any
  // operand indexed by that loop alone, so a dim that covers only part of
  // |big| with start 0 and step 1 is written `i mod big[d]` (equal to i, as
  // i < small[d] <= big[d]) rather than as the plain dim.
  auto stridedMap = [&](ArrayRef<int64_t> starts, ArrayRef<int64_t> steps,
                        ArrayRef<int64_t> big, ArrayRef<int64_t> small) {
    SmallVector<AffineExpr> exprs;
    for (size_t d = 0; d < starts.size(); ++d) {
      AffineExpr e = b.getAffineDimExpr(d) * steps[d] + starts[d];
      if (isa<AffineDimExpr>(e) && big[d] != small[d])
        e = e % big[d];
      exprs.push_back(e);
    }
    return AffineMap::get(starts.size(), 0, exprs, b.getContext());
  };
  // The buffer of |v| for a copy kernel whose output map |outMap| is not
  // plain in every loop: then only this identity-mapped input gives codegen
  // the loop sizes, so it is read through a same-shape dlexec.reshape view,
  // which keeps the elementwise fusion from replacing it with the reads of
  // its producer (whose maps may not give them either).
  auto sizeSource = [&](Value v, AffineMap outMap) -> Value {
    Value buf = getBuffer(v, loc);
    if (llvm::all_of(outMap.getResults(),
                     [](AffineExpr e) { return isa<AffineDimExpr>(e); }))
      return buf;
    return x::ReshapeOp::create(b, loc, buf.getType(), buf).getResult();
  };
  static const StringRef poolAttrs[] = {"kernel_shape", "strides",
                                        "pads",         "dilations",
                                        "ceil_mode",    "count_include_pad"};

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](g::ReadVariableOp r) -> LogicalResult {
        buffers[r.getResult()] =
            x::VariableRefOp::create(b, loc, toMemRef(r.getType()),
                                     r.getVariableAttr())
                .getResult();
        return success();
      })
      .Case([&](g::WriteVariableOp w) -> LogicalResult {
        writes.push_back({w.getVariableAttr().getAttr(), w.getValue()});
        return success();
      })
      .Case([&](g::ConstantOp c) -> LogicalResult {
        auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
        if (dense && dense.isSplat()) {
          splats[c.getResult()] = dense.getSplatValue<TypedAttr>();
          return success();
        }
        OpBuilder mb(dst);
        std::string name = uniqueSymbol("__constant");
        x::VariableOp::create(mb, loc, mb.getStringAttr(name),
                              TypeAttr::get(toMemRef(c.getType())),
                              mb.getStringAttr("constant"), c.getValue());
        buffers[c.getResult()] =
            x::VariableRefOp::create(
                b, loc, toMemRef(c.getType()),
                FlatSymbolRefAttr::get(b.getStringAttr(name)))
                .getResult();
        return success();
      })
      .Case([&](g::ReshapeOp r) -> LogicalResult {
        if (splats.count(r.getInput()) && !buffers.count(r.getInput())) {
          splats[r.getResult()] = splats[r.getInput()];
          return success();
        }
        buffers[r.getResult()] =
            x::ReshapeOp::create(b, loc, toMemRef(r.getType()),
                                 getBuffer(r.getInput(), loc))
                .getResult();
        return success();
      })
      .Case([&](g::IdentityOp i) -> LogicalResult {
        elementwise(
            op, {i.getInput()},
            [](OpBuilder &, Location, ArrayRef<Value> v,
               ArrayRef<Value>) -> SmallVector<Value> { return {v[0]}; });
        return success();
      })
      .Case([&](g::BroadcastToOp bc) -> LogicalResult {
        elementwise(
            op, {bc.getInput()},
            [](OpBuilder &, Location, ArrayRef<Value> v,
               ArrayRef<Value>) -> SmallVector<Value> { return {v[0]}; });
        return success();
      })
      .Case([&](g::TransposeOp t) -> LogicalResult {
        auto rt = t.getType();
        ArrayRef<int64_t> perm = t.getPerm();
        SmallVector<AffineExpr> exprs(perm.size());
        for (auto [i, p] : llvm::enumerate(perm))
          exprs[p] = b.getAffineDimExpr(i);
        auto inMap = AffineMap::get(rt.getRank(), 0, exprs, b.getContext());
        Value out = alloc(rt, loc);
        buildKernel(
            loc, "transpose", rt.getRank(),
            {{getBuffer(t.getInput(), loc), TypedAttr(), inMap}}, {out},
            {b.getMultiDimIdentityMap(rt.getRank())}, {}, ArrayAttr(),
            [](OpBuilder &, Location, ArrayRef<Value> v,
               ArrayRef<Value>) -> SmallVector<Value> { return {v[0]}; });
        buffers[t.getResult()] = out;
        return success();
      })
      .Case([&](g::ReluOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)arith::MaximumFOp::create(
              kb, l, v, constF(kb, l, v.getType(), 0.0));
        });
      })
      .Case([&](g::ExpOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::ExpOp::create(kb, l, v);
        });
      })
      .Case([&](g::LogOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::LogOp::create(kb, l, v);
        });
      })
      .Case([&](g::NegOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)arith::NegFOp::create(kb, l, v);
        });
      })
      .Case([&](g::SqrtOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::SqrtOp::create(kb, l, v);
        });
      })
      .Case([&](g::RsqrtOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::RsqrtOp::create(kb, l, v);
        });
      })
      .Case([&](g::TanhOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::TanhOp::create(kb, l, v);
        });
      })
      .Case([&](g::SigmoidOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          // 1 / (1 + exp(-x))
          Value one = constF(kb, l, v.getType(), 1.0);
          Value e = math::ExpOp::create(kb, l, arith::NegFOp::create(kb, l, v));
          return (Value)arith::DivFOp::create(
              kb, l, one, arith::AddFOp::create(kb, l, one, e));
        });
      })
      .Case([&](g::ErfOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::ErfOp::create(kb, l, v);
        });
      })
      .Case([&](g::SinOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::SinOp::create(kb, l, v);
        });
      })
      .Case([&](g::CosOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::CosOp::create(kb, l, v);
        });
      })
      .Case([&](g::TanOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::TanOp::create(kb, l, v);
        });
      })
      .Case([&](g::AsinOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::AsinOp::create(kb, l, v);
        });
      })
      .Case([&](g::AcosOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::AcosOp::create(kb, l, v);
        });
      })
      .Case([&](g::AtanOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::AtanOp::create(kb, l, v);
        });
      })
      .Case([&](g::SinhOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::SinhOp::create(kb, l, v);
        });
      })
      .Case([&](g::CoshOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::CoshOp::create(kb, l, v);
        });
      })
      .Case([&](g::AsinhOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::AsinhOp::create(kb, l, v);
        });
      })
      .Case([&](g::AcoshOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::AcoshOp::create(kb, l, v);
        });
      })
      .Case([&](g::AtanhOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::AtanhOp::create(kb, l, v);
        });
      })
      .Case([&](g::AbsOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::AbsFOp::create(kb, l, v);
        });
      })
      .Case([&](g::CeilOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::CeilOp::create(kb, l, v);
        });
      })
      .Case([&](g::FloorOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::FloorOp::create(kb, l, v);
        });
      })
      .Case([&](g::RoundOp o) -> LogicalResult {
        return unary(o.getInput(), [](OpBuilder &kb, Location l, Value v) {
          return (Value)math::RoundEvenOp::create(kb, l, v);
        });
      })
      .Case([&](g::ClipOp o) -> LogicalResult {
        double lo = decimalValue(o.getMinAttr()),
               hi = decimalValue(o.getMaxAttr());
        return unary(o.getInput(), [&](OpBuilder &kb, Location l, Value v) {
          // torch.clamp: min(max(x, lo), hi)
          Value m = arith::MaximumFOp::create(kb, l, v,
                                              constF(kb, l, v.getType(), lo));
          return (Value)arith::MinimumFOp::create(
              kb, l, m, constF(kb, l, v.getType(), hi));
        });
      })
      .Case([&](g::AddOp o) -> LogicalResult {
        return binary(o.getLhs(), o.getRhs());
      })
      .Case([&](g::SubOp o) -> LogicalResult {
        return binary(o.getLhs(), o.getRhs());
      })
      .Case([&](g::MulOp o) -> LogicalResult {
        return binary(o.getLhs(), o.getRhs());
      })
      .Case([&](g::DivOp o) -> LogicalResult {
        return binary(o.getLhs(), o.getRhs());
      })
      .Case([&](g::MaxOp o) -> LogicalResult {
        return binary(o.getLhs(), o.getRhs());
      })
      .Case([&](g::MinOp o) -> LogicalResult {
        return binary(o.getLhs(), o.getRhs());
      })
      .Case([&](g::PowOp o) -> LogicalResult {
        return binary(o.getLhs(), o.getRhs());
      })
      .Case([&](g::FmodOp o) -> LogicalResult {
        return binary(o.getLhs(), o.getRhs());
      })
      .Case([&](g::ModOp o) -> LogicalResult {
        if (isa<FloatType>(tensorType(o.getLhs()).getElementType()))
          return unsupported("floored mod supports integers; use fmod for "
                             "floats");
        return binary(o.getLhs(), o.getRhs());
      })
      .Case([&](g::SelectOp s) -> LogicalResult {
        elementwise(op, {s.getCondition(), s.getOnTrue(), s.getOnFalse()},
                    [](OpBuilder &kb, Location l, ArrayRef<Value> v,
                       ArrayRef<Value>) -> SmallVector<Value> {
                      return {arith::SelectOp::create(kb, l, v[0], v[1], v[2])};
                    });
        return success();
      })
      .Case([&](g::CompareOp c) -> LogicalResult {
        Type et = tensorType(c.getLhs()).getElementType();
        ElemKind k = kindOf(et);
        if (k == ElemKind::Other)
          return unsupported("unsupported element type");
        StringRef p = c.getPredicate();
        auto fp = llvm::StringSwitch<arith::CmpFPredicate>(p)
                      .Case("eq", arith::CmpFPredicate::OEQ)
                      .Case("ne", arith::CmpFPredicate::UNE)
                      .Case("lt", arith::CmpFPredicate::OLT)
                      .Case("le", arith::CmpFPredicate::OLE)
                      .Case("gt", arith::CmpFPredicate::OGT)
                      .Default(arith::CmpFPredicate::OGE);
        auto ip = llvm::StringSwitch<arith::CmpIPredicate>(p)
                      .Case("eq", arith::CmpIPredicate::eq)
                      .Case("ne", arith::CmpIPredicate::ne)
                      .Case("lt", arith::CmpIPredicate::slt)
                      .Case("le", arith::CmpIPredicate::sle)
                      .Case("gt", arith::CmpIPredicate::sgt)
                      .Default(arith::CmpIPredicate::sge);
        elementwise(op, {c.getLhs(), c.getRhs()},
                    [&](OpBuilder &kb, Location l, ArrayRef<Value> v,
                        ArrayRef<Value>) -> SmallVector<Value> {
                      if (k == ElemKind::Float)
                        return {arith::CmpFOp::create(kb, l, fp, v[0], v[1])};
                      return {arith::CmpIOp::create(kb, l, ip, v[0], v[1])};
                    });
        return success();
      })
      .Case([&](g::CastOp c) -> LogicalResult {
        Type from = tensorType(c.getInput()).getElementType();
        Type to = c.getType().getElementType();
        if (!castSupported(from, to))
          return unsupported("cannot cast between these element types");
        elementwise(op, {c.getInput()},
                    [&](OpBuilder &kb, Location l, ArrayRef<Value> v,
                        ArrayRef<Value>) -> SmallVector<Value> {
                      return {castScalar(kb, l, v[0], to)};
                    });
        return success();
      })
      .Case([&](g::BatchNormOp bn) -> LogicalResult {
        if (failed(checkFloat(bn.getInput())))
          return failure();
        auto rt = bn.getType();
        if (rt.getRank() < 2)
          return unsupported("input must have a channel axis (rank >= 2)");
        auto chMap = AffineMap::get(rt.getRank(), 0, b.getAffineDimExpr(1));
        SmallVector<KIn> ins{kernelInput(bn.getInput(), rt.getShape(), loc)};
        for (Value p :
             {bn.getScale(), bn.getBias(), bn.getMean(), bn.getVariance()}) {
          KIn k = kernelInput(p, {rt.getDimSize(1)}, loc);
          k.map = chMap;
          ins.push_back(k);
        }
        double eps = decimalValue(bn.getEpsilonAttr());
        Value out = alloc(rt, loc);
        buildKernel(
            loc, "batch_norm", rt.getRank(), ins, {out},
            {b.getMultiDimIdentityMap(rt.getRank())}, {}, ArrayAttr(),
            [&](OpBuilder &kb, Location l, ArrayRef<Value> v,
                ArrayRef<Value>) -> SmallVector<Value> {
              // (x - mean) / sqrt(var + eps) * scale + bias
              Type t = v[0].getType();
              Value d = arith::SubFOp::create(kb, l, v[0], v[3]);
              Value s = math::SqrtOp::create(
                  kb, l,
                  arith::AddFOp::create(kb, l, v[4], constF(kb, l, t, eps)));
              Value n = arith::DivFOp::create(kb, l, d, s);
              Value m = arith::MulFOp::create(kb, l, n, v[1]);
              return {arith::AddFOp::create(kb, l, m, v[2])};
            });
        buffers[bn.getResult()] = out;
        return success();
      })
      .Case([&](g::GemmOp gm) -> LogicalResult {
        return gemm(
            op, gm.getA(), gm.getB(), gm.getC(), gm.getAlpha().convertToFloat(),
            gm.getBeta().convertToFloat(), gm.getTransA(), gm.getTransB());
      })
      .Case([&](g::MatMulOp mm) -> LogicalResult { return matmul(mm); })
      .Case([&](g::ConvOp c) -> LogicalResult {
        return library(tensorType(c.getInput()).getRank() == 5
                           ? "conv3d_forward"
                           : "conv2d_forward",
                       {c.getInput(), c.getFilter(), c.getBias()});
      })
      .Case([&](g::ConvBackwardDataOp c) -> LogicalResult {
        return library(tensorType(c.getFilter()).getRank() == 5
                           ? "conv3d_backward_data"
                           : "conv2d_backward_data",
                       {c.getResultGrad(), c.getFilter()});
      })
      .Case([&](g::ConvBackwardFilterOp c) -> LogicalResult {
        return library(tensorType(c.getInput()).getRank() == 5
                           ? "conv3d_backward_filter"
                           : "conv2d_backward_filter",
                       {c.getInput(), c.getResultGrad()});
      })
      .Case([&](g::MaxPoolOp p) -> LogicalResult {
        builtin("max_pool2d", {p.getInput()}, poolAttrs);
        return success();
      })
      .Case([&](g::AveragePoolOp p) -> LogicalResult {
        builtin("average_pool2d", {p.getInput()}, poolAttrs);
        return success();
      })
      .Case([&](g::MaxPoolGradOp p) -> LogicalResult {
        builtin("max_pool2d_grad", {p.getInput(), p.getResultGrad()},
                poolAttrs);
        return success();
      })
      .Case([&](g::AveragePoolGradOp p) -> LogicalResult {
        builtin("average_pool2d_grad", {p.getInput(), p.getResultGrad()},
                poolAttrs);
        return success();
      })
      .Case([&](g::SoftmaxOp s) -> LogicalResult {
        int64_t rank = s.getType().getRank();
        int64_t axis = s.getAxisAttr().getInt();
        if (axis < 0)
          axis += rank;
        auto k = builtin("softmax", {s.getInput()}, {});
        k->setAttr("axis", b.getI64IntegerAttr(axis));
        return success();
      })
      .Case([&](g::LogSoftmaxOp s) -> LogicalResult {
        int64_t rank = s.getType().getRank();
        int64_t axis = s.getAxisAttr().getInt();
        if (axis < 0)
          axis += rank;
        auto k = builtin("log_softmax", {s.getInput()}, {});
        k->setAttr("axis", b.getI64IntegerAttr(axis));
        return success();
      })
      .Case([&](g::SoftmaxCrossEntropyOp s) -> LogicalResult {
        builtin("softmax_cross_entropy", {s.getLogits(), s.getLabels()}, {});
        return success();
      })
      .Case([&](g::SoftmaxCrossEntropyGradOp s) -> LogicalResult {
        builtin("softmax_cross_entropy_grad",
                {s.getLogits(), s.getLabels(), s.getLossGrad()}, {});
        return success();
      })
      .Case([&](g::ReduceSumOp r) -> LogicalResult {
        return reduce(op, r.getInput(), r.getAxes(), r.getKeepdims(), "sum");
      })
      .Case([&](g::ReduceMeanOp r) -> LogicalResult {
        return reduce(op, r.getInput(), r.getAxes(), r.getKeepdims(), "mean");
      })
      .Case([&](g::ReduceMaxOp r) -> LogicalResult {
        return reduce(op, r.getInput(), r.getAxes(), r.getKeepdims(), "max");
      })
      .Case([&](g::ReduceProdOp r) -> LogicalResult {
        return reduce(op, r.getInput(), r.getAxes(), r.getKeepdims(), "prod");
      })
      .Case<g::ArgMaxOp, g::ArgMinOp>([&](auto a) -> LogicalResult {
        // A reduction over `axis` carrying (best value, its index); the
        // value output is a scratch buffer.
        if (failed(checkFloat(a.getInput())))
          return failure();
        auto in = tensorType(a.getInput());
        auto ft = cast<FloatType>(in.getElementType());
        bool isMax = isa<g::ArgMaxOp>(op), last = a.getSelectLastIndex();
        int64_t axis = a.getAxis();
        unsigned rank = in.getRank();
        MLIRContext *ctx = b.getContext();
        SmallVector<StringRef> iters;
        SmallVector<AffineExpr> outExprs;
        for (unsigned i = 0; i < rank; ++i) {
          iters.push_back((int64_t)i == axis ? "reduction" : "parallel");
          if ((int64_t)i != axis)
            outExprs.push_back(getAffineDimExpr(i, ctx));
          else if (a.getKeepdims())
            outExprs.push_back(getAffineConstantExpr(0, ctx));
        }
        auto outMap = AffineMap::get(rank, 0, outExprs, ctx);
        auto rt = a.getType();
        Value best = alloc(RankedTensorType::get(rt.getShape(), ft), loc);
        Value idx = alloc(rt, loc);
        Attribute initBest = b.getFloatAttr(
            ft, APFloat::getInf(ft.getFloatSemantics(), /*Negative=*/isMax));
        Attribute initIdx = b.getI64IntegerAttr(0);
        KIn kin{getBuffer(a.getInput(), loc), TypedAttr(),
                b.getMultiDimIdentityMap(rank)};
        arith::CmpFPredicate pred =
            isMax ? (last ? arith::CmpFPredicate::OGE
                          : arith::CmpFPredicate::OGT)
                  : (last ? arith::CmpFPredicate::OLE
                          : arith::CmpFPredicate::OLT);
        buildKernel(loc, op->getName().stripDialect(), rank, {kin},
                    {best, idx}, {outMap, outMap}, iters,
                    b.getArrayAttr({initBest, initIdx}),
                    [&](OpBuilder &kb, Location l, ArrayRef<Value> ins,
                        ArrayRef<Value> outs) -> SmallVector<Value> {
                      Value i = x::IndexOp::create(kb, l, kb.getIndexType(),
                                                   kb.getI64IntegerAttr(axis));
                      Value i64 = arith::IndexCastOp::create(
                          kb, l, kb.getI64Type(), i);
                      Value better =
                          arith::CmpFOp::create(kb, l, pred, ins[0], outs[0]);
                      return {arith::SelectOp::create(kb, l, better, ins[0],
                                                      outs[0]),
                              arith::SelectOp::create(kb, l, better, i64,
                                                      outs[1])};
                    });
        buffers[op->getResult(0)] = idx;
        return success();
      })
      .Case<g::ResizeOp, g::ResizeGradOp>([&](auto r) -> LogicalResult {
        if (failed(checkFloat(op->getOperand(0))))
          return failure();
        builtin(isa<g::ResizeOp>(op) ? "resize" : "resize_grad",
                {op->getOperand(0)},
                {"mode", "coordinate_transformation_mode", "nearest_mode",
                 "scales"});
        return success();
      })
      .Case([&](g::DropoutOp d) -> LogicalResult {
        if (failed(checkFloat(d.getInput())))
          return failure();
        SmallVector<Value> bufs{getBuffer(d.getInput(), loc),
                                getBuffer(d.getStep(), loc)};
        Value y = alloc(d.getResult().getType(), loc);
        Value mask = alloc(d.getMask().getType(), loc);
        auto k = x::BuiltinKernelOp::create(
            b, loc, b.getStringAttr(nextKernelName("dropout")),
            b.getStringAttr("dropout"), bufs, ValueRange{y, mask});
        k->setAttr("ratio", d.getRatioAttr());
        k->setAttr("seed", d.getSeedAttr());
        buffers[d.getResult()] = y;
        buffers[d.getMask()] = mask;
        return success();
      })
      .Case([&](g::GlobalAveragePoolOp p) -> LogicalResult {
        int64_t rank = tensorType(p.getInput()).getRank();
        SmallVector<int64_t> axes;
        for (int64_t i = 2; i < rank; ++i)
          axes.push_back(i);
        return reduce(op, p.getInput(), axes, /*keepdims=*/true, "mean");
      })
      .Case([&](g::SliceOp s) -> LogicalResult {
        // One copy kernel over the result reading input[starts + steps * i].
        auto rt = s.getType();
        if (splats.count(s.getInput()) && !buffers.count(s.getInput())) {
          splats[s.getResult()] = splats[s.getInput()];
          return success();
        }
        Value out = alloc(rt, loc);
        // Consumers read the slice through a same-shape view, so that the
        // elementwise fusion does not move the strided read into a consumer
        // whose other maps may leave a loop without a plain dim (codegen
        // needs one to size each loop; e.g. a reduction over a broadcast).
        buffers[s.getResult()] =
            x::ReshapeOp::create(b, loc, out.getType(), out).getResult();
        if (rt.getNumElements() == 0 || rt.getRank() == 0) {
          if (rt.getRank() == 0)
            return unsupported("rank-0 slice");
          return success();
        }
        buildKernel(
            loc, "slice", rt.getRank(),
            {{getBuffer(s.getInput(), loc), TypedAttr(),
              stridedMap(s.getStarts(), s.getSteps(),
                         tensorType(s.getInput()).getShape(), rt.getShape())}},
            {out}, {b.getMultiDimIdentityMap(rt.getRank())}, {}, ArrayAttr(),
            [](OpBuilder &, Location, ArrayRef<Value> v,
               ArrayRef<Value>) -> SmallVector<Value> { return {v[0]}; });
        return success();
      })
      .Case([&](g::PadOp p) -> LogicalResult {
        // A fill kernel over the result, then a copy kernel over the input
        // writing result[starts + steps * i].
        auto rt = p.getType();
        auto it = tensorType(p.getInput());
        unsigned rank = rt.getRank();
        Type et = rt.getElementType();
        if (rank == 0)
          return unsupported("rank-0 pad");
        if (kindOf(et) == ElemKind::Other)
          return unsupported("unsupported element type");
        double value = p.getValue().convertToDouble();
        Value out = alloc(rt, loc);
        buffers[p.getResult()] = out;
        if (rt.getNumElements() == 0)
          return success();
        AffineMap id = b.getMultiDimIdentityMap(rank);
        buildKernel(loc, "pad_fill", rank, {}, {out}, {id}, {}, ArrayAttr(),
                    [&](OpBuilder &kb, Location l, ArrayRef<Value>,
                        ArrayRef<Value>) -> SmallVector<Value> {
                      if (isa<FloatType>(et))
                        return {constF(kb, l, et, value)};
                      return {arith::ConstantOp::create(
                          kb, l, kb.getIntegerAttr(et, (int64_t)value))};
                    });
        if (it.getNumElements() == 0)
          return success();
        AffineMap outMap = stridedMap(p.getStarts(), p.getSteps(),
                                      rt.getShape(), it.getShape());
        buildKernel(
            loc, "pad", rank,
            {{sizeSource(p.getInput(), outMap), TypedAttr(), id}}, {out},
            {outMap}, {}, ArrayAttr(),
            [](OpBuilder &, Location, ArrayRef<Value> v,
               ArrayRef<Value>) -> SmallVector<Value> { return {v[0]}; });
        return success();
      })
      .Case([&](g::ConcatOp c) -> LogicalResult {
        // One copy kernel per input writing its part of the result.
        auto rt = c.getType();
        unsigned rank = rt.getRank();
        int64_t axis = c.getAxis(), offset = 0;
        Value out = alloc(rt, loc);
        buffers[c.getResult()] = out;
        AffineMap id = b.getMultiDimIdentityMap(rank);
        SmallVector<int64_t> steps(rank, 1);
        for (Value v : c.getInputs()) {
          auto t = tensorType(v);
          if (t.getNumElements() != 0) {
            SmallVector<int64_t> starts(rank, 0);
            starts[axis] = offset;
            AffineMap outMap =
                stridedMap(starts, steps, rt.getShape(), t.getShape());
            buildKernel(
                loc, "concat", rank, {{sizeSource(v, outMap), TypedAttr(), id}},
                {out}, {outMap}, {}, ArrayAttr(),
                [](OpBuilder &, Location, ArrayRef<Value> v,
                   ArrayRef<Value>) -> SmallVector<Value> { return {v[0]}; });
          }
          offset += t.getDimSize(axis);
        }
        return success();
      })
      .Case([&](g::GatherOp o) -> LogicalResult {
        builtin("gather", {o.getData(), o.getIndices()}, {"axis"});
        return success();
      })
      .Case([&](g::GatherGradOp o) -> LogicalResult {
        builtin("gather_grad", {o.getIndices(), o.getResultGrad()}, {"axis"});
        return success();
      })
      .Case([&](g::GatherElementsOp o) -> LogicalResult {
        builtin("gather_elements", {o.getData(), o.getIndices()}, {"axis"});
        return success();
      })
      .Case([&](g::GatherElementsGradOp o) -> LogicalResult {
        builtin("gather_elements_grad", {o.getIndices(), o.getResultGrad()},
                {"axis"});
        return success();
      })
      .Case([&](g::SGDUpdateOp s) -> LogicalResult {
        if (failed(checkFloat(s.getParam())))
          return failure();
        auto pt = tensorType(s.getParam());
        unsigned rank = pt.getRank();
        Type et = pt.getElementType();
        double lr = decimalValue(s.getLrAttr()),
               mom = decimalValue(s.getMomentumAttr()),
               wd = decimalValue(s.getWeightDecayAttr());
        SmallVector<KIn> ins{
            kernelInput(s.getParam(), pt.getShape(), loc),
            kernelInput(s.getGrad(), pt.getShape(), loc),
            kernelInput(s.getMomentumBuffer(), pt.getShape(), loc),
            {getBuffer(s.getStep(), loc), TypedAttr(),
             AffineMap::get(rank, 0, {}, b.getContext())}};
        Value np = alloc(pt, loc), nb = alloc(pt, loc);
        AffineMap id = b.getMultiDimIdentityMap(rank);
        buildKernel(
            loc, "sgd_update", rank, ins, {np, nb}, {id, id}, {}, ArrayAttr(),
            [&](OpBuilder &kb, Location l, ArrayRef<Value> v,
                ArrayRef<Value>) -> SmallVector<Value> {
              Value p = v[0], gr = v[1], buf = v[2], step = v[3];
              if (step.getType() != et)
                step = castScalar(kb, l, step, et);
              if (wd != 0.0)
                gr = arith::AddFOp::create(
                    kb, l, gr,
                    arith::MulFOp::create(kb, l, constF(kb, l, et, wd), p));
              if (mom == 0.0) {
                Value upd =
                    arith::MulFOp::create(kb, l, constF(kb, l, et, lr), gr);
                return {arith::SubFOp::create(kb, l, p, upd), buf};
              }
              // buf' = step == 1 ? g : momentum * buf + g
              Value acc = arith::AddFOp::create(
                  kb, l,
                  arith::MulFOp::create(kb, l, constF(kb, l, et, mom), buf),
                  gr);
              Value first =
                  arith::CmpFOp::create(kb, l, arith::CmpFPredicate::OEQ, step,
                                        constF(kb, l, et, 1.0));
              Value nbuf = arith::SelectOp::create(kb, l, first, gr, acc);
              Value upd =
                  arith::MulFOp::create(kb, l, constF(kb, l, et, lr), nbuf);
              return {arith::SubFOp::create(kb, l, p, upd), nbuf};
            });
        buffers[s.getNewParam()] = np;
        buffers[s.getNewMomentumBuffer()] = nb;
        return success();
      })
      .Case([&](g::AdamUpdateOp a) -> LogicalResult {
        if (failed(checkFloat(a.getParam())))
          return failure();
        auto pt = tensorType(a.getParam());
        unsigned rank = pt.getRank();
        Type et = pt.getElementType();
        double lr = decimalValue(a.getLrAttr()),
               b1 = decimalValue(a.getBeta1Attr()),
               b2 = decimalValue(a.getBeta2Attr()),
               eps = decimalValue(a.getEpsilonAttr()),
               wd = decimalValue(a.getWeightDecayAttr());
        bool decoupled = a.getDecoupled();
        SmallVector<KIn> ins{kernelInput(a.getParam(), pt.getShape(), loc),
                             kernelInput(a.getGrad(), pt.getShape(), loc),
                             kernelInput(a.getExpAvg(), pt.getShape(), loc),
                             kernelInput(a.getExpAvgSq(), pt.getShape(), loc),
                             {getBuffer(a.getStep(), loc), TypedAttr(),
                              AffineMap::get(rank, 0, {}, b.getContext())}};
        Value np = alloc(pt, loc), nm = alloc(pt, loc), nv = alloc(pt, loc);
        AffineMap id = b.getMultiDimIdentityMap(rank);
        buildKernel(
            loc, "adam_update", rank, ins, {np, nm, nv}, {id, id, id}, {},
            ArrayAttr(),
            [&](OpBuilder &kb, Location l, ArrayRef<Value> v,
                ArrayRef<Value>) -> SmallVector<Value> {
              auto c = [&](double d) { return constF(kb, l, et, d); };
              auto mul = [&](Value p, Value q) {
                return (Value)arith::MulFOp::create(kb, l, p, q);
              };
              auto add = [&](Value p, Value q) {
                return (Value)arith::AddFOp::create(kb, l, p, q);
              };
              auto sub = [&](Value p, Value q) {
                return (Value)arith::SubFOp::create(kb, l, p, q);
              };
              auto div = [&](Value p, Value q) {
                return (Value)arith::DivFOp::create(kb, l, p, q);
              };
              Value p = v[0], gr = v[1], m = v[2], vs = v[3], t = v[4];
              if (t.getType() != et)
                t = castScalar(kb, l, t, et);
              if (wd != 0.0) {
                if (decoupled)
                  p = mul(p, c(1.0 - lr * wd));
                else
                  gr = add(gr, mul(c(wd), p));
              }
              Value m2 = add(mul(c(b1), m), mul(c(1.0 - b1), gr));
              Value v2 = add(mul(c(b2), vs), mul(c(1.0 - b2), mul(gr, gr)));
              // PyTorch order: step_size = lr / bc1;
              // denom = sqrt(v') / sqrt(bc2) + eps; p -= step_size * m' / denom
              Value bc1 = sub(c(1.0), math::PowFOp::create(kb, l, c(b1), t));
              Value bc2 = sub(c(1.0), math::PowFOp::create(kb, l, c(b2), t));
              Value stepSize = div(c(lr), bc1);
              Value denom = add(div(math::SqrtOp::create(kb, l, v2),
                                    math::SqrtOp::create(kb, l, bc2)),
                                c(eps));
              Value np2 = sub(p, mul(stepSize, div(m2, denom)));
              return {np2, m2, v2};
            });
        buffers[a.getNewParam()] = np;
        buffers[a.getNewExpAvg()] = nm;
        buffers[a.getNewExpAvgSq()] = nv;
        return success();
      })
      .Case([&](func::ReturnOp r) -> LogicalResult {
        for (auto [i, v] : llvm::enumerate(r.getOperands())) {
          auto nameAttr =
              src.getResultAttrOfType<StringAttr>(i, "dlgraph.name");
          results.push_back(
              {nameAttr ? nameAttr.str() : ("result" + Twine(i)).str(), v});
        }
        return success();
      })
      .Default([&](Operation *) -> LogicalResult {
        return unsupported("no lowering to dlexec exists for this op");
      });
}

/// True when |op| writes |operand| (it is one of its outputs).
bool writesOperand(Operation *op, OpOperand &operand) {
  unsigned idx = operand.getOperandNumber();
  if (auto k = dyn_cast<x::KernelOp>(op))
    return idx >= k.getInputs().size();
  if (auto l = dyn_cast<x::LibraryCallOp>(op))
    return idx >= l.getInputs().size();
  if (auto bk = dyn_cast<x::BuiltinKernelOp>(op))
    return idx >= bk.getInputs().size();
  return false;
}

/// Every (op, operand) that uses |buf| or a reshape view of it.
void collectUses(Value buf, SmallVectorImpl<OpOperand *> &uses) {
  for (OpOperand &u : buf.getUses()) {
    if (auto r = dyn_cast<x::ReshapeOp>(u.getOwner()))
      collectUses(r.getResult(), uses);
    else
      uses.push_back(&u);
  }
}

AffineMap operandMap(x::KernelOp k, unsigned operandNumber) {
  return cast<AffineMapAttr>(k.getIndexingMaps()[operandNumber]).getValue();
}

LogicalResult FuncLowering::finishWrites() {
  Block &body = dst.getBody().front();
  Location floc = src.getLoc();
  llvm::StringMap<int> writeCount;
  for (auto &[sym, v] : writes)
    ++writeCount[sym.getValue()];

  SmallVector<std::pair<StringAttr, Value>> copies;
  for (auto &[sym, v] : writes) {
    Value bx = getBuffer(v, floc);
    auto allocOp = bx.getDefiningOp<x::AllocOp>();
    bool direct = allocOp && writeCount[sym.getValue()] == 1;
    Operation *producer = nullptr;
    if (direct) {
      SmallVector<OpOperand *> uses;
      collectUses(bx, uses);
      for (OpOperand *u : uses) {
        if (isa<x::OutputOp>(u->getOwner()))
          direct = false;
        else if (u->get() == bx && writesOperand(u->getOwner(), *u)) {
          if (producer)
            direct = false;
          producer = u->getOwner();
        }
      }
      if (!producer)
        direct = false;
    }
    if (direct) {
      // No op after the producer may read the variable's old value, and the
      // producer itself only at the element it writes.
      for (Operation &op : body) {
        auto ref = dyn_cast<x::VariableRefOp>(op);
        if (!ref || ref.getVariable() != sym.getValue())
          continue;
        SmallVector<OpOperand *> uses;
        collectUses(ref.getResult(), uses);
        for (OpOperand *u : uses) {
          Operation *user = u->getOwner();
          if (isa<x::OutputOp>(user)) {
            direct = false;
          } else if (user == producer) {
            auto k = dyn_cast<x::KernelOp>(user);
            unsigned outNo = 0;
            for (OpOperand &o : user->getOpOperands())
              if (o.get() == bx)
                outNo = o.getOperandNumber();
            if (!k || u->get() != ref.getResult() || writesOperand(user, *u) ||
                llvm::any_of(k.getIteratorTypes(),
                             [](Attribute a) {
                               return cast<StringAttr>(a).getValue() !=
                                      "parallel";
                             }) ||
                operandMap(k, u->getOperandNumber()) != operandMap(k, outNo))
              direct = false;
          } else if (producer->isBeforeInBlock(user)) {
            direct = false;
          }
        }
      }
    }
    // Another write reading this variable at the end needs its old value.
    for (auto &[sym2, v2] : writes) {
      Value root = rootOf(getBuffer(v2, floc));
      if (auto ref = root.getDefiningOp<x::VariableRefOp>())
        if (ref.getVariable() == sym.getValue())
          direct = false;
    }
    if (!direct) {
      copies.push_back({sym, bx});
      continue;
    }
    OpBuilder sb = OpBuilder::atBlockBegin(&body);
    Value ref = x::VariableRefOp::create(sb, floc, bx.getType(),
                                         FlatSymbolRefAttr::get(sym))
                    .getResult();
    bx.replaceAllUsesWith(ref);
    for (auto &kv : buffers)
      if (kv.second == bx)
        kv.second = ref;
    allocOp.erase();
  }

  // Copies go before the outputs at the end of the function. A copy source
  // or an output that is another written variable is snapshotted first.
  Operation *firstOutput = nullptr;
  for (Operation &op : body)
    if (isa<x::OutputOp>(op)) {
      firstOutput = &op;
      break;
    }
  if (firstOutput)
    b.setInsertionPoint(firstOutput);
  else
    b.setInsertionPointToEnd(&body);
  auto copyKernel = [&](Value from, Value to, StringRef what) {
    unsigned rank = cast<MemRefType>(from.getType()).getRank();
    AffineMap id = b.getMultiDimIdentityMap(rank);
    buildKernel(floc, what, rank, {{from, TypedAttr(), id}}, {to}, {id}, {},
                ArrayAttr(),
                [](OpBuilder &, Location, ArrayRef<Value> v,
                   ArrayRef<Value>) -> SmallVector<Value> { return {v[0]}; });
  };
  auto isWrittenVarBuffer = [&](Value v) {
    auto ref = rootOf(v).getDefiningOp<x::VariableRefOp>();
    return ref && writeCount.count(ref.getVariable());
  };
  auto snapshot = [&](Value v) {
    Value tmp = x::AllocOp::create(b, floc, cast<MemRefType>(v.getType()),
                                   IntegerAttr())
                    .getResult();
    copyKernel(v, tmp, "snapshot");
    return tmp;
  };
  for (auto &[sym, bx] : copies)
    if (isWrittenVarBuffer(bx))
      bx = snapshot(bx);
  for (Operation &op : body)
    if (auto out = dyn_cast<x::OutputOp>(op))
      if (isWrittenVarBuffer(out.getBuffer()))
        out.getBufferMutable().assign(snapshot(out.getBuffer()));
  for (auto &[sym, bx] : copies) {
    Value ref = x::VariableRefOp::create(b, floc, bx.getType(),
                                         FlatSymbolRefAttr::get(sym))
                    .getResult();
    copyKernel(bx, ref, "write_variable");
  }
  return success();
}

struct LowerToExecPass : dlc::impl::LowerToExecPassBase<LowerToExecPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringSet<> symbols;
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
                         : v->hasAttr("dlgraph.optimizer_state")
                             ? "optimizer_state"
                             : "state";
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
      FuncLowering lowering(module, f, ef, symbols);
      if (failed(lowering.run()))
        return signalPassFailure();
      toErase.push_back(f);
    }
    for (Operation *op : toErase)
      op->erase();
  }
};

} // namespace
