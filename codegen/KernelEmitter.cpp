//===- KernelEmitter.cpp - dlexec.kernel bodies as C code -----------------===//
//
// A dlexec.kernel is printed once as target-neutral C code for one element of
// its parallel iteration space; Emitters.cpp wraps it. On CUDA the parallel
// loop indices are recovered from the flat thread index `tid` (row-major over
// the parallel loops); on the host they are the variables of a loop nest.
// Reduction loops run serially inside the element with the outputs held in
// local accumulators. Body ops whose operands are all loop-invariant
// (constants, and inputs read at a position that uses no loop) are printed
// once, outside every loop; this does not change any result.
//
//===----------------------------------------------------------------------===//
#include "codegen/GeneratedKernel.h"
#include "codegen/KernelDedup.h"
#include "dialects/Exec/KernelBodyOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>

using namespace mlir;

namespace dlc::codegen::detail {

FailureOr<std::string> cScalarType(Type type) {
  if (type.isF32())
    return std::string("float");
  if (type.isF64())
    return std::string("double");
  if (type.isIndex() || type.isInteger(64))
    return std::string("long long");
  if (type.isInteger(32))
    return std::string("int");
  if (type.isInteger(1))
    return std::string("bool");
  return failure();
}

bool isHalfFloat(Type type) { return type.isF16() || type.isBF16(); }

FailureOr<std::string> cStorageType(Type type) {
  if (type.isF16())
    return std::string("dlc_f16");
  if (type.isBF16())
    return std::string("dlc_bf16");
  return cScalarType(type);
}

FailureOr<std::string> cValueType(Type type) {
  if (isHalfFloat(type))
    return std::string("float");
  return cScalarType(type);
}

std::string halfName(Type type) { return type.isBF16() ? "bf16" : "f16"; }

std::string loadExpr(Type type, const std::string &ref) {
  if (!isHalfFloat(type))
    return ref;
  return "dlc_" + halfName(type) + "_to_f32(" + ref + ")";
}

std::string storeExpr(Type type, const std::string &v) {
  if (!isHalfFloat(type))
    return v;
  return "dlc_f32_to_" + halfName(type) + "(" + v + ")";
}

std::string sanitizeName(StringRef name) {
  std::string out;
  for (char c : name)
    out += (std::isalnum((unsigned char)c) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit((unsigned char)out[0]))
    out = "k_" + out;
  return out;
}

/// Where an operand's memory lives, for alias detection: the root value of a
/// reshape chain, a variable symbol, or an arena byte range.
namespace {
struct BufferRoot {
  const void *key = nullptr;    // root Value or variable name attr
  int64_t begin = -1, end = -1; // arena byte range when planned
};
} // namespace

static BufferRoot rootOf(Value v) {
  while (auto reshape = v.getDefiningOp<exec::ReshapeOp>())
    v = reshape.getSource();
  BufferRoot root;
  if (auto ref = v.getDefiningOp<exec::VariableRefOp>()) {
    root.key = ref.getVariableAttr().getAttr().getAsOpaquePointer();
    return root;
  }
  root.key = v.getAsOpaquePointer();
  if (auto alloc = v.getDefiningOp<exec::AllocOp>()) {
    auto type = cast<MemRefType>(alloc.getType());
    if (auto offset = alloc.getOffset(); offset && type.hasStaticShape()) {
      root.begin = (int64_t)*offset;
      root.end = root.begin +
                 type.getNumElements() *
                     std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
    }
  }
  return root;
}

std::vector<bool> restrictFlags(Operation *, ValueRange operands) {
  std::vector<BufferRoot> roots;
  for (Value v : operands)
    roots.push_back(rootOf(v));
  std::vector<bool> flags(roots.size(), true);
  for (size_t i = 0; i < roots.size(); ++i)
    for (size_t j = i + 1; j < roots.size(); ++j) {
      bool alias =
          roots[i].key == roots[j].key ||
          (roots[i].begin >= 0 && roots[j].begin >= 0 &&
           roots[i].begin < roots[j].end && roots[j].begin < roots[i].end);
      if (alias)
        flags[i] = flags[j] = false;
    }
  return flags;
}

/// A C literal for |value| of type |type| (f32 gets an `f` suffix; inf and
/// NaN go through the prelude's macros).
static std::string floatLiteral(double value, bool isF32) {
  const char *suffix = isF32 ? "F" : "D";
  if (std::isnan(value))
    return std::string("DLC_NAN_") + suffix;
  if (std::isinf(value))
    return std::string(value < 0 ? "(-DLC_INF_" : "(DLC_INF_") + suffix + ")";
  char buf[64];
  if (isF32)
    std::snprintf(buf, sizeof(buf), "%.9ef", (double)(float)value);
  else
    std::snprintf(buf, sizeof(buf), "%.17e", value);
  return buf;
}

static std::string intLiteral(int64_t value, const std::string &cType) {
  if (cType == "bool")
    return value ? "true" : "false";
  if (value == INT64_MIN)
    return "(-9223372036854775807LL - 1)";
  return "((" + cType + ")" + std::to_string(value) + "LL)";
}

FailureOr<std::string> attrLiteral(Attribute attr, Type type) {
  if (auto f = dyn_cast<FloatAttr>(attr)) {
    APFloat v = f.getValue();
    bool lost = false;
    v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
    if (!type.isF32() && !type.isF64() && !isHalfFloat(type))
      return failure();
    // An f16 / bf16 value is exact in float, which the kernel computes in.
    return floatLiteral(v.convertToDouble(), !type.isF64());
  }
  if (auto i = dyn_cast<IntegerAttr>(attr)) {
    auto cType = cValueType(type);
    if (failed(cType))
      return failure();
    if (isHalfFloat(type)) {
      // Rounded to the element type, as a dlexec constant of it holds.
      APFloat h((double)i.getValue().getSExtValue());
      bool lost = false;
      h.convert(cast<FloatType>(type).getFloatSemantics(),
                APFloat::rmNearestTiesToEven, &lost);
      h.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
      return floatLiteral(h.convertToDouble(), true);
    }
    if (type.isF32() || type.isF64())
      return floatLiteral((double)i.getValue().getSExtValue(), type.isF32());
    int64_t v = type.isInteger(1) ? (int64_t)i.getValue().getBoolValue()
                                  : i.getValue().getSExtValue();
    return intLiteral(v, *cType);
  }
  if (auto b = dyn_cast<BoolAttr>(attr)) {
    auto cType = cScalarType(type);
    if (failed(cType))
      return failure();
    return intLiteral(b.getValue(), *cType);
  }
  return failure();
}

std::string plainDimName(unsigned d) { return "i" + std::to_string(d); }

FailureOr<std::string> affineToC(AffineExpr expr, bool narrow,
                                 DimNamer dimName) {
  if (auto d = dyn_cast<AffineDimExpr>(expr))
    return dimName(d.getPosition());
  if (auto c = dyn_cast<AffineConstantExpr>(expr))
    return std::to_string(c.getValue()) + (narrow ? "" : "LL");
  auto bin = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!bin)
    return failure();
  auto l = affineToC(bin.getLHS(), narrow, dimName),
       r = affineToC(bin.getRHS(), narrow, dimName);
  if (failed(l) || failed(r))
    return failure();
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return "(" + *l + " + " + *r + ")";
  case AffineExprKind::Mul:
    return "(" + *l + " * " + *r + ")";
  case AffineExprKind::FloorDiv:
    return "dlc_floordiv(" + *l + ", " + *r + ")";
  case AffineExprKind::CeilDiv:
    return "dlc_ceildiv(" + *l + ", " + *r + ")";
  case AffineExprKind::Mod:
    return "dlc_mod(" + *l + ", " + *r + ")";
  default:
    return failure();
  }
}

