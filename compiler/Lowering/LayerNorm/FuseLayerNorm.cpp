//===- FuseLayerNorm.cpp - decomposed LayerNorm -> one row kernel ---------===//
//
// --dlexec-fuse-layer-norm (Passes.td): the four kernels a LayerNorm over the
// last axis leaves after fusion (mean, centered values, variance with its
// rsqrt epilogue, affine) become one `layer_norm` builtin kernel that reads
// x once and writes y once.
//
//===----------------------------------------------------------------------===//
#include "compiler/Lowering/LayerNorm/Passes.h"

#include "compiler/Lowering/BufferAccess.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <algorithm>
#include <optional>

namespace dlc {
#define GEN_PASS_DEF_FUSELAYERNORMPASS
#include "compiler/Lowering/LayerNorm/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;
using dlc::lowering::accessOf;
using dlc::lowering::rootOf;
using dlc::lowering::stripViews;

namespace {

AffineMap mapOf(exec::KernelOp k, unsigned operand) {
  return cast<AffineMapAttr>(k.getIndexingMaps()[operand]).getValue();
}

/// Whether |map| reads one element per row: the loops but the last, in
/// order, and optionally a trailing constant 0 (a keepdims [R..., 1]).
bool isRowMap(AffineMap map) {
  unsigned loops = map.getNumDims();
  unsigned res = map.getNumResults();
  if (res != loops - 1 && res != loops)
    return false;
  for (unsigned i = 0; i + 1 < loops; ++i) {
    auto d = dyn_cast<AffineDimExpr>(map.getResult(i));
    if (!d || d.getPosition() != i)
      return false;
  }
  if (res == loops) {
    auto c = dyn_cast<AffineConstantExpr>(map.getResult(loops - 1));
    if (!c || c.getValue() != 0)
      return false;
  }
  return true;
}

/// Whether |map| reads the last loop only (a scale or bias [N]).
bool isColumnMap(AffineMap map) {
  if (map.getNumResults() != 1)
    return false;
  auto d = dyn_cast<AffineDimExpr>(map.getResult(0));
  return d && d.getPosition() == map.getNumDims() - 1;
}

/// Whether |k|'s loops are parallel but the last, a reduction (a reduction
/// over the last axis), with a zero init and no epilogue unless |epilogue|.
bool isLastAxisReduction(exec::KernelOp k, bool epilogue) {
  auto its = k.getIteratorTypes();
  if (its.size() < 1 || !k.getInit() || k.getEpilogue().empty() == epilogue)
    return false;
  for (auto [i, a] : llvm::enumerate(its))
    if ((cast<StringAttr>(a).getValue() == "reduction") != (i + 1 == its.size()))
      return false;
  ArrayAttr init = *k.getInit();
  for (Attribute a : init) {
    auto f = dyn_cast<FloatAttr>(a);
    if (!f || !f.getValue().isZero())
      return false;
  }
  return true;
}

bool allParallel(exec::KernelOp k) {
  return llvm::all_of(k.getIteratorTypes(), [](Attribute a) {
    return cast<StringAttr>(a).getValue() == "parallel";
  });
}

/// The value yielded as result |i| of |region|'s block.
Value yielded(Region &region, unsigned i) {
  auto y = cast<exec::YieldOp>(region.front().getTerminator());
  return i < y.getValues().size() ? y.getValues()[i] : Value();
}

/// The float constant |v| is, if it is one.
std::optional<double> constantOf(Value v) {
  auto c = v.getDefiningOp<arith::ConstantOp>();
  if (!c)
    return std::nullopt;
  auto f = dyn_cast<FloatAttr>(c.getValue());
  if (!f)
    return std::nullopt;
  return f.getValueAsDouble();
}

/// If |v| is `Op(a, b)` with a == |x| (either operand), the other operand.
template <typename Op> Value otherOperand(Value v, Value x) {
  auto op = v.getDefiningOp<Op>();
  if (!op)
    return {};
  if (op.getLhs() == x)
    return op.getRhs();
  if (op.getRhs() == x)
    return op.getLhs();
  return {};
}

/// If |v| is `acc + t * c` (|acc| the accumulator argument, operands of each
/// op in either order) with c the constant 1/N of the element type, |t|;
/// else null.
Value scaledSumTerm(Value v, Value acc, int64_t n, Type elem) {
  Value prod = otherOperand<arith::AddFOp>(v, acc);
  auto mul = prod ? prod.getDefiningOp<arith::MulFOp>() : arith::MulFOp();
  if (!mul)
    return {};
  const double want =
      elem.isF32() ? (double)(float)(1.0 / (double)n) : 1.0 / (double)n;
  for (auto [c, t] : {std::pair(mul.getRhs(), mul.getLhs()),
                      std::pair(mul.getLhs(), mul.getRhs())})
    if (std::optional<double> cv = constantOf(c); cv && *cv == want)
      return t;
  return {};
}

/// One decomposed LayerNorm: its four kernels and buffers.
struct Chain {
  exec::KernelOp mean, center, variance, affine;
  Value x, scale, bias, y, m, d, var, rstd;
  double epsilon = 0;
};

/// The users of |v|'s buffer and of its reshape views (not the views).
void usersOf(Value v, SmallVectorImpl<Operation *> &out) {
  for (Operation *u : v.getUsers()) {
    if (auto r = dyn_cast<exec::ReshapeOp>(u))
      usersOf(r.getResult(), out);
    else
      out.push_back(u);
  }
}

/// Whether every user of buffer |v| (through views) is one of |allowed|.
bool onlyUsedBy(Value v, ArrayRef<Operation *> allowed) {
  SmallVector<Operation *> users;
  usersOf(stripViews(v), users);
  return llvm::all_of(
      users, [&](Operation *u) { return llvm::is_contained(allowed, u); });
}

/// Matches the chain whose variance kernel is |var| (kernel 3 of
/// Passes.td), or none.
std::optional<Chain> matchChain(exec::KernelOp var) {
  Chain c;
  c.variance = var;
  // 3: var = sum(d * d * c), rstd = rsqrt(var + eps) in the epilogue.
  if (!isLastAxisReduction(var, /*epilogue=*/true) ||
      var.getInputs().size() != 1 || var.getOutputs().size() != 2)
    return std::nullopt;
  unsigned loops = var.getIteratorTypes().size();
  c.d = var.getInputs()[0];
  auto dt = cast<MemRefType>(c.d.getType());
  Type elem = dt.getElementType();
  if (!(elem.isF32() || elem.isF64()) || (int64_t)loops != dt.getRank() ||
      !mapOf(var, 0).isIdentity() || !isRowMap(mapOf(var, 1)) ||
      !isRowMap(mapOf(var, 2)))
    return std::nullopt;
  const int64_t n = dt.getShape().back();
  {
    Block &body = var.getBody().front();
    Value t = scaledSumTerm(yielded(var.getBody(), 0), body.getArgument(1), n,
                            elem);
    auto sq = t ? t.getDefiningOp<arith::MulFOp>() : arith::MulFOp();
    if (!sq || sq.getLhs() != body.getArgument(0) ||
        sq.getRhs() != body.getArgument(0))
      return std::nullopt;
    Block &epi = var.getEpilogue().front();
    auto ys = cast<exec::YieldOp>(epi.getTerminator()).getValues();
    if (ys.size() != 1)
      return std::nullopt;
    auto rs = ys[0].getDefiningOp<math::RsqrtOp>();
    Value eps = rs ? otherOperand<arith::AddFOp>(rs.getOperand(),
                                                 epi.getArgument(1))
                   : Value();
    std::optional<double> e = eps ? constantOf(eps) : std::nullopt;
    if (!e || !(*e >= 0))
      return std::nullopt;
    c.epsilon = *e;
  }
  c.var = var.getOutputs()[0];
  c.rstd = var.getOutputs()[1];
  // 2: d = x - mean, the only writer of d before the variance.
  SmallVector<Operation *> dUsers;
  usersOf(stripViews(c.d), dUsers);
  for (Operation *u : dUsers)
    if (auto k = dyn_cast<exec::KernelOp>(u);
        k && llvm::is_contained(k.getOutputs(), c.d))
      c.center = c.center ? exec::KernelOp() : k;
  if (!c.center || c.center->getBlock() != var->getBlock() ||
      !c.center->isBeforeInBlock(var) || !allParallel(c.center) ||
      c.center.getInputs().size() != 2 || c.center.getOutputs().size() != 1 ||
      c.center.getOutputs()[0] != c.d || !mapOf(c.center, 2).isIdentity())
    return std::nullopt;
  {
    Block &body = c.center.getBody().front();
    auto sub = yielded(c.center.getBody(), 0).getDefiningOp<arith::SubFOp>();
    if (!sub)
      return std::nullopt;
    int xi = -1, mi = -1;
    for (unsigned i = 0; i < 2; ++i) {
      if (sub.getLhs() == body.getArgument(i))
        xi = i;
      if (sub.getRhs() == body.getArgument(i))
        mi = i;
    }
    if (xi < 0 || mi < 0 || xi == mi || !mapOf(c.center, xi).isIdentity() ||
        !isRowMap(mapOf(c.center, mi)))
      return std::nullopt;
    c.x = c.center.getInputs()[xi];
    c.m = c.center.getInputs()[mi];
    if (c.x.getType() != c.d.getType())
      return std::nullopt;
  }
  // 1: mean = sum(x * c), the only kernel writing m.
  SmallVector<Operation *> mUsers;
  usersOf(stripViews(c.m), mUsers);
  for (Operation *u : mUsers)
    if (auto k = dyn_cast<exec::KernelOp>(u);
        k && llvm::is_contained(k.getOutputs(), c.m))
      c.mean = c.mean ? exec::KernelOp() : k;
  if (!c.mean || c.mean->getBlock() != var->getBlock() ||
      !c.mean->isBeforeInBlock(c.center) ||
      !isLastAxisReduction(c.mean, /*epilogue=*/false) ||
      c.mean.getInputs().size() != 1 || c.mean.getOutputs().size() != 1 ||
      c.mean.getInputs()[0] != c.x || !mapOf(c.mean, 0).isIdentity() ||
      !isRowMap(mapOf(c.mean, 1)))
    return std::nullopt;
  {
    Block &body = c.mean.getBody().front();
    if (scaledSumTerm(yielded(c.mean.getBody(), 0), body.getArgument(1), n,
                      elem) != body.getArgument(0))
      return std::nullopt;
  }
  // 4: y = ((d * rstd) * scale) + bias, the only other reader of d.
  for (Operation *u : dUsers)
    if (u != c.center.getOperation() && u != var.getOperation())
      c.affine = c.affine || !isa<exec::KernelOp>(u)
                     ? exec::KernelOp()
                     : cast<exec::KernelOp>(u);
  if (!c.affine || c.affine->getBlock() != var->getBlock() ||
      !var->isBeforeInBlock(c.affine) || !allParallel(c.affine) ||
      c.affine.getInputs().size() != 4 || c.affine.getOutputs().size() != 1)
    return std::nullopt;
  {
    Block &body = c.affine.getBody().front();
    auto argIndex = [&](Value v) -> int {
      for (unsigned i = 0; i < 4; ++i)
        if (v == body.getArgument(i))
          return i;
      return -1;
    };
    auto add = yielded(c.affine.getBody(), 0).getDefiningOp<arith::AddFOp>();
    if (!add)
      return std::nullopt;
    for (auto [p, b] : {std::pair(add.getLhs(), add.getRhs()),
                        std::pair(add.getRhs(), add.getLhs())}) {
      auto mw = p.getDefiningOp<arith::MulFOp>();
      int bi = argIndex(b);
      if (!mw || bi < 0)
        continue;
      for (auto [q, w] : {std::pair(mw.getLhs(), mw.getRhs()),
                          std::pair(mw.getRhs(), mw.getLhs())}) {
        auto mr = q.getDefiningOp<arith::MulFOp>();
        int wi = argIndex(w);
        if (!mr || wi < 0)
          continue;
        int di = argIndex(mr.getLhs()), ri = argIndex(mr.getRhs());
        if (di < 0 || ri < 0 || c.affine.getInputs()[di] != c.d)
          std::swap(di, ri);
        if (di < 0 || ri < 0 || c.affine.getInputs()[di] != c.d ||
            c.affine.getInputs()[ri] != c.rstd)
          continue;
        // Four distinct operands with their maps.
        SmallVector<int> roles{di, ri, wi, bi};
        llvm::sort(roles);
        if (std::adjacent_find(roles.begin(), roles.end()) != roles.end())
          continue;
        if (!mapOf(c.affine, di).isIdentity() ||
            !isRowMap(mapOf(c.affine, ri)) || !isColumnMap(mapOf(c.affine, wi)) ||
            !isColumnMap(mapOf(c.affine, bi)) ||
            !mapOf(c.affine, 4).isIdentity())
          continue;
        c.scale = c.affine.getInputs()[wi];
        c.bias = c.affine.getInputs()[bi];
      }
      if (c.scale)
        break;
    }
    if (!c.scale)
      return std::nullopt;
    c.y = c.affine.getOutputs()[0];
    if (c.y.getType() != c.x.getType())
      return std::nullopt;
    for (Value p : {c.scale, c.bias}) {
      auto pt = cast<MemRefType>(p.getType());
      if (pt.getRank() != 1 || pt.getDimSize(0) != n ||
          pt.getElementType() != elem)
        return std::nullopt;
    }
  }
  // Buffers: d and var have no reader outside the chain and are allocs the
  // pass can drop; mean and rstd hold one element a row of the element type.
  Operation *group[] = {c.mean, c.center, c.variance, c.affine};
  if (!onlyUsedBy(c.d, group) || !onlyUsedBy(c.var, group) ||
      !stripViews(c.d).getDefiningOp<exec::AllocOp>() ||
      !stripViews(c.var).getDefiningOp<exec::AllocOp>())
    return std::nullopt;
  const int64_t rows = dt.getNumElements() / n;
  for (Value s : {c.m, c.rstd}) {
    auto st = cast<MemRefType>(s.getType());
    if (st.getNumElements() != rows || st.getElementType() != elem ||
        !st.hasStaticShape() || !st.getLayout().isIdentity() ||
        (bool)stripViews(s).getDefiningOp<exec::SubviewOp>())
      return std::nullopt;
  }
  for (Value v : {c.x, c.y, c.scale, c.bias})
    if (!cast<MemRefType>(v.getType()).getLayout().isIdentity() ||
        (bool)v.getDefiningOp<exec::SubviewOp>())
      return std::nullopt;
  // The builtin reads x, scale and bias while it writes y, mean and rstd:
  // no output may share memory with an input.
  for (Value out : {c.y, c.m, c.rstd})
    for (Value in : {c.x, c.scale, c.bias})
      if (rootOf(out) == rootOf(in))
        return std::nullopt;
  // The ops between the first and the last kernel: none writes x, scale or
  // bias (read later now) or touches mean or rstd (written later now) or y.
  llvm::SmallPtrSet<const void *, 8> readLater{rootOf(c.x), rootOf(c.scale),
                                               rootOf(c.bias)};
  llvm::SmallPtrSet<const void *, 8> writtenLater{rootOf(c.m), rootOf(c.rstd),
                                                  rootOf(c.y)};
  for (Operation *op = c.mean->getNextNode(); op != c.affine.getOperation();
       op = op->getNextNode()) {
    if (llvm::is_contained(group, op))
      continue;
    lowering::Access a = accessOf(op);
    for (const void *w : a.writes)
      if (readLater.contains(w) || writtenLater.contains(w))
        return std::nullopt;
    for (const void *r : a.reads)
      if (writtenLater.contains(r))
        return std::nullopt;
  }
  return c;
}

/// Replaces |c|'s kernels with the builtin, at the affine kernel's place.
void replace(Chain &c) {
  OpBuilder b(c.affine);
  // The affine kernel's name with its op part replaced: `train_step_k12_add`
  // becomes `train_step_k12_layer_norm`.
  StringRef old = c.affine.getSymName();
  size_t cut = old.rfind("_k");
  size_t end = cut == StringRef::npos ? cut : old.find('_', cut + 2);
  std::string name = end == StringRef::npos
                         ? old.str() + "_layer_norm"
                         : old.take_front(end + 1).str() + "layer_norm";
  auto k = exec::BuiltinKernelOp::create(
      b, c.affine.getLoc(), b.getStringAttr(name),
      b.getStringAttr("layer_norm"), ValueRange{c.x, c.scale, c.bias},
      ValueRange{c.y, c.m, c.rstd});
  k->setAttr("epsilon", b.getF32FloatAttr((float)c.epsilon));
  SmallVector<Value> dead{c.d, c.var};
  c.affine.erase();
  c.variance.erase();
  c.center.erase();
  c.mean.erase();
  // The centered values and the variance are no longer stored.
  for (Value v : dead) {
    SmallVector<Operation *> chain;
    for (Operation *op = v.getDefiningOp(); op;
         op = isa<exec::ReshapeOp>(op) ? op->getOperand(0).getDefiningOp()
                                       : nullptr)
      chain.push_back(op);
    for (Operation *op : chain)
      if (op->use_empty())
        op->erase();
  }
}

struct FuseLayerNormPass
    : dlc::impl::FuseLayerNormPassBase<FuseLayerNormPass> {
  using FuseLayerNormPassBase::FuseLayerNormPassBase;

  void runOnOperation() override {
    SmallVector<exec::KernelOp> candidates;
    getOperation().walk([&](exec::KernelOp k) {
      if (isLastAxisReduction(k, /*epilogue=*/true))
        candidates.push_back(k);
    });
    for (exec::KernelOp k : candidates)
      if (std::optional<Chain> c = matchChain(k))
        replace(*c);
  }
};

} // namespace
