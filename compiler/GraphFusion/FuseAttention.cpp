//===- FuseAttention.cpp - decomposed attention -> dlgraph.attention ------===//
//
// dlgraph-fuse-attention (Passes.td): starts at each softmax over the last
// axis of rank-4 scores and walks single-use chains back to the Q·Kᵀ
// product and forward to the product with V, reading Q, K and V through
// transposes, scalings and grouped-query repeats, and the masks off the
// adds and selects between. A candidate that does not fit is left as it is,
// with its reason in the module's record.
//
//===----------------------------------------------------------------------===//
#include "compiler/GraphFusion/Passes.h"

#include "compiler/Support/NodeName.h"

#include "dialects/Graph/GraphAttributes.h"
#include "dialects/Graph/GraphOps.h"
#include "runtime/schema/Semantics/Attention.h"
#include "runtime/schema/Semantics/Broadcast.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

#include <cmath>
#include <limits>
#include <tuple>

namespace dlc {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "compiler/GraphFusion/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;
using namespace dlc::graph;

void dlc::FusionOptions::bindOptions(OptionsBinder &binder) {
  binder.opt("fuse-attention", fuseAttention,
             "Replace decomposed attention (matmul, scale, mask, softmax, "
             "matmul) by one fused dlgraph.attention, whose kernels never "
             "store the scores (docs/attention.md; default {default})");
}

std::optional<AttentionFusionRecord>
dlc::readAttentionFusionRecord(ModuleOp module) {
  auto d = module->getAttrOfType<DictionaryAttr>(kAttentionFusionAttr);
  if (!d)
    return std::nullopt;
  AttentionFusionRecord r;
  if (auto c = d.getAs<IntegerAttr>("candidates"))
    r.candidates = c.getInt();
  if (auto f = d.getAs<IntegerAttr>("fused"))
    r.fused = f.getInt();
  if (auto u = d.getAs<ArrayAttr>("unfused"))
    for (Attribute a : u)
      if (auto s = dyn_cast<StringAttr>(a))
        r.unfused.push_back(s.str());
  return r;
}

namespace {

/// The ONNX node name of |loc|, or "<unnamed>".
std::string nodeName(Location loc) {
  std::string name = onnxNodeName(loc);
  return name.empty() ? "<unnamed>" : name;
}

/// The value of a splat float constant (any shape), or nullopt. Exporters
/// write scales as expressions of constants (SDPA's sqrt(scale), cast to
/// the scores' type), which the importer does not fold: sqrt, cast,
/// negation, products and quotients of splats are evaluated here.
std::optional<double> splatValue(Value v, int depth = 0) {
  DenseElementsAttr attr;
  if (matchPattern(v, m_Constant(&attr))) {
    if (!attr.isSplat() || !isa<FloatType>(attr.getElementType()))
      return std::nullopt;
    return attr.getSplatValue<APFloat>().convertToDouble();
  }
  Operation *def = v.getDefiningOp();
  if (!def || depth > 8)
    return std::nullopt;
  auto unary = [&](auto fn) -> std::optional<double> {
    std::optional<double> x = splatValue(def->getOperand(0), depth + 1);
    return x ? std::optional<double>(fn(*x)) : std::nullopt;
  };
  auto binary = [&](auto fn) -> std::optional<double> {
    std::optional<double> x = splatValue(def->getOperand(0), depth + 1);
    std::optional<double> y = splatValue(def->getOperand(1), depth + 1);
    return x && y ? std::optional<double>(fn(*x, *y)) : std::nullopt;
  };
  if (isa<SqrtOp>(def))
    return unary([](double x) { return std::sqrt(x); });
  if (isa<NegOp>(def))
    return unary([](double x) { return -x; });
  if (auto castOp = dyn_cast<CastOp>(def)) {
    Type et = castOp.getType().getElementType();
    if (!isa<FloatType>(et))
      return std::nullopt;
    // Rounded to the target type, as the cast computes it.
    return unary([&](double x) {
      APFloat f(x);
      bool lost;
      f.convert(cast<FloatType>(et).getFloatSemantics(),
                APFloat::rmNearestTiesToEven, &lost);
      return f.convertToDouble();
    });
  }
  if (isa<MulOp>(def))
    return binary([](double x, double y) { return x * y; });
  if (isa<DivOp>(def))
    return binary([](double x, double y) { return x / y; });
  return std::nullopt;
}

/// |v| without the no-op views in front of it: dlgraph.identity and
/// reshapes to the same type.
Value skipNoOps(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto id = dyn_cast<IdentityOp>(def)) {
      v = id.getInput();
      continue;
    }
    if (auto r = dyn_cast<ReshapeOp>(def); r && r.getInput().getType() == r.getType()) {
      v = r.getInput();
      continue;
    }
    break;
  }
  return v;
}