LogicalResult GeneratedKernelEmitter::computeLoopSizes() {
  unsigned numLoops = op.getIteratorTypes().size();
  loopSizes.assign(numLoops, -1);
  auto operands = op->getOperands();
  unsigned i = 0;
  for (AffineMap map : op.getIndexingMaps().getAsValueRange<AffineMapAttr>()) {
    auto type = cast<MemRefType>(operands[i].getType());
    if (!type.hasStaticShape())
      return op.emitOpError() << "operand #" << i << " of type " << type
                              << " has a dynamic shape; codegen needs "
                                 "static shapes";
    if (!type.getLayout().isIdentity())
      return op.emitOpError() << "operand #" << i << " of type " << type
                              << " has a non-identity layout";
    for (unsigned r = 0; r < map.getNumResults(); ++r) {
      auto dim = dyn_cast<AffineDimExpr>(map.getResult(r));
      if (!dim)
        continue;
      int64_t size = type.getDimSize(r);
      int64_t &known = loopSizes[dim.getPosition()];
      if (known >= 0 && known != size)
        return op.emitOpError()
               << "loop " << dim.getPosition() << " has size " << known
               << " from one operand and " << size << " from operand #" << i;
      known = size;
    }
    ++i;
  }
  for (unsigned l = 0; l < numLoops; ++l)
    if (loopSizes[l] < 0)
      return op.emitOpError() << "cannot infer the size of loop " << l
                              << ": no indexing map uses it as a plain "
                                 "dimension";
  return success();
}

