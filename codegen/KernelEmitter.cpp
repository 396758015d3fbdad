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
#include "codegen/KernelCode.h"
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

/// "f16" or "bf16", the suffix of the conversion helpers of |type|.
static std::string halfName(Type type) {
  return type.isBF16() ? "bf16" : "f16";
}

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

/// The C literal of a typed scalar attribute (arith.constant value or `init`).
static FailureOr<std::string> attrLiteral(Attribute attr, Type type) {
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

/// Names loop |d| in C: `i<d>` unless a caller renames it.
using DimNamer = llvm::function_ref<std::string(unsigned)>;
static std::string plainDimName(unsigned d) { return "i" + std::to_string(d); }

/// C expression of an affine expression over loop indices `i<d>` (or the
/// names |dimName| gives). Constants are `long long` literals, or plain
/// `int` ones when |narrow| (every index and offset fits in 32 bits).
static FailureOr<std::string> affineToC(AffineExpr expr, bool narrow = false,
                                        DimNamer dimName = plainDimName) {
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

namespace {
/// Prints the body of one dlexec.kernel.
class GeneratedKernelEmitter {
public:
  explicit GeneratedKernelEmitter(exec::KernelOp op)
      : op(op), os(body), invOs(invariantBody) {}

  FailureOr<KernelCode> emit();

private:
  LogicalResult computeLoopSizes();
  FailureOr<std::string> offsetOf(unsigned operand, AffineMap map,
                                  bool narrow = false,
                                  DimNamer dimName = plainDimName);
  /// Replaces the CUDA body of a kernel without reduction loops whose
  /// indices fit in 32 bits with grid-stride loops (KernelCode::cudaLoops),
  /// over 128-bit vectors where every operand allows (see the definition).
  /// |accInitLoads| says which outputs read their old value, |loadedInputs|
  /// which inputs the element code loads, |ops| is the element code between
  /// the loads and the stores, |load| the load expression of an operand.
  void emitElementwiseCuda(
      KernelCode &code, ArrayRef<AffineMap> maps, ArrayRef<Type> elemTypes,
      ArrayRef<std::string> valueTypes, ArrayRef<bool> accInitLoads,
      ArrayRef<bool> loadedInputs, const std::string &ops,
      llvm::function_ref<std::string(unsigned, const std::string &)> load,
      llvm::function_ref<std::string(unsigned, const std::string &)> store);
  LogicalResult emitBodyOp(Operation *bodyOp, const std::string &indent);
  /// The C statements of the epilogue region, run where the reduced values
  /// have just been stored (parallel indices `i<d>` in scope): each reduced
  /// output is read back as stored, so the epilogue sees exactly the values
  /// a separate kernel would load; the epilogue outputs are then stored.
  FailureOr<std::string> emitEpilogue(ArrayRef<std::string> offsets,
                                      ArrayRef<Type> elemTypes,
                                      ArrayRef<std::string> valueTypes,
                                      const std::string &indent);
  FailureOr<std::string> nameOf(Value v, Operation *user);
  std::string fresh() { return "v" + std::to_string(counter++); }
  /// C statements declaring `const long long i<d>` for each loop of |dims|
  /// (outermost first, the last fastest) from the flat index |var|, each
  /// line indented by |indent|; 32-bit arithmetic when |narrow|.
  std::string decodeIndices(ArrayRef<unsigned> dims, StringRef var, bool narrow,
                            StringRef indent) const;
  /// Adds the CUDA form of a reduction longer than a warp: several threads
  /// per output, each combining a strided slice of the reduction, their
  /// partials combined through shared memory (KernelCode::cudaBody). Leaves
  /// |code| serial where an output's update is not a recognised associative
  /// combiner.
  void emitCooperativeReduction(KernelCode &code, ArrayRef<unsigned> parallel,
                                ArrayRef<unsigned> reduction,
                                ArrayRef<AffineMap> maps,
                                const std::string &inner,
                                const std::string &stores);

  exec::KernelOp op;
  std::string body;
  llvm::raw_string_ostream os;
  /// Statements that read no loop index, printed before every loop.
  std::string invariantBody;
  llvm::raw_string_ostream invOs;
  /// Values computed in invariantBody.
  llvm::DenseSet<Value> invariantValues;
  std::vector<int64_t> loopSizes;
  llvm::DenseMap<Value, std::string> names;
  /// f32 sums accumulated in double: the arith.addf of each such output.
  llvm::DenseMap<Operation *, unsigned> promotedAdds;
  /// The ops that update an f16 / bf16 reduction accumulator (they read it
  /// and their only use is its yield): computed in float and not rounded,
  /// so that the accumulator is rounded once, when it is stored.
  llvm::DenseSet<Operation *> halfAccumulates;
  /// Per output: the C type of its accumulator and its initial value.
  std::vector<std::string> accTypes, accInits;
  int counter = 0;
};
} // namespace

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

static std::string unsignedOf(const std::string &cType) {
  if (cType == "long long")
    return "unsigned long long";
  if (cType == "int")
    return "unsigned int";
  return cType;
}

static const char *mathName(Operation *op, bool isF32) {
#define DLC_CASE(Op, F32, F64)                                                 \
  .Case<Op>([&](auto) { return isF32 ? F32 : F64; })
  return llvm::TypeSwitch<Operation *, const char *>(op)
      DLC_KERNEL_MATH_CALLS(DLC_CASE)
      .Default([](Operation *) { return nullptr; });
#undef DLC_CASE
}

/// Whether integer division by |v| is defined in C for every dividend: |v|
/// is a constant other than 0 and -1.
static bool isSafeDivisor(Value v) {
  auto cst = v.getDefiningOp<arith::ConstantOp>();
  auto attr = cst ? dyn_cast<IntegerAttr>(cst.getValue()) : IntegerAttr();
  return attr && !attr.getValue().isZero() && !attr.getValue().isAllOnes();
}

static const char *binaryOperator(Operation *op) {
#define DLC_CASE(Op, Operator) .Case<Op>([](auto) { return Operator; })
  return llvm::TypeSwitch<Operation *, const char *>(op)
      DLC_KERNEL_BINARY_OPERATORS(DLC_CASE)
      .Default([](Operation *) { return nullptr; });
#undef DLC_CASE
}

static std::string cmpfExpr(arith::CmpFPredicate p, const std::string &a,
                            const std::string &b) {
  using P = arith::CmpFPredicate;
  switch (p) {
  case P::AlwaysFalse:
    return "false";
  case P::OEQ:
    return a + " == " + b;
  case P::OGT:
    return a + " > " + b;
  case P::OGE:
    return a + " >= " + b;
  case P::OLT:
    return a + " < " + b;
  case P::OLE:
    return a + " <= " + b;
  case P::ONE:
    return "(" + a + " < " + b + " || " + a + " > " + b + ")";
  case P::ORD:
    return "(" + a + " == " + a + " && " + b + " == " + b + ")";
  case P::UEQ:
    return "!(" + a + " < " + b + " || " + a + " > " + b + ")";
  case P::UGT:
    return "!(" + a + " <= " + b + ")";
  case P::UGE:
    return "!(" + a + " < " + b + ")";
  case P::ULT:
    return "!(" + a + " >= " + b + ")";
  case P::ULE:
    return "!(" + a + " > " + b + ")";
  case P::UNE:
    return a + " != " + b;
  case P::UNO:
    return "(" + a + " != " + a + " || " + b + " != " + b + ")";
  case P::AlwaysTrue:
    return "true";
  }
  return "false";
}

static std::string cmpiExpr(arith::CmpIPredicate p, const std::string &a,
                            const std::string &b, const std::string &cType) {
  using P = arith::CmpIPredicate;
  std::string ua = "(" + unsignedOf(cType) + ")" + a;
  std::string ub = "(" + unsignedOf(cType) + ")" + b;
  switch (p) {
  case P::eq:
    return a + " == " + b;
  case P::ne:
    return a + " != " + b;
  case P::slt:
    return a + " < " + b;
  case P::sle:
    return a + " <= " + b;
  case P::sgt:
    return a + " > " + b;
  case P::sge:
    return a + " >= " + b;
  case P::ult:
    return ua + " < " + ub;
  case P::ule:
    return ua + " <= " + ub;
  case P::ugt:
    return ua + " > " + ub;
  case P::uge:
    return ua + " >= " + ub;
  }
  return "false";
}

/// C for arith.maximumf / minimumf of |a| and |b| (|max| picks which):
/// NaN-propagating, as the ops are.
static std::string nanPropagatingMinMax(bool max, const std::string &a,
                                        const std::string &b) {
  return "((" + a + (max ? " > " : " < ") + b + " || " + a + " != " + a +
         ") ? " + a + " : " + b + ")";
}

LogicalResult GeneratedKernelEmitter::emitBodyOp(Operation *bodyOp,
                                                 const std::string &indent) {
  if (bodyOp->getNumResults() != 1)
    return bodyOp->emitOpError()
           << "is not supported in a dlexec.kernel body by codegen";
  Value result = bodyOp->getResult(0);
  auto cType = cValueType(result.getType());
  if (failed(cType))
    return bodyOp->emitOpError() << "result type " << result.getType()
                                 << " is not supported by codegen (expected "
                                    "f32, f64, f16, bf16, i64, i32, i1 or "
                                    "index)";
  std::vector<std::string> args;
  for (Value operand : bodyOp->getOperands()) {
    auto name = nameOf(operand, bodyOp);
    if (failed(name))
      return failure();
    args.push_back(*name);
  }
  // f16 / bf16 compute in float and round each result once (below).
  bool isHalf = isHalfFloat(result.getType());
  bool isF32 = result.getType().isF32() || isHalf;
  // Hoist an op whose operands are all invariant. dlexec.index reads a loop
  // index; integer division and remainder may trap, so they stay where a
  // zero-trip loop would skip them.
  bool hoist =
      !isa<exec::IndexOp, arith::DivSIOp, arith::RemSIOp>(bodyOp) &&
      !promotedAdds.count(bodyOp) &&
      llvm::all_of(bodyOp->getOperands(), [&](Value v) {
        return invariantValues.contains(v) ||
               (!names.count(v) && v.getDefiningOp<arith::ConstantOp>());
      });
  std::string expr;
  bool roundedHalf = false; // expr already holds a value of the 2-byte type
  if (promotedAdds.count(bodyOp)) {
    // acc (double) + the other operand widened to double.
    unsigned otherIdx = 1;
    if (names.lookup(bodyOp->getOperand(0)) !=
        "acc" + std::to_string(promotedAdds[bodyOp]))
      otherIdx = 0;
    std::string name = fresh();
    names[result] = name;
    os << indent << "const double " << name << " = " << args[1 - otherIdx]
       << " + (double)" << args[otherIdx] << ";\n";
    return success();
  }
  if (auto cst = dyn_cast<arith::ConstantOp>(bodyOp)) {
    auto lit = attrLiteral(cst.getValue(), result.getType());
    if (failed(lit))
      return bodyOp->emitOpError()
             << "constant " << cst.getValue() << " is not supported by codegen";
    expr = *lit;
  } else if (auto idx = dyn_cast<exec::IndexOp>(bodyOp)) {
    int64_t dim = idx.getDim();
    if (dim < 0 || dim >= (int64_t)loopSizes.size())
      return bodyOp->emitOpError()
             << "loop " << dim << " does not exist; the "
             << "kernel has " << loopSizes.size() << " loops";
    expr = "i" + std::to_string(dim);
  } else if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(bodyOp) &&
             unsignedOf(*cType) != *cType) {
    // Signed overflow is undefined in C++ and CUDA C++; the same operation
    // on the unsigned type wraps (two's complement), as arith.addi/subi/muli
    // and ONNX integer arithmetic do.
    std::string u = "(" + unsignedOf(*cType) + ")";
    expr = "(" + *cType + ")(" + u + args[0] + " " + binaryOperator(bodyOp) +
           " " + u + args[1] + ")";
  } else if (isa<arith::DivSIOp, arith::RemSIOp>(bodyOp) &&
             !isSafeDivisor(bodyOp->getOperand(1))) {
    // Defined results where C's are undefined: x / 0 == x % 0 == 0 (NumPy
    // gives 0 too; ONNX leaves integer division by zero undefined), and
    // INT_MIN / -1 wraps to INT_MIN (so x / -1 is the wrapping 0 - x and
    // x % -1 is 0).
    const std::string &a = args[0], &b = args[1];
    if (isa<arith::DivSIOp>(bodyOp))
      expr = "(" + b + " == 0 ? (" + *cType + ")0 : " + b + " == -1 ? (" +
             *cType + ")((" + unsignedOf(*cType) + ")0 - (" +
             unsignedOf(*cType) + ")" + a + ") : (" + *cType + ")(" + a +
             " / " + b + "))";
    else
      expr = "((" + b + " == 0 || " + b + " == -1) ? (" + *cType + ")0 : (" +
             *cType + ")(" + a + " % " + b + "))";
  } else if (const char *binop = binaryOperator(bodyOp)) {
    expr = "(" + *cType + ")(" + args[0] + " " + binop + " " + args[1] + ")";
  } else if (isa<arith::ShLIOp, arith::ShRSIOp>(bodyOp)) {
    // The amount taken modulo the bit width: C leaves larger (and negative)
    // amounts undefined where arith.shli/shrsi give poison, so any value is
    // a refinement; the lowering selects ONNX's result for those amounts.
    // The left shift runs on the unsigned type (no signed overflow); the
    // right shift on the signed one is arithmetic (sign-extending).
    unsigned bits = result.getType().getIntOrFloatBitWidth();
    std::string u = "(" + unsignedOf(*cType) + ")";
    std::string amount =
        "(" + u + args[1] + " & " + std::to_string(bits - 1) + "u)";
    if (isa<arith::ShLIOp>(bodyOp))
      expr = "(" + *cType + ")(" + u + args[0] + " << " + amount + ")";
    else
      expr = "(" + *cType + ")(" + args[0] + " >> " + amount + ")";
  } else if (isa<arith::BitcastOp>(bodyOp)) {
    Type from = bodyOp->getOperand(0).getType(), to = result.getType();
    const char *fn = from.isF32() && to.isInteger(32)   ? "dlc_f32_as_i32"
                     : from.isInteger(32) && to.isF32() ? "dlc_i32_as_f32"
                     : from.isF64() && to.isInteger(64) ? "dlc_f64_as_i64"
                     : from.isInteger(64) && to.isF64() ? "dlc_i64_as_f64"
                                                        : nullptr;
    if (from == to)
      expr = args[0];
    else if (!fn)
      return bodyOp->emitOpError()
             << "from " << from << " to " << to
             << " is not supported by codegen (f32 <-> i32, f64 <-> i64)";
    else
      expr = std::string(fn) + "(" + args[0] + ")";
  } else if (isa<arith::NegFOp>(bodyOp)) {
    expr = "-" + args[0];
  } else if (isa<arith::MaximumFOp, arith::MinimumFOp>(bodyOp)) {
    expr =
        nanPropagatingMinMax(isa<arith::MaximumFOp>(bodyOp), args[0], args[1]);
  } else if (isa<arith::MaxSIOp>(bodyOp)) {
    expr = "(" + args[0] + " > " + args[1] + " ? " + args[0] + " : " + args[1] +
           ")";
  } else if (isa<arith::MinSIOp>(bodyOp)) {
    expr = "(" + args[0] + " < " + args[1] + " ? " + args[0] + " : " + args[1] +
           ")";
  } else if (auto cmp = dyn_cast<arith::CmpFOp>(bodyOp)) {
    expr = "(" + cmpfExpr(cmp.getPredicate(), args[0], args[1]) + ")";
  } else if (auto cmp = dyn_cast<arith::CmpIOp>(bodyOp)) {
    auto operandType = cScalarType(cmp.getLhs().getType());
    if (failed(operandType))
      return bodyOp->emitOpError() << "operand type " << cmp.getLhs().getType()
                                   << " is not supported by codegen";
    expr = "(" + cmpiExpr(cmp.getPredicate(), args[0], args[1], *operandType) +
           ")";
  } else if (isa<arith::SelectOp>(bodyOp)) {
    expr = "(" + args[0] + " ? " + args[1] + " : " + args[2] + ")";
  } else if (isHalf &&
             isa<arith::TruncFOp, arith::SIToFPOp, arith::UIToFPOp>(bodyOp)) {
    // One rounding from the exact source value: f64 and integers go through
    // double (exact for every f64, i32 and i1; i64 beyond 2^53 rounds
    // twice), float and the other 2-byte type through float.
    Type src = bodyOp->getOperand(0).getType();
    std::string h = halfName(result.getType());
    if (src.isF32() || isHalfFloat(src))
      expr = "(float)" + args[0];
    else
      roundedHalf = true;
    if (roundedHalf && isa<arith::UIToFPOp>(bodyOp))
      expr = "dlc_" + h + "_to_f32(dlc_f64_to_" + h + "((double)(" +
             unsignedOf(*cScalarType(src)) + ")" + args[0] + "))";
    else if (roundedHalf)
      expr =
          "dlc_" + h + "_to_f32(dlc_f64_to_" + h + "((double)" + args[0] + "))";
  } else if (isa<arith::FPToSIOp>(bodyOp) &&
             result.getType().getIntOrFloatBitWidth() > 1) {
    // Float -> signed integer, defined for every input (a plain C cast is
    // undefined for NaN and out-of-range values): truncation toward zero,
    // saturated to the integer's range, NaN to 0 -- what the GPU's cvt.rzi
    // conversion gives. The bounds +-2^(bits-1) are exact in f32 and f64.
    unsigned bits = result.getType().getIntOrFloatBitWidth();
    std::string bound = "0x1p" + std::to_string(bits - 1);
    std::string x = "(" + args[0] + ")";
    expr = "(" + x + " != " + x + " ? (" + *cType + ")0 : " + x +
           " >= " + bound + " ? (" + *cType + ")(~((" + unsignedOf(*cType) +
           ")1 << " + std::to_string(bits - 1) + ")) : " + x + " <= -" +
           bound + " ? (" + *cType + ")((" + unsignedOf(*cType) + ")1 << " +
           std::to_string(bits - 1) + ") : (" + *cType + ")" + x + ")";
  } else if (isa<arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp,
                 arith::FPToSIOp, arith::IndexCastOp, arith::ExtSIOp,
                 arith::TruncIOp>(bodyOp)) {
    expr = "(" + *cType + ")" + args[0];
  } else if (isa<arith::UIToFPOp, arith::ExtUIOp>(bodyOp)) {
    auto srcType = cScalarType(bodyOp->getOperand(0).getType());
    if (failed(srcType))
      return bodyOp->emitOpError()
             << "operand type " << bodyOp->getOperand(0).getType()
             << " is not supported by codegen";
    expr = "(" + *cType + ")(" + unsignedOf(*srcType) + ")" + args[0];
  } else if (isa<math::RsqrtOp>(bodyOp)) {
    expr = isF32 ? "(1.0f / sqrtf(" + args[0] + "))"
                 : "(1.0 / sqrt(" + args[0] + "))";
  } else if (const char *fn = mathName(bodyOp, isF32)) {
    if (!isF32 && !result.getType().isF64())
      return bodyOp->emitOpError()
             << "on " << result.getType() << " is not supported by codegen";
    expr = std::string(fn) + "(";
    for (size_t i = 0; i < args.size(); ++i)
      expr += (i ? ", " : "") + args[i];
    expr += ")";
  } else {
    return bodyOp->emitOpError()
           << "is not supported in a dlexec.kernel body by codegen";
  }
  // The result of an f16 / bf16 op is the float result rounded once to
  // nearest even; a select, a constant and a conversion from f64 or an
  // integer (rounded above) already hold values of the type.
  if (isHalf && !roundedHalf &&
      !isa<arith::SelectOp, arith::ConstantOp>(bodyOp) &&
      !halfAccumulates.contains(bodyOp))
    expr = "dlc_round_" + halfName(result.getType()) + "(" + expr + ")";
  std::string name = fresh();
  names[result] = name;
  if (hoist) {
    invariantValues.insert(result);
    invOs << "  const " << *cType << " " << name << " = " << expr << ";\n";
  } else {
    os << indent << "const " << *cType << " " << name << " = " << expr << ";\n";
  }
  return success();
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
  auto operands = op->getOperands();
  unsigned numInputs = op.getInputs().size();
  // Per operand: its element type and the C type its values compute in.
  SmallVector<Type> elemTypes;
  SmallVector<std::string> valueTypes;
  // Operands read and written as stored (a copy-only kernel).
  llvm::DenseSet<unsigned> rawOperands;
  for (Value v : operands) {
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
  code.restrictParam = restrictFlags(op, operands);
  // A kernel that only moves elements (its body yields inputs of the
  // outputs' types) copies them as stored, so that f16 / bf16 NaN payloads
  // survive a transpose or a concat as they do in a memcpy.
  {
    Block &b = op.getBody().front();
    auto yield = cast<exec::YieldOp>(b.getTerminator());
    bool copyOnly =
        b.without_terminator().empty() &&
        llvm::all_of(op.getIteratorTypes().getAsValueRange<StringAttr>(),
                     [](StringRef it) { return it == "parallel"; }) &&
        llvm::all_of(llvm::enumerate(yield.getValues()), [&](auto ov) {
          auto arg = dyn_cast<BlockArgument>(ov.value());
          return arg && arg.getOwner() == &b &&
                 arg.getArgNumber() < numInputs &&
                 elemTypes[arg.getArgNumber()] ==
                     elemTypes[numInputs + ov.index()];
        });
    if (copyOnly)
      for (unsigned i = 0; i < operands.size(); ++i)
        if (isHalfFloat(elemTypes[i])) {
          valueTypes[i] = code.paramTypes[i];
          rawOperands.insert(i);
        }
  }
  auto load = [&](unsigned i, const std::string &ref) {
    return rawOperands.count(i) ? ref : loadExpr(elemTypes[i], ref);
  };

  SmallVector<unsigned> parallel, reduction;
  for (auto [i, it] : llvm::enumerate(op.getIteratorTypes()))
    (cast<StringAttr>(it).getValue() == "parallel" ? parallel : reduction)
        .push_back(i);
  code.numThreads = 1;
  for (unsigned d : parallel)
    code.numThreads *= loopSizes[d];

  SmallVector<AffineMap> maps(
      op.getIndexingMaps().getAsValueRange<AffineMapAttr>());
  SmallVector<std::string> offsets;
  for (unsigned i = 0; i < operands.size(); ++i) {
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

  // Outputs live in accumulators; their positions may not depend on
  // reduction loops.
  Block &block = op.getBody().front();
  auto yieldOp = cast<exec::YieldOp>(block.getTerminator());
  // The outputs the body yields (accumulators); the rest are written by the
  // epilogue region.
  const unsigned numAcc = op.getNumBodyOutputs();
  std::vector<bool> promoted(numAcc, false);
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
  std::optional<ArrayAttr> init = op.getInit();
  // For emitElementwiseCuda: the outputs whose accumulator starts from the
  // stored value, the inputs the element code loads.
  SmallVector<bool> accInitLoads(op.getOutputs().size(), false);
  SmallVector<bool> loadedInputs(numInputs, false);
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
      initValue = load(operand, "a" + std::to_string(operand) + "[" +
                                    offsets[operand] + "]");
      accInitLoads[o] = true;
    }
    os << in << t << " acc" << o << (initValue.empty() ? "" : " = " + initValue)
       << ";\n";
    names[block.getArgument(operand)] = "acc" + std::to_string(o);
    accTypes.push_back(t);
    accInits.push_back(initValue);
  }

  for (unsigned d : reduction) {
    os << in << "for (long long i" << d << " = 0; i" << d << " < "
       << loopSizes[d] << "LL; ++i" << d << ") {\n";
    in += "  ";
  }
  const size_t innerBegin = body.size();
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
            << load(i, "a" + std::to_string(i) + "[" + offsets[i] + "]")
            << ";\n";
      continue;
    }
    os << in << "const " << valueTypes[i] << " " << name << " = "
       << load(i, "a" + std::to_string(i) + "[" + offsets[i] + "]") << ";\n";
    loadedInputs[i] = true;
  }
  const size_t opsBegin = body.size();
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
  const std::string ops = body.substr(opsBegin);
  const std::string inner = body.substr(innerBegin);
  for (size_t k = 0; k < reduction.size(); ++k) {
    in.resize(in.size() - 2);
    os << in << "}\n";
  }
  std::string stores;
  for (unsigned o = 0; o < numAcc; ++o)
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
  os << stores;
  code.invariant = std::move(invariantBody);
  code.loopBody = body;
  code.body = decode + body;
  code.loopNest = true;
  for (unsigned d : parallel)
    code.hostLoops.push_back({"i" + std::to_string(d), loopSizes[d]});
  if (!parallel.empty()) {
    AffineExpr innerDim = getAffineDimExpr(parallel.back(), op.getContext());
    code.innerIndependent = llvm::all_of(
        llvm::seq<unsigned>(numInputs, operands.size()), [&](unsigned i) {
          return llvm::is_contained(maps[i].getResults(), innerDim);
        });
  }
  emitCooperativeReduction(code, parallel, reduction, maps, inner, stores);
  if (reduction.empty())
    emitElementwiseCuda(
        code, maps, elemTypes, valueTypes, accInitLoads, loadedInputs, ops,
        load, [&](unsigned operand, const std::string &acc) {
          return rawOperands.count(operand)
                     ? acc
                     : storeExpr(elemTypes[operand], acc);
        });
  return code;
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