/// A fill that masks a score out: -inf or at most -1e4 (exporters use
/// -1e4, -1e9, finfo.min).
bool isMaskFill(Value v) {
  std::optional<double> x = splatValue(v);
  return x && *x <= -1.0e4;
}

/// Whether |v| is a score computed from a matmul: a chain of mul, div, add,
/// select and cast ops reaches a dlgraph.matmul.
bool reachesMatMul(Value v, int depth = 0) {
  Operation *def = v.getDefiningOp();
  if (!def || depth > 16)
    return false;
  if (isa<MatMulOp>(def))
    return true;
  if (isa<MulOp, DivOp, AddOp, SelectOp>(def))
    return llvm::any_of(def->getOperands(), [&](Value o) {
      return reachesMatMul(o, depth + 1);
    });
  return false;
}

/// The first variable that the float mask |mask| is computed from whose
/// values do not look like a mask (each 0, 1, non-finite or <= -1e4): a
/// learned score bias, which needs the scores' gradient; null when none.
VariableOp trainableBias(Value mask) {
  auto mt = cast<RankedTensorType>(mask.getType());
  if (!isa<FloatType>(mt.getElementType()))
    return VariableOp();
  SetVector<Operation *> slice;
  BackwardSliceOptions options;
  options.inclusive = true;
  if (failed(getBackwardSlice(mask, &slice, options)))
    return VariableOp();
  for (Operation *op : slice) {
    auto read = dyn_cast<ReadVariableOp>(op);
    if (!read)
      continue;
    auto var = SymbolTable::lookupNearestSymbolFrom<VariableOp>(
        read, read.getVariableAttr());
    if (!var)
      continue;
    auto maskLike = [](double x) {
      return !std::isfinite(x) || x == 0.0 || x == 1.0 || x <= -1.0e4;
    };
    std::optional<ElementsAttr> init = var.getInitialValue();
    if (!init)
      return var;
    if (auto dense = dyn_cast<DenseFPElementsAttr>(*init)) {
      for (APFloat f : dense.getValues<APFloat>())
        if (!maskLike(f.convertToDouble()))
          return var;
      continue;
    }
    auto blob = dyn_cast<DenseF32ResourceElementsAttr>(*init);
    std::optional<ArrayRef<float>> values =
        blob ? blob.tryGetAsArrayRef() : std::nullopt;
    if (!values)
      return var;
    for (float f : *values)
      if (!maskLike(f))
        return var;
  }
  return VariableOp();
}

/// What one attention is made of.
struct Match {
  SoftmaxOp softmax;
  MatMulOp qk, pv;
  double scale = 1.0;
  SmallVector<Value> keepMasks; // i1: true keeps the score
  SmallVector<Value> addMasks;  // float, added to the scaled scores
  DropoutOp dropout;
  TransposeOp outTranspose;
  Value q, k, v;
  bool seqFirst[4] = {false, false, false, false};
  bool causal = false;
  /// Ops the fused op replaces (erased when nothing else uses them).
  SmallVector<Operation *> replaced;
};

/// A value read as [B, H, S, D]: |base| permuted by |perm| (logical dim i
/// is base dim perm[i]).
struct Layout {
  Value base;
  SmallVector<int64_t, 4> perm;
};

class Fuser {
public:
  Fuser(func::FuncOp func) : func(func) {}