FailureOr<std::string> GeneratedKernelEmitter::offsetOf(unsigned operand,
                                                        AffineMap map,
                                                        bool narrow,
                                                        DimNamer dimName) {
  auto type = cast<MemRefType>(op->getOperand(operand).getType());
  if (map.getNumSymbols() != 0)
    return op.emitOpError() << "indexing map #" << operand
                            << " has symbols; only dims and constants are "
                               "supported";
  std::string out;
  int64_t stride = 1;
  for (int r = (int)map.getNumResults() - 1; r >= 0; --r) {
    auto term = affineToC(map.getResult(r), narrow, dimName);
    if (failed(term)) {
      std::string text;
      llvm::raw_string_ostream(text) << map.getResult(r);
      return op.emitOpError() << "unsupported affine expression " << text
                              << " in indexing map #" << operand
                              << " (supported: dims, constants, +, *, "
                                 "floordiv, ceildiv, mod)";
    }
    std::string t = stride == 1 ? *term
                                : *term + " * " + std::to_string(stride) +
                                      (narrow ? "" : "LL");
    out = out.empty() ? t : t + " + " + out;
    stride *= type.getDimSize(r);
  }
  return out.empty() ? std::string("0") : out;
}

FailureOr<std::string> GeneratedKernelEmitter::nameOf(Value v,
                                                      Operation *user) {
  auto it = names.find(v);
  if (it != names.end())
    return it->second;
  // A constant defined outside the kernel region (captured from the func).
  if (auto cst = v.getDefiningOp<arith::ConstantOp>()) {
    auto lit = attrLiteral(cst.getValue(), cst.getType());
    if (succeeded(lit))
      return *lit;
  }
  return user->emitOpError()
         << "uses a value defined outside its dlexec.kernel that is not an "
            "arith.constant";
}

FailureOr<std::string> GeneratedKernelEmitter::emitEpilogue(
    ArrayRef<std::string> offsets, ArrayRef<Type> elemTypes,
    ArrayRef<std::string> valueTypes, const std::string &indent) {
  Block &epi = op.getEpilogue().front();
  const size_t begin = body.size();
  for (BlockArgument arg : epi.getArguments()) {
    if (arg.use_empty())
      continue;
    unsigned i = arg.getArgNumber();
    std::string name = "e" + std::to_string(i);
    names[arg] = name;
    os << indent << "const " << valueTypes[i] << " " << name << " = "
       << loadExpr(elemTypes[i],
                   "a" + std::to_string(i) + "[" + offsets[i] + "]")
       << ";\n";
  }
  for (Operation &bodyOp : epi.without_terminator())
    if (failed(emitBodyOp(&bodyOp, indent)))
      return failure();
  auto yield = cast<exec::YieldOp>(epi.getTerminator());
  const unsigned first = op.getInputs().size() + op.getNumBodyOutputs();
  for (auto [k, v] : llvm::enumerate(yield.getValues())) {
    auto name = nameOf(v, yield);
    if (failed(name))
      return failure();
    unsigned operand = first + k;
    os << indent << "a" << operand << "[" << offsets[operand]
       << "] = " << storeExpr(elemTypes[operand], *name) << ";\n";
  }
  std::string out = body.substr(begin);
  body.resize(begin);
  return out;
}