void GeneratedKernelEmitter::emitElementwiseCuda(
    KernelCode &code, ArrayRef<AffineMap> maps, ArrayRef<Type> elemTypes,
    ArrayRef<std::string> valueTypes, ArrayRef<bool> accInitLoads,
    ArrayRef<bool> loadedInputs, const std::string &ops,
    llvm::function_ref<std::string(unsigned, const std::string &)> load,
    llvm::function_ref<std::string(unsigned, const std::string &)> store) {
  auto operands = op->getOperands();
  const unsigned numInputs = op.getInputs().size();
  const unsigned numOperands = operands.size();
  const int64_t n = code.numThreads;
  if (n <= 0 || loopSizes.empty() || n > INT32_MAX)
    return;
  // 32-bit indices: every offset into every operand fits.
  for (Value v : operands)
    if (cast<MemRefType>(v.getType()).getNumElements() > INT32_MAX)
      return;
  const unsigned rank = loopSizes.size(), last = rank - 1;
  const int64_t lastSize = loopSizes[last];
  bool usesIndex = false;
  op.getBody().walk([&](exec::IndexOp) { usesIndex = true; });

  // How the element code reads or writes each operand, as a function of the
  // flat element index e (row-major over the loops).
  enum class Access {
    None,       // an input the element code does not load (unused, or
                // loaded once in `invariant`)
    Flat,       // element e: the identity map
    Contiguous, // the last result is the last loop plus a constant, no other
                // result reads the last loop: consecutive elements of a row
                // are consecutive in memory (a bias along the last axis)
    Splat,      // reads no last-loop index: one value per row
    Gather,     // anything else, element by element
  };
  SmallVector<Access> access(numOperands, Access::None);
  SmallVector<int64_t> lastOffset(numOperands, 0);
  auto bytesOf = [](Type t) {
    return std::max<int64_t>(1, t.getIntOrFloatBitWidth() / 8);
  };
  int64_t widest = 1;
  for (unsigned i = 0; i < numOperands; ++i) {
    if (i < numInputs && !loadedInputs[i])
      continue;
    widest = std::max(widest, bytesOf(elemTypes[i]));
    AffineMap map = maps[i];
    bool flat = map.getNumResults() == rank;
    for (unsigned r = 0; flat && r < rank; ++r) {
      auto d = dyn_cast<AffineDimExpr>(map.getResult(r));
      flat = d && d.getPosition() == r;
    }
    if (flat) {
      access[i] = Access::Flat;
      continue;
    }
    if (!map.isFunctionOfDim(last)) {
      // A splat output would be a race between rows; store it per element.
      access[i] = i < numInputs ? Access::Splat : Access::Gather;
      continue;
    }
    access[i] = Access::Gather;
    unsigned results = map.getNumResults();
    AffineExpr tail = map.getResult(results - 1);
    int64_t c = 0;
    if (auto sum = dyn_cast<AffineBinaryOpExpr>(tail);
        sum && sum.getKind() == AffineExprKind::Add) {
      auto cst = dyn_cast<AffineConstantExpr>(sum.getRHS());
      if (!cst)
        continue;
      c = cst.getValue();
      tail = sum.getLHS();
    }
    auto d = dyn_cast<AffineDimExpr>(tail);
    if (!d || d.getPosition() != last)
      continue;
    bool others = false;
    for (unsigned r = 0; r + 1 < results; ++r)
      others |= map.getResult(r).isFunctionOfDim(last);
    if (!others) {
      access[i] = Access::Contiguous;
      lastOffset[i] = c;
    }
  }

  // 128 bits of the widest operand per vector. A vector covers elements
  // [e, e + V) of one row (V divides the last loop), or of the flat index
  // space when every operand is read at e and no index is decoded.
  const int64_t width = 16 / widest;
  bool allFlat = llvm::all_of(access, [](Access a) {
    return a == Access::None || a == Access::Flat;
  });
  bool decode = !allFlat || usesIndex;
  SmallVector<bool> vec(numOperands, false);
  bool vectorize = width >= 2 && n >= width &&
                   (lastSize % width == 0 || (allFlat && !usesIndex));
  for (unsigned i = 0; vectorize && i < numOperands; ++i) {
    if (access[i] != Access::Flat && access[i] != Access::Contiguous)
      continue;
    const int64_t bytes = width * bytesOf(elemTypes[i]);
    const int64_t align = knownAlignment(operands[i]);
    bool aligned = align > 0 && align % bytes == 0;
    if (access[i] == Access::Contiguous) {
      // Every row of the operand starts on a vector boundary, and so does
      // the constant offset within it (a slice's start).
      auto type = cast<MemRefType>(operands[i].getType());
      aligned &= type.getShape().back() % width == 0 &&
                 lastOffset[i] % width == 0;
    }
    vec[i] = aligned;
  }
  for (unsigned o = numInputs; vectorize && o < numOperands; ++o)
    vectorize = vec[o]; // every store a vector store
  if (!vectorize)
    vec.assign(numOperands, false);

  auto name = [](const char *prefix, unsigned i) {
    return prefix + std::to_string(i);
  };
  // The element code with operand |i| read and written at |ref(i)|.
  // |ops| is indented by two spaces; |in| replaces them.
  auto element = [&](llvm::function_ref<std::string(unsigned)> ref,
                     const std::string &in) {
    std::string t;
    for (unsigned o = numInputs; o < numOperands; ++o) {
      unsigned k = o - numInputs;
      std::string init = accInitLoads[k] ? load(o, ref(o)) : accInits[k];
      t += in + accTypes[k] + " acc" + std::to_string(k) +
           (init.empty() ? "" : " = " + init) + ";\n";
    }
    for (unsigned i = 0; i < numInputs; ++i)
      if (loadedInputs[i])
        t += in + "const " + valueTypes[i] + " x" + std::to_string(i) +
             " = " + load(i, ref(i)) + ";\n";
    for (StringRef line :
         llvm::split(StringRef(ops).rtrim('\n'), '\n'))
      if (!line.empty())
        t += in + line.drop_front(std::min<size_t>(2, line.size())).str() + "\n";
    for (unsigned o = numInputs; o < numOperands; ++o)
      t += in + ref(o) + " = " +
           store(o, "acc" + std::to_string(o - numInputs)) + ";\n";
    return t;
  };
  // `const int i<d>` for the loops of flat index dlc_e (the last one named
  // |lastName|), outermost last in the statements.
  auto decodeFrom = [&](const std::string &lastName) {
    std::string t = "    unsigned dlc_rem = dlc_e;\n";
    for (int d = (int)rank - 1; d >= 0; --d) {
      std::string var = d == (int)last ? lastName : "i" + std::to_string(d);
      if (d == 0)
        t += "    const int " + var + " = (int)dlc_rem;\n";
      else
        t += "    const int " + var + " = (int)(dlc_rem % " +
             std::to_string(loopSizes[d]) + "u); dlc_rem /= " +
             std::to_string(loopSizes[d]) + "u;\n";
    }
    return t;
  };
  auto offset = [&](unsigned i, const std::string &lastName) {
    auto off = offsetOf(i, maps[i], /*narrow=*/true, [&](unsigned d) {
      return d == last ? lastName : "i" + std::to_string(d);
    });
    return succeeded(off) ? *off : std::string("0");
  };
  // Element by element from flat index |from|.
  auto scalarLoop = [&](const std::string &from) {
    std::string t = "  for (unsigned dlc_e = " + from + "; dlc_e < " +
                    std::to_string(n) + "u; dlc_e += dlc_stride) {\n";
    if (decode)
      t += decodeFrom("i" + std::to_string(last));
    t += element([&](unsigned i) {
      return "a" + std::to_string(i) + "[" +
             (access[i] == Access::Flat
                  ? std::string("dlc_e")
                  : offset(i, "i" + std::to_string(last))) +
             "]";
    }, "    ");
    return t + "  }\n";
  };

  std::string out;
  llvm::raw_string_ostream cs(out);
  if (!vectorize) {
    cs << scalarLoop("dlc_first");
    code.body = std::move(out);
    code.cudaLoops = true;
    return;
  }
  // The vector types: a struct of V elements aligned to its size, which
  // the compiler loads and stores as one 32/64/128-bit access.
  std::map<std::string, std::string> vecTypes; // storage type -> struct
  for (unsigned i = 0; i < numOperands; ++i) {
    if (!vec[i])
      continue;
    std::string t = code.paramTypes[i];
    std::string id = "dlc_vec_" + sanitizeName(t) + "_" + std::to_string(width);
    if (vecTypes.emplace(t, id).second)
      cs << "  struct alignas(" << width * bytesOf(elemTypes[i]) << ") " << id
         << " { " << t << " v[" << width << "]; };\n";
  }
  const int64_t vectors = n / width;
  bool perElementLast = usesIndex;
  for (unsigned i = 0; i < numOperands; ++i)
    perElementLast |= !vec[i] && (access[i] == Access::Gather ||
                                  access[i] == Access::Contiguous);
  cs << "  for (unsigned dlc_v = dlc_first; dlc_v < " << vectors
     << "u; dlc_v += dlc_stride) {\n"
     << "    const unsigned dlc_e = dlc_v * " << width << "u;\n";
  if (decode)
    cs << decodeFrom("dlc_b");
  for (unsigned i = 0; i < numOperands; ++i) {
    std::string a = name("a", i), r = name("r", i);
    if (vec[i]) {
      std::string off =
          access[i] == Access::Flat ? std::string("dlc_e") : offset(i, "dlc_b");
      const std::string &t = vecTypes[code.paramTypes[i]];
      // An output that starts from its stored value reads its vector
      // first; each lane is read before it is written.
      if (i < numInputs)
        cs << "    const " << t << " " << r << " = *(const " << t << " *)(" << a
           << " + " << off << ");\n";
      else if (accInitLoads[i - numInputs])
        cs << "    " << t << " " << name("w", i) << " = *(const " << t
           << " *)(" << a << " + " << off << ");\n";
      else
        cs << "    " << t << " " << name("w", i) << ";\n";
    } else if (access[i] == Access::Splat) {
      cs << "    const " << code.paramTypes[i] << " " << name("s", i) << " = "
         << a << "[" << offset(i, "dlc_b") << "];\n";
    }
  }
  cs << "#pragma unroll\n"
     << "    for (int dlc_j = 0; dlc_j < " << width << "; ++dlc_j) {\n";
  if (perElementLast)
    cs << "      const int i" << last << " = dlc_b + dlc_j;\n";
  std::string lastName = "i" + std::to_string(last);
  std::string elem = element([&](unsigned i) -> std::string {
    if (vec[i])
      return (i < numInputs ? name("r", i) : name("w", i)) + ".v[dlc_j]";
    if (access[i] == Access::Splat)
      return name("s", i);
    if (access[i] == Access::Flat)
      return name("a", i) + "[dlc_e + dlc_j]";
    return name("a", i) + "[" + offset(i, lastName) + "]";
  }, "      ");
  cs << elem << "    }\n";
  for (unsigned o = numInputs; o < numOperands; ++o) {
    std::string off =
        access[o] == Access::Flat ? std::string("dlc_e") : offset(o, "dlc_b");
    const std::string &t = vecTypes[code.paramTypes[o]];
    cs << "    *(" << t << " *)(" << name("a", o) << " + " << off
       << ") = " << name("w", o) << ";\n";
  }
  cs << "  }\n";
  if (n % width != 0)
    cs << scalarLoop(std::to_string(vectors * width) + "u + dlc_first");
  code.body = std::move(out);
  code.cudaLoops = true;
  code.vectorWidth = static_cast<int32_t>(width);
  code.cudaThreads = vectors;
}