  /// Tries |softmax|; on success the function holds a dlgraph.attention in
  /// its place. On failure |why| says what did not fit.
  LogicalResult fuse(SoftmaxOp softmax, std::string &why);

  /// Erases the ops of |ops| that nothing uses any more.
  static void eraseDead(ArrayRef<Operation *> ops);

private:
  LogicalResult walkScores(Value s, Match &m, std::string &why);
  LogicalResult walkProbabilities(Match &m, std::string &why);
  /// Peels transposes (composing |start|) and splat scalings (into
  /// m.scale) off |x|.
  Layout peel(Value x, ArrayRef<int64_t> start, Match &m);
  /// |x| (a Q, K or V read as [B, H, S, D] through |start|) as a value and
  /// its seq_first flag, grouped-query repeats removed for K and V.
  std::pair<Value, bool> resolve(Value x, ArrayRef<int64_t> start, Match &m,
                                 bool unrepeat);
  /// Whether constant |mask| (i1 keep, or additive) is exactly the causal
  /// mask of |sq| x |skv| scores broadcast over batch and heads.
  static bool isCausalMask(Value mask, int64_t sq, int64_t skv);
  /// The masks of |m| as one operand (nullptr when none).
  Value combineMasks(OpBuilder &b, Location loc, Match &m);

  func::FuncOp func;
};

LogicalResult Fuser::walkScores(Value s, Match &m, std::string &why) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(s.getType()).getShape();
  while (true) {
    Operation *def = s.getDefiningOp();
    if (!def) {
      why = "the scores are a function argument, not a matmul";
      return failure();
    }
    if (!s.hasOneUse()) {
      why = "the scores (the result of '" +
            def->getName().getStringRef().str() +
            "') are also used outside the attention";
      return failure();
    }
    if (cast<RankedTensorType>(s.getType()).getShape() != shape) {
      why = "an op between the scores and the softmax broadcasts them";
      return failure();
    }
    if (auto mm = dyn_cast<MatMulOp>(def)) {
      m.qk = mm;
      m.replaced.push_back(mm);
      return success();
    }
    m.replaced.push_back(def);
    if (auto mul = dyn_cast<MulOp>(def)) {
      if (auto c = splatValue(mul.getRhs())) {
        m.scale *= *c;
        s = mul.getLhs();
        continue;
      }
      if (auto c = splatValue(mul.getLhs())) {
        m.scale *= *c;
        s = mul.getRhs();
        continue;
      }
      why = "the scores are multiplied by a tensor that is not a constant "
            "scalar";
      return failure();
    }
    if (auto div = dyn_cast<DivOp>(def)) {
      auto c = splatValue(div.getRhs());
      if (!c || *c == 0.0) {
        why = "the scores are divided by a tensor that is not a nonzero "
              "constant scalar";
        return failure();
      }
      m.scale /= *c;
      s = div.getLhs();
      continue;
    }
    if (auto add = dyn_cast<AddOp>(def)) {
      bool lhs = reachesMatMul(add.getLhs()), rhs = reachesMatMul(add.getRhs());
      if (lhs == rhs) {
        why = lhs ? "both operands of an add of the scores come from matmuls"
                  : "an add of the scores whose operands come from no matmul";
        return failure();
      }
      Value mask = lhs ? add.getRhs() : add.getLhs();
      m.addMasks.push_back(mask);
      s = lhs ? add.getLhs() : add.getRhs();
      continue;
    }
    if (auto sel = dyn_cast<SelectOp>(def)) {
      if (isMaskFill(sel.getOnFalse()) && reachesMatMul(sel.getOnTrue())) {
        m.keepMasks.push_back(sel.getCondition());
        s = sel.getOnTrue();
        continue;
      }
      if (isMaskFill(sel.getOnTrue()) && reachesMatMul(sel.getOnFalse())) {
        // select(drop, fill, s): keep = !drop, built where the select was.
        OpBuilder b(sel);
        auto ct = cast<RankedTensorType>(sel.getCondition().getType());
        auto i1 = RankedTensorType::get({}, b.getI1Type());
        Value f = ConstantOp::create(
            b, sel.getLoc(),
            cast<ElementsAttr>(DenseElementsAttr::get(i1, ArrayRef<bool>{false})));
        Value t = ConstantOp::create(
            b, sel.getLoc(),
            cast<ElementsAttr>(DenseElementsAttr::get(i1, ArrayRef<bool>{true})));
        Value keep = SelectOp::create(b, sel.getLoc(), ct, sel.getCondition(),
                                      f, t);
        m.keepMasks.push_back(keep);
        s = sel.getOnFalse();
        continue;
      }
      why = "a select of the scores whose fill is not -inf or <= -1e4";
      return failure();
    }
    why = "'" + def->getName().getStringRef().str() +
          "' between the scores and the softmax";
    return failure();
  }
}

