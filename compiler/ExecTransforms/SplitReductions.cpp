//===- SplitReductions.cpp - reductions split over the grid ---------------===//
//
// --dlexec-split-reductions (Passes.td): a reduction kernel with few outputs
// and a long reduction becomes a kernel of partial reductions over its
// outermost reduction loop and a kernel that combines the partials, as
// XLA's tree reduction rewriter does, so that the cooperative CUDA kernels
// spread over the whole grid.
//
//===----------------------------------------------------------------------===//
#include "compiler/ExecTransforms/Passes.h"

#include "dialects/Exec/Analysis/KernelQueries.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"

#include <optional>

namespace dlc {
#define GEN_PASS_DEF_SPLITREDUCTIONSPASS
#include "compiler/ExecTransforms/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;

namespace {

bool isReduction(Attribute iterator) {
  return cast<StringAttr>(iterator).getValue() == "reduction";
}

/// What a split of a kernel needs: its outermost reduction loop and, per
/// body output, the op that combines the accumulator with a new value.
struct Split {
  unsigned r0 = 0;
  int64_t extent = 0;
  SmallVector<Operation *> combiners;
};

/// Whether |k| is split (Passes.td's conditions), and how.
std::optional<Split> planSplit(exec::KernelOp k, int64_t maxOutputs,
                               int64_t minSteps) {
  auto iterators = k.getIteratorTypes().getValue();
  SmallVector<int64_t> sizes = loopSizes(k);
  Split s;
  int64_t outputs = 1, steps = 1;
  unsigned reductions = 0;
  std::optional<unsigned> first;
  for (auto [l, it] : llvm::enumerate(iterators)) {
    if (sizes[l] <= 0)
      return std::nullopt;
    if (isReduction(it)) {
      ++reductions;
      steps *= sizes[l];
      if (!first)
        first = unsigned(l);
    } else {
      outputs *= sizes[l];
    }
  }
  if (reductions < 2 || !first || !k.getInit() || outputs > maxOutputs ||
      steps < minSteps)
    return std::nullopt;
  s.r0 = *first;
  s.extent = sizes[s.r0];
  // Each partial must still reduce a warp's worth of steps.
  if (s.extent < 4 || steps / s.extent < 32)
    return std::nullopt;
  const unsigned numIn = k.getInputs().size();
  const unsigned numBody = k.getNumBodyOutputs();
  Block &body = k.getBody().front();
  auto yield = body.getTerminator();
  for (unsigned o = 0; o < numBody; ++o) {
    Type elem = cast<MemRefType>(k.getOutputs()[o].getType()).getElementType();
    if (!elem.isF32() && !elem.isF64())
      return std::nullopt;
    BlockArgument acc = body.getArgument(numIn + o);
    if (!acc.hasOneUse())
      return std::nullopt;
    Operation *user = *acc.getUsers().begin();
    // f32 sums (combined in f64 and rounded once), maxima and minima (exact
    // in any order); an f64 sum or any product would round differently.
    const bool sum = isa<arith::AddFOp>(user) && elem.isF32();
    if (!(sum || isa<arith::MaximumFOp, arith::MinimumFOp>(user)) ||
        user->getOperand(0) == user->getOperand(1) ||
        !user->getResult(0).hasOneUse() ||
        *user->getResult(0).getUsers().begin() != yield ||
        yield->getOperand(o) != user->getResult(0))
      return std::nullopt;
    s.combiners.push_back(user);
  }
  // The epilogue outputs' current values are not read by the body, and the
  // epilogue reads no loop index (its loops are renumbered).
  for (unsigned o = numBody; o < k.getOutputs().size(); ++o)
    if (!body.getArgument(numIn + o).use_empty())
      return std::nullopt;
  if (!k.getEpilogue().empty()) {
    bool readsIndex = false;
    k.getEpilogue().walk([&](exec::IndexOp) { readsIndex = true; });
    if (readsIndex)
      return std::nullopt;
  }
  return s;
}

/// A name like |base| that no symbol of |taken| has (and now has).
StringAttr freshName(MLIRContext *ctx, StringRef base,
                     llvm::StringSet<> &taken) {
  std::string name = base.str();
  for (unsigned n = 2; taken.contains(name); ++n)
    name = (base + "_" + Twine(n)).str();
  taken.insert(name);
  return StringAttr::get(ctx, name);
}

/// |attr| (a float init value) as an f64 attribute.
Attribute widened(Attribute attr) {
  auto f = cast<FloatAttr>(attr);
  return FloatAttr::get(Float64Type::get(attr.getContext()),
                        f.getValue().convertToDouble());
}

/// The element type of |k|'s output |o|.
static Type outputElem(exec::KernelOp k, unsigned o) {
  return cast<MemRefType>(k.getOutputs()[o].getType()).getElementType();
}

/// Adds a block argument of each element type of |inputs| and |outputs|.
static void addElementArgs(Block *blk, ValueRange inputs, ValueRange outputs,
                           Location loc) {
  for (Value v : inputs)
    blk->addArgument(cast<MemRefType>(v.getType()).getElementType(), loc);
  for (Value v : outputs)
    blk->addArgument(cast<MemRefType>(v.getType()).getElementType(), loc);
}

/// The body of |partial|, kernel 1 of splitting |k| by |s|: |k|'s body
/// with the f32 sums (|wide|) accumulated in |f64|.
static void buildPartialBody(exec::KernelOp k, exec::KernelOp partial,
                             const Split &s, ArrayRef<bool> wide, Type f64) {
  Location loc = k.getLoc();
  const unsigned numIn = k.getInputs().size();
  const unsigned numBody = k.getNumBodyOutputs();
  Block &old = k.getBody().front();
  Block *blk = new Block();
  partial.getBody().push_back(blk);
  IRMapping map;
  for (unsigned i = 0; i < numIn; ++i)
    map.map(old.getArgument(i),
            blk->addArgument(old.getArgument(i).getType(), loc));
  for (unsigned o = 0; o < numBody; ++o)
    map.map(old.getArgument(numIn + o),
            blk->addArgument(wide[o] ? f64 : outputElem(k, o), loc));
  OpBuilder bb = OpBuilder::atBlockEnd(blk);
  for (Operation &op : old) {
    auto at = llvm::find(s.combiners, &op);
    const unsigned o = at - s.combiners.begin();
    if (at == s.combiners.end() || !wide[o]) {
      bb.clone(op, map);
      continue;
    }
    // acc64 + extf(x): what codegen emits for an f32 sum's promoted add.
    Value acc = old.getArgument(numIn + o);
    Value x = op.getOperand(0) == acc ? op.getOperand(1) : op.getOperand(0);
    Value x64 = arith::ExtFOp::create(bb, loc, f64, map.lookup(x));
    Value sum = op.getOperand(0) == acc
                    ? arith::AddFOp::create(bb, loc, map.lookup(acc), x64)
                    : arith::AddFOp::create(bb, loc, x64, map.lookup(acc));
    map.map(op.getResult(0), sum);
  }
}

/// The body of |combine|, kernel 2 of splitting |k| by |s|: each output
/// combined with its partial by |k|'s combiner (an f64 add for the |wide|
/// sums).
static void buildCombineBody(exec::KernelOp k, exec::KernelOp combine,
                             const Split &s, ArrayRef<bool> wide,
                             ValueRange inputs2, ValueRange outputs2) {
  Location loc = k.getLoc();
  const unsigned numIn = k.getInputs().size();
  const unsigned numBody = k.getNumBodyOutputs();
  const unsigned numIn2 = inputs2.size();
  Block &old = k.getBody().front();
  Block *blk = new Block();
  combine.getBody().push_back(blk);
  addElementArgs(blk, inputs2, outputs2, loc);
  OpBuilder bb = OpBuilder::atBlockEnd(blk);
  SmallVector<Value> yields;
  for (unsigned o = 0; o < numBody; ++o) {
    // The combiner of the original body, its accumulator operand the
    // output's current value and its other operand the partial.
    Operation *c = s.combiners[o];
    BlockArgument acc = old.getArgument(numIn + o);
    Value current = blk->getArgument(numIn2 + o), part = blk->getArgument(o);
    if (wide[o]) {
      yields.push_back(c->getOperand(0) == acc
                           ? arith::AddFOp::create(bb, loc, current, part)
                           : arith::AddFOp::create(bb, loc, part, current));
      continue;
    }
    IRMapping map;
    for (Value operand : c->getOperands())
      map.map(operand, operand == acc ? current : part);
    yields.push_back(bb.clone(*c, map)->getResult(0));
  }
  exec::YieldOp::create(bb, loc, yields);
}

/// The epilogue of |combine|: each wide sum rounded once to its f32
/// output, then |k|'s epilogue on the inputs at |inputSlot| and the outputs
/// at |finalSlot| of kernel 2.
static void buildCombineEpilogue(exec::KernelOp k, exec::KernelOp combine,
                                 ArrayRef<bool> wide, ValueRange inputs2,
                                 ValueRange outputs2, ArrayRef<int> inputSlot,
                                 ArrayRef<int> finalSlot) {
  Location loc = k.getLoc();
  const unsigned numIn = k.getInputs().size();
  const unsigned numBody = k.getNumBodyOutputs();
  const unsigned numOut = k.getOutputs().size();
  const unsigned numIn2 = inputs2.size();
  Block *blk = new Block();
  combine.getEpilogue().push_back(blk);
  addElementArgs(blk, inputs2, outputs2, loc);
  OpBuilder bb = OpBuilder::atBlockEnd(blk);
  SmallVector<Value> yields;
  // Each wide sum rounded once to its f32 output; k's epilogue reads
  // that value as its reduced value.
  SmallVector<Value> reduced(numBody);
  for (unsigned o = 0; o < numBody; ++o) {
    if (wide[o]) {
      reduced[o] = arith::TruncFOp::create(bb, loc, bb.getF32Type(),
                                           blk->getArgument(numIn2 + o));
      yields.push_back(reduced[o]);
    } else {
      reduced[o] = blk->getArgument(numIn2 + o);
    }
  }
  if (!k.getEpilogue().empty()) {
    Block &old = k.getEpilogue().front();
    IRMapping map;
    for (unsigned i = 0; i < numIn; ++i)
      if (inputSlot[i] >= 0)
        map.map(old.getArgument(i), blk->getArgument(inputSlot[i]));
    for (unsigned o = 0; o < numBody; ++o)
      map.map(old.getArgument(numIn + o), reduced[o]);
    for (unsigned o = numBody; o < numOut; ++o)
      map.map(old.getArgument(numIn + o),
              blk->getArgument(numIn2 + finalSlot[o]));
    for (Operation &op : old.without_terminator())
      bb.clone(op, map);
    for (Value v : old.getTerminator()->getOperands())
      yields.push_back(map.lookupOrDefault(v));
  }
  exec::YieldOp::create(bb, loc, yields);
}

/// Replaces |k| by the partial and the combining kernel of |s|. An f32 sum
/// keeps its partials in f64 and combines them in f64, rounding once to f32
/// in the combining kernel's epilogue, as codegen accumulates an unsplit
/// f32 sum in double: the result is the unsplit one unless the two
/// association orders of the double sums round to different floats.
void split(exec::KernelOp k, const Split &s, llvm::StringSet<> &taken) {
  MLIRContext *ctx = k.getContext();
  OpBuilder b(k);
  Location loc = k.getLoc();
  Type f64 = b.getF64Type();
  const unsigned numIn = k.getInputs().size();
  const unsigned numBody = k.getNumBodyOutputs();
  const unsigned numOut = k.getOutputs().size();
  SmallVector<AffineMap> maps =
      llvm::to_vector(llvm::map_range(k.getIndexingMaps(), [](Attribute a) {
        return cast<AffineMapAttr>(a).getValue();
      }));
  auto iterators = k.getIteratorTypes().getValue();
  const unsigned numLoops = iterators.size();
  ArrayAttr init = *k.getInit();

  // Which body outputs are f32 sums (kept in f64 until the end).
  SmallVector<bool> wide(numBody, false);
  SmallVector<Attribute> wideInit;
  for (unsigned o = 0; o < numBody; ++o) {
    Type elem = cast<MemRefType>(k.getOutputs()[o].getType()).getElementType();
    wide[o] = elem.isF32() && isa<arith::AddFOp>(s.combiners[o]);
    wideInit.push_back(wide[o] ? widened(init[o]) : init[o]);
  }
  auto partialElem = [&](unsigned o) {
    return wide[o]
               ? f64
               : cast<MemRefType>(k.getOutputs()[o].getType()).getElementType();
  };

  // The partials: [extent] + the output's shape, written at (r0, output map).
  SmallVector<Value> partials;
  SmallVector<AffineMap> partialMaps;
  for (unsigned o = 0; o < numBody; ++o) {
    auto type = cast<MemRefType>(k.getOutputs()[o].getType());
    SmallVector<int64_t> shape = {s.extent};
    llvm::append_range(shape, type.getShape());
    partials.push_back(
        exec::AllocOp::create(b, loc, MemRefType::get(shape, partialElem(o)),
                              IntegerAttr())
            .getResult());
    AffineMap m = maps[numIn + o];
    SmallVector<AffineExpr> results = {getAffineDimExpr(s.r0, ctx)};
    llvm::append_range(results, m.getResults());
    partialMaps.push_back(AffineMap::get(numLoops, 0, results, ctx));
  }

  // Kernel 1: the same loops with r0 parallel, the body unchanged but for
  // the f64 accumulation of f32 sums.
  SmallVector<Attribute> iterators1(iterators.begin(), iterators.end());
  iterators1[s.r0] = b.getStringAttr("parallel");
  SmallVector<AffineMap> maps1(maps.begin(), maps.begin() + numIn);
  llvm::append_range(maps1, partialMaps);
  auto partial = exec::KernelOp::create(
      b, loc, freshName(ctx, k.getSymName().str() + "_partial", taken),
      k.getInputs(), partials, b.getAffineMapArrayAttr(maps1),
      b.getArrayAttr(iterators1), b.getArrayAttr(wideInit));
  buildPartialBody(k, partial, s, wide, f64);

  // Kernel 2: the parallel loops and r0 (a reduction over the partials),
  // in their order; it reads the partials and the inputs whose maps use no
  // reduction loop (the only ones an epilogue may read).
  SmallVector<int64_t> renumber(numLoops, -1);
  SmallVector<Attribute> iterators2;
  for (unsigned l = 0; l < numLoops; ++l)
    if (l == s.r0 || !isReduction(iterators[l])) {
      renumber[l] = iterators2.size();
      iterators2.push_back(iterators[l]);
    }
  const unsigned numLoops2 = iterators2.size();
  auto remap = [&](AffineMap m) {
    SmallVector<AffineExpr> dims;
    for (unsigned l = 0; l < numLoops; ++l)
      dims.push_back(renumber[l] >= 0
                         ? getAffineDimExpr(unsigned(renumber[l]), ctx)
                         : getAffineConstantExpr(0, ctx));
    return m.replaceDimsAndSymbols(dims, {}, numLoops2, 0);
  };
  auto usesReduction = [&](AffineMap m) {
    for (unsigned l = 0; l < numLoops; ++l)
      if (isReduction(iterators[l]) && m.isFunctionOfDim(l))
        return true;
    return false;
  };
  SmallVector<Value> inputs2(partials);
  SmallVector<AffineMap> maps2;
  for (AffineMap m : partialMaps)
    maps2.push_back(remap(m));
  SmallVector<int> inputSlot(numIn, -1);
  for (unsigned i = 0; i < numIn; ++i)
    if (!usesReduction(maps[i])) {
      inputSlot[i] = inputs2.size();
      inputs2.push_back(k.getInputs()[i]);
      maps2.push_back(remap(maps[i]));
    }
  // Outputs: the body's (an f64 sum's own buffer for a wide one), then the
  // epilogue's: each wide output's f32 value, then k's epilogue outputs.
  SmallVector<Value> outputs2;
  SmallVector<unsigned> outputOf; // k's output each of outputs2 holds
  for (unsigned o = 0; o < numBody; ++o) {
    if (wide[o]) {
      auto type = cast<MemRefType>(k.getOutputs()[o].getType());
      outputs2.push_back(
          exec::AllocOp::create(b, loc, MemRefType::get(type.getShape(), f64),
                                IntegerAttr())
              .getResult());
    } else {
      outputs2.push_back(k.getOutputs()[o]);
    }
    outputOf.push_back(o);
  }
  const bool anyWide = llvm::is_contained(wide, true);
  SmallVector<int> finalSlot(numOut, -1); // k's output o in outputs2
  for (unsigned o = 0; o < numBody; ++o)
    if (!wide[o])
      finalSlot[o] = o;
  for (unsigned o = 0; o < numBody; ++o)
    if (wide[o]) {
      finalSlot[o] = outputs2.size();
      outputs2.push_back(k.getOutputs()[o]);
      outputOf.push_back(o);
    }
  for (unsigned o = numBody; o < numOut; ++o) {
    finalSlot[o] = outputs2.size();
    outputs2.push_back(k.getOutputs()[o]);
    outputOf.push_back(o);
  }
  for (unsigned o : outputOf)
    maps2.push_back(remap(maps[numIn + o]));
  // The combining kernel is placed where k was, after its new buffers.
  b.setInsertionPoint(k);
  auto combine = exec::KernelOp::create(
      b, loc, k.getSymNameAttr(), inputs2, outputs2,
      b.getAffineMapArrayAttr(maps2), b.getArrayAttr(iterators2),
      b.getArrayAttr(wideInit));
  buildCombineBody(k, combine, s, wide, inputs2, outputs2);
  if (!k.getEpilogue().empty() || anyWide)
    buildCombineEpilogue(k, combine, wide, inputs2, outputs2, inputSlot,
                         finalSlot);
  k.erase();
}

struct SplitReductionsPass
    : public dlc::impl::SplitReductionsPassBase<SplitReductionsPass> {
  using SplitReductionsPassBase::SplitReductionsPassBase;

  void runOnOperation() override {
    llvm::StringSet<> taken;
    getOperation().walk([&](Operation *op) {
      if (auto name =
              op->getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName()))
        taken.insert(name.getValue());
    });
    SmallVector<std::pair<exec::KernelOp, Split>> work;
    getOperation().walk([&](exec::KernelOp k) {
      if (std::optional<Split> s = planSplit(k, maxOutputs, minSteps)) {
        // An epilogue may read only inputs without reduction loops; one
        // that reads another (the verifier forbids it) is left alone.
        work.push_back({k, *s});
      }
    });
    for (auto &[k, s] : work)
      split(k, s, taken);
  }
};

} // namespace