/// The identity of a recognised combiner and the C expression combining two
/// partial results |a| and |b| of type |t| with it; empty when |combiner| is
/// none of addf, mulf, maximumf, minimumf.
static std::pair<std::string, std::string> combinerOf(Operation *combiner,
                                                      const std::string &t,
                                                      const std::string &a,
                                                      const std::string &b) {
  std::string inf = t == "double" ? "DLC_INF_D" : "DLC_INF_F";
  if (isa<arith::AddFOp>(combiner)) // -0 + x == x for every x, +0 included
    return {"(" + t + ")-0.0", a + " + " + b};
  if (isa<arith::MulFOp>(combiner))
    return {"(" + t + ")1", a + " * " + b};
  if (isa<arith::MaximumFOp>(combiner))
    return {"-" + inf, nanPropagatingMinMax(true, a, b)};
  if (isa<arith::MinimumFOp>(combiner))
    return {inf, nanPropagatingMinMax(false, a, b)};
  return {};
}

std::string GeneratedKernelEmitter::decodeIndices(ArrayRef<unsigned> dims,
                                                  StringRef var, bool narrow,
                                                  StringRef indent) const {
  std::string out;
  if (dims.empty())
    return out;
  llvm::raw_string_ostream os(out);
  const char *suffix = narrow ? "u" : "LL";
  os << indent << (narrow ? "unsigned rem = (unsigned)" : "long long rem = ")
     << var << ";\n";
  for (int k = (int)dims.size() - 1; k >= 0; --k) {
    unsigned d = dims[k];
    if (k == 0)
      os << indent << "const long long i" << d << " = rem;\n";
    else
      os << indent << "const long long i" << d << " = rem % " << loopSizes[d]
         << suffix << "; rem /= " << loopSizes[d] << suffix << ";\n";
  }
  return out;
}