FailureOr<KernelCode> GeneratedKernelEmitter::emit() {
  if (failed(computeLoopSizes()))
    return failure();
  KernelCode code;
  code.name = sanitizeName(op.getSymName());
  numInputs = op.getInputs().size();
  if (failed(collectOperandTypes(code)))
    return failure();
  findCopyOnlyOperands(code);
  for (auto [i, it] : llvm::enumerate(op.getIteratorTypes()))
    (cast<StringAttr>(it).getValue() == "parallel" ? parallel : reduction)
        .push_back(i);
  code.numThreads = 1;
  for (unsigned d : parallel)
    code.numThreads *= loopSizes[d];

  auto indexingMaps = op.getIndexingMaps().getAsValueRange<AffineMapAttr>();
  maps.assign(indexingMaps.begin(), indexingMaps.end());
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    auto off = offsetOf(i, maps[i]);
    if (failed(off))
      return failure();
    offsets.push_back(*off);
  }

  // Thread index -> parallel loop indices (last parallel loop fastest), for
  // CUDA; the host runs the same element code in a loop nest instead.
  std::string in = "  ";
  // 32-bit division by constants is much cheaper on the GPU.
  std::string decode =
      decodeIndices(parallel, "tid", code.numThreads <= UINT32_MAX, in);

  findAccumulatorUpdates();
  if (failed(emitAccumulators(in)))
    return failure();
  for (unsigned d : reduction) {
    os << in << "for (long long i" << d << " = 0; i" << d << " < "
       << loopSizes[d] << "LL; ++i" << d << ") {\n";
    in += "  ";
  }
  const size_t innerBegin = body.size();
  emitInputLoads(in);
  const size_t opsBegin = body.size();
  if (failed(emitElementUpdate(in)))
    return failure();
  const std::string ops = body.substr(opsBegin);
  const std::string inner = body.substr(innerBegin);
  for (size_t k = 0; k < reduction.size(); ++k) {
    in.resize(in.size() - 2);
    os << in << "}\n";
  }
  auto stores = emitStores(in);
  if (failed(stores))
    return failure();
  os << *stores;
  code.invariant = std::move(invariantBody);
  code.loopBody = body;
  code.body = decode + body;
  code.loopNest = true;
  for (unsigned d : parallel)
    code.hostLoops.push_back({"i" + std::to_string(d), loopSizes[d]});
  if (!parallel.empty()) {
    AffineExpr innerDim = getAffineDimExpr(parallel.back(), op.getContext());
    code.innerIndependent = llvm::all_of(
        llvm::seq<unsigned>(numInputs, op->getNumOperands()), [&](unsigned i) {
          return llvm::is_contained(maps[i].getResults(), innerDim);
        });
  }
  emitCooperativeReduction(code, parallel, reduction, maps, inner, *stores);
  if (reduction.empty())
    emitElementwiseCuda(
        code, maps, elemTypes, valueTypes, accInitLoads, loadedInputs, ops,
        [&](unsigned i, const std::string &ref) { return loadOperand(i, ref); },
        [&](unsigned operand, const std::string &acc) {
          return rawOperands.count(operand)
                     ? acc
                     : storeExpr(elemTypes[operand], acc);
        });
  return code;
}

