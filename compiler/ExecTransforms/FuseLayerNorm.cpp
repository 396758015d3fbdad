//===- FuseLayerNorm.cpp - decomposed LayerNorm -> one row kernel ---------===//
//
// --dlexec-fuse-layer-norm (Passes.td): the four kernels a LayerNorm over the
// last axis leaves after fusion (mean, centered values, variance with its
// rsqrt epilogue, affine) become one `layer_norm` builtin kernel that reads
// x once and writes y once.
//
//===----------------------------------------------------------------------===//
#include "compiler/ExecTransforms/Passes.h"

#include "dialects/Exec/Analysis/BufferAccess.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <algorithm>
#include <optional>

namespace dlc {
#define GEN_PASS_DEF_FUSELAYERNORMPASS
#include "compiler/ExecTransforms/Passes.h.inc"
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
  /// The training form's `u = d * rstd` kernel (null in the inference
  /// form, whose affine multiplies d by rstd itself).
  exec::KernelOp normalize;
  Value x, scale, bias, y, m, d, var, rstd;
  /// The normalized values u (training form only).
  Value u;
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

/// The index of block argument |v| of |k|'s body, or -1.
int argIndex(exec::KernelOp k, Value v) {
  Block &body = k.getBody().front();
  for (unsigned i = 0; i < body.getNumArguments(); ++i)
    if (v == body.getArgument(i))
      return i;
  return -1;
}

/// Whether |k| is the training form's `u = d * rstd` for |c|'s d and rstd
/// (all-parallel, d and u identity maps, rstd one element a row).
bool matchNormalize(exec::KernelOp k, const Chain &c) {
  if (!allParallel(k) || k.getInputs().size() != 2 ||
      k.getOutputs().size() != 1 || !mapOf(k, 2).isIdentity())
    return false;
  auto mul = yielded(k.getBody(), 0).getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  int di = argIndex(k, mul.getLhs()), ri = argIndex(k, mul.getRhs());
  if (di >= 0 && ri >= 0 && k.getInputs()[di] != c.d)
    std::swap(di, ri);
  return di >= 0 && ri >= 0 && di != ri && di < 2 && ri < 2 &&
         k.getInputs()[di] == c.d && k.getInputs()[ri] == c.rstd &&
         mapOf(k, di).isIdentity() && isRowMap(mapOf(k, ri)) &&
         k.getOutputs()[0].getType() == c.d.getType();
}

/// Whether |k| is the affine of |c| and, if so, records its scale and bias
/// in |c|: ((d * rstd) * scale) + bias over four operands (inference form,
/// |c|.normalize null), or (u * scale) + bias over three (training form, u
/// the normalize kernel's output); operands of each op in either order,
/// scale and bias read along the last loop.
bool matchAffine(exec::KernelOp k, Chain &c) {
  const unsigned ins = c.normalize ? 3 : 4;
  if (!allParallel(k) || k.getInputs().size() != ins ||
      k.getOutputs().size() != 1 || !mapOf(k, ins).isIdentity())
    return false;
  auto add = yielded(k.getBody(), 0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  for (auto [p, b] : {std::pair(add.getLhs(), add.getRhs()),
                      std::pair(add.getRhs(), add.getLhs())}) {
    auto mw = p.getDefiningOp<arith::MulFOp>();
    int bi = argIndex(k, b);
    if (!mw || bi < 0 || bi >= (int)ins)
      continue;
    for (auto [q, w] : {std::pair(mw.getLhs(), mw.getRhs()),
                        std::pair(mw.getRhs(), mw.getLhs())}) {
      int wi = argIndex(k, w);
      if (wi < 0 || wi >= (int)ins)
        continue;
      // The normalized value: an input (training) or d * rstd (inference).
      SmallVector<int, 4> roles{bi, wi};
      if (c.normalize) {
        int ui = argIndex(k, q);
        if (ui < 0 || ui >= (int)ins || k.getInputs()[ui] != c.u ||
            !mapOf(k, ui).isIdentity())
          continue;
        roles.push_back(ui);
      } else {
        auto mr = q.getDefiningOp<arith::MulFOp>();
        if (!mr)
          continue;
        int di = argIndex(k, mr.getLhs()), ri = argIndex(k, mr.getRhs());
        if (di < 0 || ri < 0 || k.getInputs()[di] != c.d)
          std::swap(di, ri);
        if (di < 0 || ri < 0 || k.getInputs()[di] != c.d ||
            k.getInputs()[ri] != c.rstd || !mapOf(k, di).isIdentity() ||
            !isRowMap(mapOf(k, ri)))
          continue;
        roles.append({di, ri});
      }
      // Distinct operands, scale and bias along the last loop.
      llvm::sort(roles);
      if (std::adjacent_find(roles.begin(), roles.end()) != roles.end() ||
          !isColumnMap(mapOf(k, wi)) || !isColumnMap(mapOf(k, bi)))
        continue;
      c.scale = k.getInputs()[wi];
      c.bias = k.getInputs()[bi];
      return true;
    }
  }
  return false;
}

/// Whether the buffers of the matched chain |c| (rows of |n| elements of
/// |dt|) let one builtin replace it.
bool buffersAllowFusion(Chain &c, MemRefType dt, int64_t n) {
  Type elem = dt.getElementType();
  // Buffers: d and var have no reader outside the chain and are allocs the
  // pass can drop; mean and rstd hold one element a row of the element type.
  // In the training form the builtin writes d and u as well (their
  // readers come after it: checked below), so only var must be unread.
  SmallVector<Operation *, 5> group{c.mean, c.center, c.variance, c.affine};
  if (c.normalize)
    group.push_back(c.normalize);
  if ((!c.normalize && (!onlyUsedBy(c.d, group) ||
                        !stripViews(c.d).getDefiningOp<exec::AllocOp>())) ||
      !onlyUsedBy(c.var, group) ||
      !stripViews(c.var).getDefiningOp<exec::AllocOp>())
    return false;
  if (c.normalize)
    for (Value v : {c.d, c.u})
      if (v.getType() != c.x.getType() ||
          (bool)stripViews(v).getDefiningOp<exec::SubviewOp>())
        return false;
  const int64_t rows = dt.getNumElements() / n;
  for (Value s : {c.m, c.rstd}) {
    auto st = cast<MemRefType>(s.getType());
    if (st.getNumElements() != rows || st.getElementType() != elem ||
        !st.hasStaticShape() || !st.getLayout().isIdentity() ||
        (bool)stripViews(s).getDefiningOp<exec::SubviewOp>())
      return false;
  }
  for (Value v : {c.x, c.y, c.scale, c.bias})
    if (!cast<MemRefType>(v.getType()).getLayout().isIdentity() ||
        (bool)v.getDefiningOp<exec::SubviewOp>())
      return false;
  // The builtin reads x, scale and bias while it writes y, mean and rstd
  // (and d and u): no output may share memory with an input or another
  // output.
  SmallVector<Value, 5> outs{c.y, c.m, c.rstd};
  if (c.normalize)
    outs.append({c.d, c.u});
  for (auto [i, out] : llvm::enumerate(outs)) {
    for (Value in : {c.x, c.scale, c.bias})
      if (rootOf(out) == rootOf(in))
        return false;
    for (Value other : ArrayRef<Value>(outs).drop_front(i + 1))
      if (rootOf(out) == rootOf(other))
        return false;
  }
  // The ops between the first and the last kernel: none writes x, scale or
  // bias (read later now) or touches mean or rstd (written later now) or y.
  llvm::SmallPtrSet<const void *, 8> readLater{rootOf(c.x), rootOf(c.scale),
                                               rootOf(c.bias)};
  llvm::SmallPtrSet<const void *, 8> writtenLater;
  for (Value out : outs)
    writtenLater.insert(rootOf(out));
  for (Operation *op = c.mean->getNextNode(); op != c.affine.getOperation();
       op = op->getNextNode()) {
    if (llvm::is_contained(group, op))
      continue;
    lowering::Access a = accessOf(op);
    for (const void *w : a.writes)
      if (readLater.contains(w) || writtenLater.contains(w))
        return false;
    for (const void *r : a.reads)
      if (writtenLater.contains(r))
        return false;
  }
  return true;
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
  // 4: the affine. Inference form: y = ((d * rstd) * scale) + bias in one
  // kernel, the only other reader of d. Training form (the backward reads d
  // and u): u = d * rstd in one kernel, then y = (u * scale) + bias.
  SmallVector<Operation *> others;
  for (Operation *u : dUsers)
    if (u != c.center.getOperation() && u != var.getOperation())
      others.push_back(u);
  if (others.size() == 1 && isa<exec::KernelOp>(others[0]) &&
      matchAffine(cast<exec::KernelOp>(others[0]), c)) {
    c.affine = cast<exec::KernelOp>(others[0]);
  } else {
    for (Operation *u : others)
      if (auto k = dyn_cast<exec::KernelOp>(u); k && matchNormalize(k, c)) {
        c.normalize = k;
        break;
      }
    if (!c.normalize)
      return std::nullopt;
    c.u = c.normalize.getOutputs()[0];
    SmallVector<Operation *> uUsers;
    usersOf(stripViews(c.u), uUsers);
    for (Operation *u : uUsers)
      if (auto k = dyn_cast<exec::KernelOp>(u);
          k && u != c.normalize.getOperation() && matchAffine(k, c)) {
        c.affine = k;
        break;
      }
    if (!c.affine)
      return std::nullopt;
  }
  if (c.affine->getBlock() != var->getBlock() ||
      !(c.normalize ? c.normalize.getOperation() : var.getOperation())
           ->isBeforeInBlock(c.affine))
    return std::nullopt;
  if (c.normalize && (c.normalize->getBlock() != var->getBlock() ||
                      !var->isBeforeInBlock(c.normalize)))
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
  if (!buffersAllowFusion(c, dt, n))
    return std::nullopt;
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
  SmallVector<Value, 5> outs{c.y, c.m, c.rstd};
  if (c.normalize)
    outs.append({c.d, c.u});
  auto k = exec::BuiltinKernelOp::create(
      b, c.affine.getLoc(), b.getStringAttr(name),
      b.getStringAttr(c.normalize ? "layer_norm_train" : "layer_norm"),
      ValueRange{c.x, c.scale, c.bias}, outs);
  k->setAttr("epsilon", b.getF32FloatAttr((float)c.epsilon));
  SmallVector<Value> dead{c.var};
  if (!c.normalize)
    dead.push_back(c.d);
  c.affine.erase();
  if (c.normalize)
    c.normalize.erase();
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