LogicalResult Fuser::walkProbabilities(Match &m, std::string &why) {
  Value p = m.softmax.getResult();
  while (true) {
    SmallVector<Operation *> users(p.getUsers().begin(), p.getUsers().end());
    // The NaN guard of ONNX Attention and of PyTorch's SDPA export:
    // select(p == p, p, 0) or select(p != p, 0, p).
    if (users.size() == 3 || users.size() == 2) {
      CompareOp cmp;
      SelectOp sel;
      for (Operation *u : users) {
        if (auto c = dyn_cast<CompareOp>(u))
          cmp = c;
        if (auto s = dyn_cast<SelectOp>(u))
          sel = s;
      }
      bool eqForm = cmp && sel && cmp.getPredicate() == "eq" &&
                    sel.getOnTrue() == p && splatValue(sel.getOnFalse()) == 0.0;
      bool neForm = cmp && sel && cmp.getPredicate() == "ne" &&
                    sel.getOnFalse() == p && splatValue(sel.getOnTrue()) == 0.0;
      if ((eqForm || neForm) && cmp.getLhs() == p && cmp.getRhs() == p &&
          cmp.getResult().hasOneUse() &&
          sel.getCondition() == cmp.getResult() &&
          sel.getType() == p.getType()) {
        m.replaced.push_back(cmp);
        m.replaced.push_back(sel);
        p = sel.getResult();
        continue;
      }
    }
    if (!p.hasOneUse()) {
      why = "the probabilities are also used outside the attention (an "
            "output or another op)";
      return failure();
    }
    Operation *user = *p.getUsers().begin();
    if (auto d = dyn_cast<DropoutOp>(user)) {
      if (!d.getMask().use_empty() || m.dropout) {
        why = "the dropout of the probabilities has its mask used";
        return failure();
      }
      m.dropout = d;
      m.replaced.push_back(d);
      p = d.getResult();
      continue;
    }
    if (auto mm = dyn_cast<MatMulOp>(user)) {
      if (mm.getLhs() != p) {
        why = "the probabilities are the right operand of the matmul";
        return failure();
      }
      m.pv = mm;
      m.replaced.push_back(mm);
      return success();
    }
    why = "the probabilities go to '" + user->getName().getStringRef().str() +
          "', not a matmul with V";
    return failure();
  }
}