LogicalResult GeneratedKernelEmitter::collectOperandTypes(KernelCode &code) {
  for (Value v : op->getOperands()) {
    auto type = cast<MemRefType>(v.getType());
    auto cType = cStorageType(type.getElementType());
    if (failed(cType))
      return op.emitOpError() << "element type " << type.getElementType()
                              << " is not supported by codegen (expected "
                                 "f32, f64, f16, bf16, i64, i32 or i1)";
    code.paramTypes.push_back(*cType);
    code.usesF16 |= type.getElementType().isF16();
    code.usesBF16 |= type.getElementType().isBF16();
    elemTypes.push_back(type.getElementType());
    valueTypes.push_back(*cValueType(type.getElementType()));
  }
  code.restrictParam = restrictFlags(op, op->getOperands());
  return success();
}

void GeneratedKernelEmitter::findCopyOnlyOperands(const KernelCode &code) {
  // A kernel that only moves elements (its body yields inputs of the
  // outputs' types) copies them as stored, so that f16 / bf16 NaN payloads
  // survive a transpose or a concat as they do in a memcpy.
  Block &b = op.getBody().front();
  auto yield = cast<exec::YieldOp>(b.getTerminator());
  bool copyOnly =
      b.without_terminator().empty() &&
      llvm::all_of(op.getIteratorTypes().getAsValueRange<StringAttr>(),
                   [](StringRef it) { return it == "parallel"; }) &&
      llvm::all_of(llvm::enumerate(yield.getValues()), [&](auto ov) {
        auto arg = dyn_cast<BlockArgument>(ov.value());
        return arg && arg.getOwner() == &b && arg.getArgNumber() < numInputs &&
               elemTypes[arg.getArgNumber()] ==
                   elemTypes[numInputs + ov.index()];
      });
  if (copyOnly)
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      if (isHalfFloat(elemTypes[i])) {
        valueTypes[i] = code.paramTypes[i];
        rawOperands.insert(i);
      }
}

std::string GeneratedKernelEmitter::loadOperand(unsigned i,
                                                const std::string &ref) {
  return rawOperands.count(i) ? ref : loadExpr(elemTypes[i], ref);
}

void GeneratedKernelEmitter::findAccumulatorUpdates() {
  Block &block = op.getBody().front();
  auto yieldOp = cast<exec::YieldOp>(block.getTerminator());
  // The outputs the body yields (accumulators); the rest are written by the
  // epilogue region.
  const unsigned numAcc = op.getNumBodyOutputs();
  promoted.assign(numAcc, false);
  if (!reduction.empty()) {
    // An f32 output whose only update is `acc + x` is summed in double, so
    // long reductions (BatchNorm statistics, bias gradients) stay within
    // the reference's rounding instead of growing with the length.
    for (unsigned o = 0; o < numAcc; ++o) {
      BlockArgument acc = block.getArgument(numInputs + o);
      if (!acc.getType().isF32() || !acc.hasOneUse())
        continue;
      auto add = dyn_cast<arith::AddFOp>(*acc.getUsers().begin());
      if (!add || add.getLhs() == add.getRhs() ||
          !add.getResult().hasOneUse() ||
          *add.getResult().getUsers().begin() != yieldOp.getOperation() ||
          yieldOp.getValues()[o] != add.getResult())
        continue;
      // The yield must not use the sum twice (hasOneUse covers it).
      promoted[o] = true;
      promotedAdds[add] = o;
    }
  }
  if (!reduction.empty()) {
    // An f16 / bf16 output accumulates in its float accumulator: the op that
    // updates it is not rounded, and the store rounds once. Ops that feed
    // the update (a fused elementwise producer) still round, as the unfused
    // graph stores their results in the low type.
    for (unsigned o = 0; o < numAcc; ++o) {
      if (!isHalfFloat(elemTypes[numInputs + o]))
        continue;
      BlockArgument acc = block.getArgument(numInputs + o);
      Operation *update = yieldOp.getValues()[o].getDefiningOp();
      if (update && update->getBlock() == &block &&
          update->getResult(0).hasOneUse() &&
          llvm::is_contained(update->getOperands(), acc))
        halfAccumulates.insert(update);
    }
  }
}

