//===- KernelEmitterCuda.cpp - CUDA forms of a generated kernel -----------===//
//
// The CUDA-only forms of a generated kernel: elementwise kernels as
// grid-stride loops over 128-bit vectors, and reductions longer than a warp
// combined by several threads per output through shared memory.
//
//===----------------------------------------------------------------------===//
#include "codegen/GeneratedKernel.h"
#include "dialects/Exec/KernelBodyOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

using namespace mlir;

namespace dlc::codegen::detail {

namespace {
/// How the element code of an elementwise kernel reads or writes each
/// operand, as a function of the flat element index e (row-major over the
/// loops).
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

/// The access of every operand of an elementwise kernel and the vectors it
/// is read and written in.
struct ElementwiseLayout {
  SmallVector<Access> access;
  /// Per Contiguous operand: the constant added to the last loop.
  SmallVector<int64_t> lastOffset;
  /// The widest element, in bytes, of the operands the element code uses.
  int64_t widest = 1;
  /// Elements per vector: 128 bits of the widest operand.
  int64_t width = 1;
  /// Whether the loop indices are decoded from e.
  bool decode = false;
  /// Whether the kernel runs over vectors, and per operand whether it is
  /// accessed as vectors.
  bool vectorize = false;
  SmallVector<bool> vec;
};
} // namespace

static int64_t bytesOf(Type t) {
  return std::max<int64_t>(1, t.getIntOrFloatBitWidth() / 8);
}

/// Fills |layout|'s access, lastOffset and widest for the operands of
/// |op| (loops of |rank|; |loadedInputs| says which inputs the element
/// code loads).
static void classifyAccess(exec::KernelOp op, unsigned rank,
                           ArrayRef<AffineMap> maps, ArrayRef<Type> elemTypes,
                           ArrayRef<bool> loadedInputs,
                           ElementwiseLayout &layout) {
  const unsigned numInputs = op.getInputs().size();
  const unsigned numOperands = op->getNumOperands();
  const unsigned last = rank - 1;
  SmallVector<Access> &access = layout.access;
  SmallVector<int64_t> &lastOffset = layout.lastOffset;
  access.assign(numOperands, Access::None);
  lastOffset.assign(numOperands, 0);
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

  layout.widest = widest;
}

/// Fills |layout|'s width, decode, vectorize and vec for |op|, an
/// elementwise kernel of |n| elements whose last loop has |lastSize|;
/// |usesIndex| says whether its body reads a loop index.
static void chooseVectors(exec::KernelOp op, int64_t n, int64_t lastSize,
                          bool usesIndex, ArrayRef<Type> elemTypes,
                          ElementwiseLayout &layout) {
  auto operands = op->getOperands();
  const unsigned numInputs = op.getInputs().size();
  const unsigned numOperands = operands.size();
  ArrayRef<Access> access = layout.access;
  ArrayRef<int64_t> lastOffset = layout.lastOffset;
  const int64_t widest = layout.widest;
  // 128 bits of the widest operand per vector. A vector covers elements
  // [e, e + V) of one row (V divides the last loop), or of the flat index
  // space when every operand is read at e and no index is decoded.
  const int64_t width = layout.width = 16 / widest;
  bool allFlat = llvm::all_of(
      access, [](Access a) { return a == Access::None || a == Access::Flat; });
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
      aligned &=
          type.getShape().back() % width == 0 && lastOffset[i] % width == 0;
    }
    vec[i] = aligned;
  }
  for (unsigned o = numInputs; vectorize && o < numOperands; ++o)
    vectorize = vec[o]; // every store a vector store
  if (!vectorize)
    vec.assign(numOperands, false);
  layout.decode = decode;
  layout.vectorize = vectorize;
  layout.vec = std::move(vec);
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

  ElementwiseLayout layout;
  classifyAccess(op, rank, maps, elemTypes, loadedInputs, layout);
  chooseVectors(op, n, lastSize, usesIndex, elemTypes, layout);
  ArrayRef<Access> access = layout.access;
  ArrayRef<bool> vec = layout.vec;
  const int64_t width = layout.width;
  const bool decode = layout.decode, vectorize = layout.vectorize;

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
        t += in + "const " + valueTypes[i] + " x" + std::to_string(i) + " = " +
             load(i, ref(i)) + ";\n";
    for (StringRef line : llvm::split(StringRef(ops).rtrim('\n'), '\n'))
      if (!line.empty())
        t +=
            in + line.drop_front(std::min<size_t>(2, line.size())).str() + "\n";
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
             std::to_string(loopSizes[d]) +
             "u); dlc_rem /= " + std::to_string(loopSizes[d]) + "u;\n";
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
    t += element(
        [&](unsigned i) {
          return "a" + std::to_string(i) + "[" +
                 (access[i] == Access::Flat
                      ? std::string("dlc_e")
                      : offset(i, "i" + std::to_string(last))) +
                 "]";
        },
        "    ");
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
        cs << "    " << t << " " << name("w", i) << " = *(const " << t << " *)("
           << a << " + " << off << ");\n";
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
  std::string elem = element(
      [&](unsigned i) -> std::string {
        if (vec[i])
          return (i < numInputs ? name("r", i) : name("w", i)) + ".v[dlc_j]";
        if (access[i] == Access::Splat)
          return name("s", i);
        if (access[i] == Access::Flat)
          return name("a", i) + "[dlc_e + dlc_j]";
        return name("a", i) + "[" + offset(i, lastName) + "]";
      },
      "      ");
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

} // namespace dlc::codegen::detail