Layout Fuser::peel(Value x, ArrayRef<int64_t> start, Match &m) {
  Layout l{x, SmallVector<int64_t, 4>(start.begin(), start.end())};
  while (Operation *def = l.base.getDefiningOp()) {
    if (isa<IdentityOp>(def) ||
        (isa<ReshapeOp>(def) &&
         def->getOperand(0).getType() == def->getResult(0).getType())) {
      m.replaced.push_back(def);
      l.base = def->getOperand(0);
      continue;
    }
    // The dynamo exporter's transpose of the last two dims of a rank-4
    // tensor: reshape [B, H, X, Y] -> [B·H, X, Y], transpose [0, 2, 1],
    // reshape -> [B, H, Y, X].
    if (auto outer = dyn_cast<ReshapeOp>(def)) {
      auto t3 = outer.getInput().getDefiningOp<TransposeOp>();
      auto inner = t3 ? t3.getInput().getDefiningOp<ReshapeOp>() : ReshapeOp();
      if (inner && t3.getPerm() == ArrayRef<int64_t>{0, 2, 1}) {
        auto in = cast<RankedTensorType>(inner.getInput().getType());
        auto out = cast<RankedTensorType>(outer.getType());
        if (in.getRank() == 4 && out.getRank() == 4 &&
            out.getShape() == ArrayRef<int64_t>{in.getDimSize(0),
                                                in.getDimSize(1),
                                                in.getDimSize(3),
                                                in.getDimSize(2)}) {
          static constexpr int64_t kSwap[] = {0, 1, 3, 2};
          for (int64_t &d : l.perm)
            d = kSwap[d];
          m.replaced.append({outer, t3, inner});
          l.base = inner.getInput();
          continue;
        }
      }
    }
    if (auto t = dyn_cast<TransposeOp>(def)) {
      ArrayRef<int64_t> p = t.getPerm();
      for (int64_t &d : l.perm)
        d = p[d];
      m.replaced.push_back(t);
      l.base = t.getInput();
      continue;
    }
    if (auto mul = dyn_cast<MulOp>(def)) {
      auto a = cast<RankedTensorType>(mul.getLhs().getType());
      auto b = cast<RankedTensorType>(mul.getRhs().getType());
      auto r = cast<RankedTensorType>(mul.getType());
      if (auto c = splatValue(mul.getRhs()); c && a == r) {
        m.scale *= *c;
        m.replaced.push_back(mul);
        l.base = mul.getLhs();
        continue;
      }
      if (auto c = splatValue(mul.getLhs()); c && b == r) {
        m.scale *= *c;
        m.replaced.push_back(mul);
        l.base = mul.getRhs();
        continue;
      }
    }
    if (auto div = dyn_cast<DivOp>(def)) {
      auto c = splatValue(div.getRhs());
      if (c && *c != 0.0 && div.getLhs().getType() == div.getType()) {
        m.scale /= *c;
        m.replaced.push_back(div);
        l.base = div.getLhs();
        continue;
      }
    }
    break;
  }
  return l;
}

std::pair<Value, bool> Fuser::resolve(Value x, ArrayRef<int64_t> start,
                                      Match &m, bool unrepeat) {
  static constexpr int64_t kIdentity[] = {0, 1, 2, 3};
  static constexpr int64_t kSeqFirst[] = {0, 2, 1, 3};
  Layout l = peel(x, start, m);
  if (unrepeat && ArrayRef<int64_t>(l.perm) == ArrayRef<int64_t>(kIdentity)) {
    // Grouped-query repeat: reshape(broadcast_to([B, Hkv, 1, S, D] ->
    // [B, Hkv, g, S, D]) -> [B, Hkv * g, S, D]).
    auto r = l.base.getDefiningOp<ReshapeOp>();
    auto bc = r ? skipNoOps(r.getInput()).getDefiningOp<BroadcastToOp>()
                : BroadcastToOp();
    if (bc) {
      auto in = cast<RankedTensorType>(bc.getInput().getType());
      auto out = cast<RankedTensorType>(bc.getType());
      auto rt = cast<RankedTensorType>(r.getType());
      if (in.getRank() == 5 && out.getRank() == 5 && rt.getRank() == 4 &&
          in.getDimSize(2) == 1 && in.getDimSize(0) == out.getDimSize(0) &&
          in.getDimSize(1) == out.getDimSize(1) &&
          in.getShape().drop_front(3) == out.getShape().drop_front(3) &&
          rt.getDimSize(1) == out.getDimSize(1) * out.getDimSize(2)) {
        m.replaced.push_back(r);
        m.replaced.push_back(bc);
        Value kv = bc.getInput();
        auto unrepeated = RankedTensorType::get(
            {in.getDimSize(0), in.getDimSize(1), in.getDimSize(3),
             in.getDimSize(4)},
            in.getElementType());
        if (auto r0 = kv.getDefiningOp<ReshapeOp>();
            r0 && r0.getInput().getType() == unrepeated) {
          m.replaced.push_back(r0);
          kv = r0.getInput();
        } else {
          OpBuilder b(r);
          kv = ReshapeOp::create(b, r.getLoc(), unrepeated, kv);
        }
        l = peel(kv, kIdentity, m);
      }
    }
  }
  if (ArrayRef<int64_t>(l.perm) == ArrayRef<int64_t>(kIdentity))
    return {l.base, false};
  if (ArrayRef<int64_t>(l.perm) == ArrayRef<int64_t>(kSeqFirst))
    return {l.base, true};
  // Another order: one transpose to [B, H, S, D] (the fused op still saves
  // the scores).
  OpBuilder b(func.getContext());
  b.setInsertionPointAfterValue(l.base);
  Value t = TransposeOp::create(b, l.base.getLoc(), l.base,
                                b.getDenseI64ArrayAttr(l.perm));
  return {t, false};
}