LogicalResult GeneratedKernelEmitter::emitAccumulators(const std::string &in) {
  // Outputs live in accumulators; their positions may not depend on
  // reduction loops.
  Block &block = op.getBody().front();
  auto operands = op->getOperands();
  const unsigned numAcc = op.getNumBodyOutputs();
  std::optional<ArrayAttr> init = op.getInit();
  // For emitElementwiseCuda: the outputs whose accumulator starts from the
  // stored value, the inputs the element code loads.
  accInitLoads.assign(op.getOutputs().size(), false);
  loadedInputs.assign(numInputs, false);
  for (unsigned o = numAcc; o < op.getOutputs().size(); ++o)
    for (unsigned d : reduction)
      if (maps[numInputs + o].isFunctionOfDim(d))
        return op.emitOpError()
               << "output #" << o << " is indexed by reduction loop " << d
               << "; codegen needs outputs indexed by "
                  "parallel loops only";
  for (unsigned o = 0; o < numAcc; ++o) {
    unsigned operand = numInputs + o;
    for (unsigned d : reduction)
      if (maps[operand].isFunctionOfDim(d))
        return op.emitOpError()
               << "output #" << o << " is indexed by reduction loop " << d
               << "; codegen needs outputs indexed by "
                  "parallel loops only";
    const std::string t = promoted[o] ? "double" : valueTypes[operand];
    std::string initValue;
    if (init) {
      Type elem =
          cast<MemRefType>(operands[operand].getType()).getElementType();
      auto lit = attrLiteral((*init)[o], elem);
      if (failed(lit))
        return op.emitOpError()
               << "init value " << (*init)[o] << " for output #" << o
               << " is not a supported scalar attribute";
      initValue = *lit;
    } else if (reduction.empty() && block.getArgument(operand).use_empty()) {
      // Overwritten by the yield; no need to read the old value.
    } else {
      initValue = loadOperand(operand, "a" + std::to_string(operand) + "[" +
                                           offsets[operand] + "]");
      accInitLoads[o] = true;
    }
    os << in << t << " acc" << o << (initValue.empty() ? "" : " = " + initValue)
       << ";\n";
    names[block.getArgument(operand)] = "acc" + std::to_string(o);
    accTypes.push_back(t);
    accInits.push_back(initValue);
  }
  return success();
}

void GeneratedKernelEmitter::emitInputLoads(const std::string &in) {
  Block &block = op.getBody().front();
  for (unsigned i = 0; i < numInputs; ++i) {
    BlockArgument arg = block.getArgument(i);
    if (arg.use_empty())
      continue;
    std::string name = "x" + std::to_string(i);
    names[arg] = name;
    // An input read at a position that uses no loop (a rank-0 step counter,
    // a broadcast scalar) is loaded once. Outputs are stored only after all
    // reads of an element, so this changes no result of a kernel whose
    // elements do not race.
    bool invariantRead = llvm::all_of(maps[i].getResults(), [](AffineExpr e) {
      return e.isSymbolicOrConstant();
    });
    if (invariantRead) {
      invariantValues.insert(arg);
      invOs << "  const " << valueTypes[i] << " " << name << " = "
            << loadOperand(i, "a" + std::to_string(i) + "[" + offsets[i] + "]")
            << ";\n";
      continue;
    }
    os << in << "const " << valueTypes[i] << " " << name << " = "
       << loadOperand(i, "a" + std::to_string(i) + "[" + offsets[i] + "]")
       << ";\n";
    loadedInputs[i] = true;
  }
}

LogicalResult GeneratedKernelEmitter::emitElementUpdate(const std::string &in) {
  Block &block = op.getBody().front();
  for (Operation &bodyOp : block.without_terminator())
    if (failed(emitBodyOp(&bodyOp, in)))
      return failure();
  auto yield = cast<exec::YieldOp>(block.getTerminator());
  SmallVector<std::string> yielded;
  for (Value v : yield.getValues()) {
    auto name = nameOf(v, yield);
    if (failed(name))
      return failure();
    yielded.push_back(*name);
  }
  // Through temporaries: a yield may name another output's accumulator.
  for (unsigned o = 0; o < yielded.size(); ++o)
    os << in << "const "
       << (promoted[o] ? std::string("double") : valueTypes[numInputs + o])
       << " y" << o << " = " << yielded[o] << ";\n";
  for (unsigned o = 0; o < yielded.size(); ++o)
    os << in << "acc" << o << " = y" << o << ";\n";
  return success();
}