void GeneratedKernelEmitter::emitCooperativeReduction(
    KernelCode &code, ArrayRef<unsigned> parallel, ArrayRef<unsigned> reduction,
    ArrayRef<AffineMap> maps, const std::string &inner,
    const std::string &stores) {
  int64_t trips = 1;
  for (unsigned d : reduction)
    trips *= loopSizes[d];
  const int64_t outputs = code.numThreads;
  if (!reduction.empty())
    code.serialReductionSteps = trips; // until the split below succeeds
  if (reduction.empty() || trips <= 32 || outputs <= 0)
    return;
  // Every output must be updated only by `acc = combine(acc, x)` with a
  // combiner that is associative, so that partial results over slices of
  // the reduction combine into the whole; anything else stays serial.
  Block &block = op.getBody().front();
  auto yield = cast<exec::YieldOp>(block.getTerminator());
  unsigned numInputs = op.getInputs().size();
  SmallVector<Operation *> combinerOps;
  for (unsigned o = 0; o < accTypes.size(); ++o) {
    BlockArgument acc = block.getArgument(numInputs + o);
    if (!acc.hasOneUse() || accInits[o].empty())
      return;
    Operation *user = *acc.getUsers().begin();
    if (user->getNumOperands() != 2 ||
        user->getOperand(0) == user->getOperand(1) ||
        !user->getResult(0).hasOneUse() ||
        *user->getResult(0).getUsers().begin() != yield.getOperation() ||
        yield.getValues()[o] != user->getResult(0))
      return;
    if (combinerOf(user, accTypes[o], "a", "b").first.empty())
      return;
    combinerOps.push_back(user);
  }
  // Rows or columns: when the innermost reduction loop walks the last
  // (contiguous) axis of the first input that reads it, consecutive lanes
  // take consecutive reduction steps of one output (a row reduction: S
  // lanes per output, W outputs per block); otherwise consecutive lanes
  // take consecutive outputs (a column reduction: W = 32) and the S thread
  // rows of the block split the reduction. Either way a warp's loads are
  // coalesced.
  unsigned last = reduction.back();
  bool rowReduction = false;
  for (unsigned i = 0; i < numInputs; ++i)
    if (maps[i].isFunctionOfDim(last)) {
      auto dim = dyn_cast<AffineDimExpr>(maps[i].getResults().back());
      rowReduction = dim && dim.getPosition() == last;
      break;
    }
  int64_t lanes = 1; // S: threads sharing one output
  if (rowReduction) {
    while (lanes < trips && lanes < 256)
      lanes *= 2;
  } else {
    while (lanes * 16 < trips && lanes < 32)
      lanes *= 2;
    lanes = std::max<int64_t>(lanes, 8);
  }
  const int64_t width = rowReduction ? 256 / lanes : 32; // W
  code.blockSize = static_cast<int32_t>(width * lanes);
  code.numThreads = (outputs + width - 1) / width * code.blockSize;
  code.hostThreads = outputs;

  std::string out;
  llvm::raw_string_ostream cs(out);
  const bool narrowOut = outputs <= INT32_MAX, narrowT = trips <= INT32_MAX;
  cs << "  const int w = threadIdx.x % " << width << ", s = threadIdx.x / "
     << width << ";\n"
     << "  const long long out = (long long)blockIdx.x * " << width << " + w;\n"
     << "  const bool live = out < " << outputs << "LL;\n"
     << code.invariant;
  // Outputs live in accumulators; thread row 0 starts from the output's
  // initial value, the others from the combiner's identity.
  for (unsigned o = 0; o < accTypes.size(); ++o)
    cs << "  " << accTypes[o] << " acc" << o << " = "
       << combinerOf(combinerOps[o], accTypes[o], "a", "b").first << ";\n";
  cs << "  if (live) {\n" << decodeIndices(parallel, "out", narrowOut, "    ");
  for (unsigned o = 0; o < accTypes.size(); ++o)
    cs << "    if (s == 0) acc" << o << " = " << accInits[o] << ";\n";
  cs << "    for (long long t = s; t < " << trips << "LL; t += " << lanes
     << ") {\n"
     << decodeIndices(reduction, "t", narrowT, "      ") << inner << "    }\n"
     << "  }\n";
  // Partials through shared memory; thread row 0 combines them in row
  // order (a fixed order: the result does not depend on scheduling).
  for (unsigned o = 0; o < accTypes.size(); ++o)
    cs << "  __shared__ " << accTypes[o] << " dlc_part" << o << "["
       << code.blockSize << "];\n"
       << "  dlc_part" << o << "[threadIdx.x] = acc" << o << ";\n";
  cs << "  __syncthreads();\n"
     << "  if (!live || s != 0) return;\n"
     << decodeIndices(parallel, "out", narrowOut, "  ");
  for (unsigned o = 0; o < accTypes.size(); ++o) {
    auto c =
        combinerOf(combinerOps[o], accTypes[o], "acc" + std::to_string(o), "v");
    cs << "  for (int k = 1; k < " << lanes << "; ++k) { const " << accTypes[o]
       << " v = dlc_part" << o << "[k * " << width << " + w]; acc" << o << " = "
       << c.second << "; }\n";
  }
  cs << stores;
  // The host keeps its serial loop nest (loopBody): the two targets differ
  // in the order of the sum's terms, as they do inside a GEMM.
  code.cudaBody = std::move(out);
  code.serialReductionSteps = 0;
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