bool Fuser::isCausalMask(Value mask, int64_t sq, int64_t skv) {
  DenseElementsAttr attr;
  if (!matchPattern(mask, m_Constant(&attr)))
    return false;
  auto t = cast<RankedTensorType>(mask.getType());
  ArrayRef<int64_t> shape = t.getShape();
  if (shape.size() < 2 || shape[shape.size() - 2] != sq ||
      shape.back() != skv ||
      llvm::any_of(shape.drop_back(2), [](int64_t d) { return d != 1; }))
    return false;
  auto keepAt = [&](int64_t i, int64_t j) {
    return semantics::attentionCausalKeeps(i, j, sq, skv);
  };
  if (t.getElementType().isInteger(1)) {
    auto values = attr.getValues<bool>();
    for (int64_t i = 0; i < sq; ++i)
      for (int64_t j = 0; j < skv; ++j)
        if (values[i * skv + j] != keepAt(i, j))
          return false;
    return true;
  }
  if (!isa<FloatType>(t.getElementType()))
    return false;
  auto values = attr.getValues<APFloat>();
  for (int64_t i = 0; i < sq; ++i)
    for (int64_t j = 0; j < skv; ++j) {
      double x = values[i * skv + j].convertToDouble();
      if (keepAt(i, j) ? x != 0.0 : !(x <= -1.0e4))
        return false;
    }
  return true;
}

Value Fuser::combineMasks(OpBuilder &b, Location loc, Match &m) {
  Value keep, add;
  for (Value k : m.keepMasks) {
    if (!keep) {
      keep = k;
      continue;
    }
    auto kt = cast<RankedTensorType>(keep.getType());
    auto nt = cast<RankedTensorType>(k.getType());
    auto shape = semantics::broadcastShapes(kt.getShape(), nt.getShape());
    auto i1 = RankedTensorType::get({}, b.getI1Type());
    Value f = ConstantOp::create(
        b, loc, cast<ElementsAttr>(DenseElementsAttr::get(i1, ArrayRef<bool>{false})));
    keep = SelectOp::create(b, loc, kt.clone(*shape), keep, k, f);
  }
  for (Value a : m.addMasks)
    add = add ? AddOp::create(b, loc, add, a).getResult() : a;
  if (!keep || !add)
    return keep ? keep : add;
  // Both kinds: the boolean one as 0 / -inf, added.
  auto at = cast<RankedTensorType>(add.getType());
  auto st = RankedTensorType::get({}, at.getElementType());
  auto splat = [&](double x) -> Value {
    Attribute e = b.getFloatAttr(at.getElementType(), x);
    return ConstantOp::create(
        b, loc, cast<ElementsAttr>(DenseElementsAttr::get(st, ArrayRef(e))));
  };
  Value zero = splat(0.0);
  Value ninf = splat(-std::numeric_limits<double>::infinity());
  Value asAdd = SelectOp::create(b, loc, keep, zero, ninf);
  return AddOp::create(b, loc, add, asAdd);
}