FailureOr<std::string>
GeneratedKernelEmitter::emitStores(const std::string &in) {
  std::string stores;
  for (unsigned o = 0; o < op.getNumBodyOutputs(); ++o)
    stores += in + "a" + std::to_string(numInputs + o) + "[" +
              offsets[numInputs + o] + "] = " +
              (rawOperands.count(numInputs + o)
                   ? "acc" + std::to_string(o)
                   : storeExpr(elemTypes[numInputs + o],
                               (promoted[o] ? "(float)acc" : "acc") +
                                   std::to_string(o))) +
              ";\n";
  if (!op.getEpilogue().empty()) {
    auto epilogue = emitEpilogue(offsets, elemTypes, valueTypes, in);
    if (failed(epilogue))
      return failure();
    stores += *epilogue;
  }
  return stores;
}

// knownAlignment (KernelCode.h): why each kind of buffer is as aligned as
// it says.
int64_t knownAlignment(Value v) {
  constexpr int64_t kAllocationAlignment = 256;
  auto alignmentOf = [&](int64_t offset) {
    return offset == 0 ? kAllocationAlignment
                       : std::min<int64_t>(kAllocationAlignment,
                                           offset & -offset);
  };
  while (auto reshape = v.getDefiningOp<exec::ReshapeOp>())
    v = reshape.getSource();
  if (v.getDefiningOp<exec::VariableRefOp>())
    return kAllocationAlignment;
  if (auto input = v.getDefiningOp<exec::InputOp>()) {
    auto type = cast<MemRefType>(input.getType());
    return alignmentOf(type.getNumElements() *
                       std::max<int64_t>(1, type.getElementTypeBitWidth() / 8));
  }
  if (auto alloc = v.getDefiningOp<exec::AllocOp>())
    if (auto offset = alloc.getOffset())
      return alignmentOf(static_cast<int64_t>(*offset));
  return 0;
}

FailureOr<KernelCode> buildGeneratedKernel(exec::KernelOp op) {
  return GeneratedKernelEmitter(op).emit();
}

FailureOr<std::vector<KernelCode>> collectKernels(ModuleOp module) {
  std::vector<KernelCode> kernels;
  llvm::StringMap<size_t> byName;
  bool failedAny = false;
  module.walk([&](Operation *op) {
    FailureOr<KernelCode> code = failure();
    if (auto k = dyn_cast<exec::KernelOp>(op))
      code = buildGeneratedKernel(k);
    else if (auto b = dyn_cast<exec::BuiltinKernelOp>(op))
      code = buildBuiltinKernel(b);
    else if (auto m = dyn_cast<exec::MultiTensorKernelOp>(op))
      code = buildMultiTensorKernel(m);
    else
      return;
    if (failed(code)) {
      failedAny = true;
      return;
    }
    auto it = byName.find(code->name);
    if (it != byName.end()) {
      KernelCode &prev = kernels[it->second];
      if (prev.body != code->body || prev.invariant != code->invariant ||
          prev.paramTypes != code->paramTypes ||
          prev.numThreads != code->numThreads) {
        op->emitOpError() << "kernel name '" << code->name
                          << "' is used by two different kernels";
        failedAny = true;
        return;
      }
      // One launch may alias operands that another does not.
      for (size_t i = 0; i < prev.restrictParam.size(); ++i)
        prev.restrictParam[i] = prev.restrictParam[i] && code->restrictParam[i];
      return;
    }
    byName[code->name] = kernels.size();
    kernels.push_back(std::move(*code));
  });
  if (failedAny)
    return failure();
  // Kernels identical up to their name are emitted and compiled once.
  dedupKernels(kernels);
  return kernels;
}

} // namespace dlc::codegen::detail