LogicalResult Fuser::fuse(SoftmaxOp softmax, std::string &why) {
  Match m;
  m.softmax = softmax;
  m.replaced.push_back(softmax);
  auto st = cast<RankedTensorType>(softmax.getType());
  int64_t rank = st.getRank();
  if (rank != 4 && rank != 3) {
    why = "scores of rank " + std::to_string(rank) +
          " (the fused attention takes [batch, heads, query, key] or "
          "[batch x heads, query, key] scores)";
    return failure();
  }
  if (failed(walkScores(softmax.getInput(), m, why)) ||
      failed(walkProbabilities(m, why)))
    return failure();
  auto pvType = cast<RankedTensorType>(m.pv.getType());
  if (cast<RankedTensorType>(m.qk.getLhs().getType()).getRank() != rank ||
      cast<RankedTensorType>(m.qk.getRhs().getType()).getRank() != rank ||
      cast<RankedTensorType>(m.pv.getRhs().getType()).getRank() != rank ||
      pvType.getRank() != rank) {
    why = "Q, K or V is not of the scores' rank " + std::to_string(rank);
    return failure();
  }
  Value q, k, v;
  bool qsf = false, ksf = false, vsf = false;
  if (rank == 4) {
    static constexpr int64_t kIdentity[] = {0, 1, 2, 3};
    static constexpr int64_t kSwapLast[] = {0, 1, 3, 2};
    std::tie(q, qsf) = resolve(m.qk.getLhs(), kIdentity, m, /*unrepeat=*/false);
    std::tie(k, ksf) = resolve(m.qk.getRhs(), kSwapLast, m, /*unrepeat=*/true);
    std::tie(v, vsf) = resolve(m.pv.getRhs(), kIdentity, m, /*unrepeat=*/true);
  } else {
    // [B·H, S, D] (torch.nn.MultiheadAttention's bmm): read as [1, B·H,
    // S, D], one transpose where the operand is another order.
    static constexpr int64_t kIdentity3[] = {0, 1, 2};
    static constexpr int64_t kSwapLast3[] = {0, 2, 1};
    auto as4d = [&](Value x, ArrayRef<int64_t> start) -> Value {
      Layout l = peel(x, start, m);
      OpBuilder b(func.getContext());
      b.setInsertionPointAfterValue(l.base);
      Value y = l.base;
      if (ArrayRef<int64_t>(l.perm) != ArrayRef<int64_t>(kIdentity3))
        y = TransposeOp::create(b, y.getLoc(), y, b.getDenseI64ArrayAttr(l.perm));
      auto t = cast<RankedTensorType>(y.getType());
      SmallVector<int64_t> shape = {1};
      shape.append(t.getShape().begin(), t.getShape().end());
      return ReshapeOp::create(b, y.getLoc(), t.clone(shape), y);
    };
    q = as4d(m.qk.getLhs(), kIdentity3);
    k = as4d(m.qk.getRhs(), kSwapLast3);
    v = as4d(m.pv.getRhs(), kIdentity3);
  }
  auto shapeOf = [](Value x) {
    return cast<RankedTensorType>(x.getType()).getShape();
  };
  semantics::AttentionDims dims;
  if (!semantics::attentionDims(shapeOf(q), shapeOf(k), shapeOf(v), qsf, ksf,
                                vsf, &dims, &why)) {
    why = "Q, K and V do not fit: " + why;
    return failure();
  }
  Type et = cast<RankedTensorType>(q.getType()).getElementType();
  if (!isa<Float32Type, Float16Type, BFloat16Type>(et) ||
      cast<RankedTensorType>(k.getType()).getElementType() != et ||
      cast<RankedTensorType>(v.getType()).getElementType() != et) {
    why = "Q, K and V are not of one element type f32, f16 or bf16";
    return failure();
  }
  for (Value mask : m.addMasks)
    if (VariableOp bias = trainableBias(mask)) {
      why = "the additive mask is computed from variable '" +
            bias.getSymName().str() +
            "', which may be trained (a score bias needs the scores' "
            "gradient)";
      return failure();
    }
  // Causal masks become the attribute.
  auto dropCausal = [&](SmallVector<Value> &masks) {
    for (auto *it = masks.begin(); it != masks.end();) {
      if (isCausalMask(*it, dims.queryLen, dims.kvLen)) {
        m.causal = true;
        it = masks.erase(it);
      } else {
        ++it;
      }
    }
  };
  dropCausal(m.keepMasks);
  dropCausal(m.addMasks);

  OpBuilder b(m.pv);
  Location loc = b.getFusedLoc({softmax.getLoc(), m.pv.getLoc()});
  Value mask = combineMasks(b, loc, m);
  m.seqFirst[0] = qsf;
  m.seqFirst[1] = ksf;
  m.seqFirst[2] = vsf;
  Value result = m.pv.getResult();
  if (rank == 4) {
    // No-op views after the product (the exporters' same-shape reshape),
    // then the head merge's transpose, which the op writes through strides.
    while (result.hasOneUse()) {
      Operation *user = *result.getUsers().begin();
      if (!isa<IdentityOp>(user) &&
          !(isa<ReshapeOp>(user) &&
            user->getResult(0).getType() == result.getType()))
        break;
      m.replaced.push_back(user);
      result = user->getResult(0);
    }
    if (result.hasOneUse())
      if (auto t = dyn_cast<TransposeOp>(*result.getUsers().begin()))
        if (t.getPerm() == ArrayRef<int64_t>{0, 2, 1, 3}) {
          m.outTranspose = t;
          m.seqFirst[3] = true;
        }
  }
  bool anySeqFirst = llvm::any_of(m.seqFirst, [](bool f) { return f; });
  DenseBoolArrayAttr seqFirst =
      b.getDenseBoolArrayAttr(anySeqFirst ? ArrayRef<bool>(m.seqFirst)
                                          : ArrayRef<bool>());
  Value step;
  FloatAttr ratio = b.getF32FloatAttr(0.0f);
  IntegerAttr seed = b.getI64IntegerAttr(0);
  if (m.dropout) {
    step = m.dropout.getStep();
    ratio = m.dropout.getRatioAttr();
    seed = m.dropout.getSeedAttr();
  }
  Value fused = AttentionOp::create(b, loc, q, k, v, mask, step,
                                    b.getF64FloatAttr(m.scale),
                                    b.getBoolAttr(m.causal), seqFirst, ratio,
                                    seed)
                    .getResult();
  if (rank == 3) // back to [B·H, Sq, Dv]
    fused = ReshapeOp::create(b, loc, pvType, fused);
  if (m.outTranspose) {
    m.outTranspose.getResult().replaceAllUsesWith(fused);
    m.replaced.push_back(m.outTranspose);
  } else {
    result.replaceAllUsesWith(fused);
  }
  eraseDead(m.replaced);
  return success();
}

void Fuser::eraseDead(ArrayRef<Operation *> ops) {
  llvm::SetVector<Operation *> pending(ops.begin(), ops.end());
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation *op : pending) {
      if (!op || !op->use_empty())
        continue;
      // Values of ops outside the set may become dead too (the importer's
      // constants); the canonicalizer removes them.
      op->erase();
      pending.remove(op);
      changed = true;
      break;
    }
  }
}

class FuseAttentionPass
    : public dlc::impl::FuseAttentionPassBase<FuseAttentionPass> {
public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t candidates = 0, fused = 0;
    SmallVector<Attribute> unfused;
    for (auto func : module.getOps<func::FuncOp>()) {
      SmallVector<SoftmaxOp> softmaxes;
      func.walk([&](SoftmaxOp s) {
        auto t = cast<RankedTensorType>(s.getType());
        int64_t axis = s.getAxisAttr().getInt();
        if (t.getRank() >= 2 && (axis == t.getRank() - 1 || axis == -1) &&
            reachesMatMul(s.getInput()))
          softmaxes.push_back(s);
      });
      Fuser fuser(func);
      for (SoftmaxOp s : softmaxes) {
        ++candidates;
        std::string name = nodeName(s.getLoc()), why;
        if (succeeded(fuser.fuse(s, why)))
          ++fused;
        else
          unfused.push_back(
              StringAttr::get(&getContext(), name + ": " + why));
      }
    }
    Builder b(&getContext());
    module->setAttr(kAttentionFusionAttr,
                    b.getDictionaryAttr(
                        {b.getNamedAttr("candidates",
                                        b.getI64IntegerAttr(candidates)),
                         b.getNamedAttr("fused", b.getI64IntegerAttr(fused)),
                         b.getNamedAttr("unfused", b.getArrayAttr(unfused))}));
  }
};

} // namespace
