//===- FuncLowering.h - shared state of the per-family dlexec lowerings ---===//
// Internal to dlgraph-lower-to-dlexec: the per-function lowering state
// (buffers, splat constants, variable writes), the kernel builders every op
// family uses, and the table through which each family registers its ops.
#ifndef DLC_COMPILER_LOWERING_TOEXEC_FUNCLOWERING_H
#define DLC_COMPILER_LOWERING_TOEXEC_FUNCLOWERING_H

#include "compiler/Conversion/GraphToExec/Passes.h"

#include "dialects/Graph/GraphAttributes.h"
#include "dialects/Graph/GraphOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/Support/TypeID.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#include <functional>
#include <string>
#include <utility>

namespace dlc::lowering {

class FuncLowering;

/// The lowering of each dlgraph op kind (keyed by the op's TypeID); every op
/// family adds its ops through one `populateLowerToExec<Family>` function.
class LoweringTable {
public:
  /// Lowers one op: defines the buffers of its results in the FuncLowering
  /// (or records them as splats, writes or results), or emits an error at
  /// the op and fails.
  using Handler =
      std::function<mlir::LogicalResult(FuncLowering &, mlir::Operation *)>;

  /// Registers |fn|, called as `fn(FuncLowering &, OpT)`, for each of OpTs.
  template <typename... OpTs, typename Fn> void add(Fn fn) {
    (insert(mlir::TypeID::get<OpTs>(),
            [fn](FuncLowering &fl, mlir::Operation *op) {
              return fn(fl, mlir::cast<OpTs>(op));
            }),
     ...);
  }

  /// The handler registered for |op|'s kind, or null when there is none.
  const Handler *lookup(mlir::Operation *op) const;
  /// Whether a lowering is registered for the op kind |id| (what the
  /// op-coverage test asks).
  bool contains(mlir::TypeID id) const { return handlers.count(id); }

private:
  void insert(mlir::TypeID id, Handler handler);

  llvm::DenseMap<mlir::TypeID, Handler> handlers;
};

/// Registers every dlgraph op that dlgraph-lower-to-dlexec lowers.
void populateLowerToExecTable(LoweringTable &table);

// One registration per op family (ToExec/<Family>.cpp).
void populateLowerToExecVariables(LoweringTable &table);
void populateLowerToExecElementwise(LoweringTable &table);
void populateLowerToExecNormalization(LoweringTable &table);
void populateLowerToExecLinear(LoweringTable &table);
void populateLowerToExecConv(LoweringTable &table);
void populateLowerToExecPool(LoweringTable &table);
void populateLowerToExecReductions(LoweringTable &table);
void populateLowerToExecDataMovement(LoweringTable &table);
void populateLowerToExecLosses(LoweringTable &table);
void populateLowerToExecRandom(LoweringTable &table);
void populateLowerToExecOptimizers(LoweringTable &table);
void populateLowerToExecCollectives(LoweringTable &table);
void populateLowerToExecAttention(LoweringTable &table);

/// The memref type of ranked tensor type |t| (same shape and element type).
mlir::MemRefType toMemRef(mlir::Type t);

/// The ranked tensor type of |v|.
mlir::RankedTensorType tensorType(mlir::Value v);

/// The value of an f32 attribute as the shortest decimal that round-trips
/// (0.9f -> 0.9), so that derived constants such as 1 - beta1 are computed
/// the way PyTorch computes them from the Python float.
double decimalValue(mlir::FloatAttr a);

/// An arith.constant of float type |t| holding |v|.
mlir::Value constF(mlir::OpBuilder &b, mlir::Location loc, mlir::Type t,
                   double v);

/// The element kinds the scalar bodies distinguish.
enum class ElemKind { Float, Int, Bool, Other };

/// The kind of element type |t| (i1 is Bool, other integers Int).
ElemKind kindOf(mlir::Type t);

/// Converts scalar |v| to |to| with ONNX Cast semantics; null if unsupported.
mlir::Value castScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                       mlir::Type to);

/// Whether |perm| swaps the last two dims and keeps the others in place
/// ([1, 0], [0, 1, 3, 2], ...): a transpose of each matrix of a contiguous
/// batch of row-major matrices.
bool swapsLastTwoDims(llvm::ArrayRef<int64_t> perm);

/// Whether the lowering of |mm| (Linear.cpp) reads its operand |operand|
/// (0: lhs, 1: rhs) through the trans_a / trans_b flag of its
/// `batched_gemm` when that operand is a dlgraph.transpose with
/// swapsLastTwoDims: true when the matmul lowers to a batched_gemm (a rhs of
/// rank >= 3) and the operand is such a transpose. The transpose lowering
/// (DataMovement.cpp) then writes no copy when every reader absorbs it.
bool matmulAbsorbsTranspose(graph::MatMulOp mm, unsigned operand);

/// Lowers a reduction of |input| over |axes| (`kind` is sum, mean, max or
/// prod) to one kernel defining the buffer of |op|'s only result; float
/// tensors only (an error at |op| otherwise).
mlir::LogicalResult lowerReduction(FuncLowering &fl, mlir::Operation *op,
                                   mlir::Value input,
                                   llvm::ArrayRef<int64_t> axes, bool keepdims,
                                   llvm::StringRef kind);

/// One kernel operand: a buffer read through |map|, or a splat constant that
/// is materialized inside the kernel body.
struct KIn {
  mlir::Value buffer;
  mlir::TypedAttr scalar;
  mlir::AffineMap map;
};

/// Builds a kernel body: the scalar values of the inputs (|ins|, in KIn
/// order) and of the outputs (|outs|, the accumulators of reductions) to the
/// yielded output values.
using BodyFn = llvm::function_ref<llvm::SmallVector<mlir::Value>(
    mlir::OpBuilder &, mlir::Location, llvm::ArrayRef<mlir::Value> ins,
    llvm::ArrayRef<mlir::Value> outs)>;

/// Lowers one func.func to one dlexec.func. The op families read and extend
/// its state: `buffers` maps each lowered dlgraph value to the memref that
/// holds it, `splats` the splat constants not (yet) materialized, `writes`
/// the variable writes and `results` the function results, both finished
/// after the last op.
class FuncLowering {
public:
  FuncLowering(mlir::ModuleOp module, mlir::func::FuncOp src, exec::FuncOp dst,
               llvm::StringSet<> &symbols, const LoweringTable &table)
      : module(module), src(src), dst(dst), b(dst.getContext()),
        symbols(symbols), table(table) {}

  /// Lowers the body of `src` into `dst`; emits an error and fails at the
  /// first op that has no lowering.
  mlir::LogicalResult run();

  /// A fresh kernel symbol: `<func>_k<counter>_<what>`.
  std::string nextKernelName(llvm::StringRef what) {
    return (dst.getSymName() + "_k" + llvm::Twine(counter++) + "_" + what)
        .str();
  }
  /// |base|, or |base|_<i> for the first i that no symbol of the module uses.
  std::string uniqueSymbol(llvm::StringRef base) {
    std::string name = base.str();
    for (int i = 0; symbols.contains(name); ++i)
      name = (base + "_" + llvm::Twine(i)).str();
    symbols.insert(name);
    return name;
  }

  /// The buffer of |v|; a splat constant becomes a constant variable here.
  mlir::Value getBuffer(mlir::Value v, mlir::Location loc);
  /// A new dlexec.alloc of the memref type of tensor type |tensorTy|.
  mlir::Value alloc(mlir::Type tensorTy, mlir::Location loc) {
    return exec::AllocOp::create(b, loc, toMemRef(tensorTy),
                                 mlir::IntegerAttr())
        .getResult();
  }
  /// |v| as a kernel input over loops of shape |loopShape| (broadcasting).
  KIn kernelInput(mlir::Value v, llvm::ArrayRef<int64_t> loopShape,
                  mlir::Location loc);
  /// A dlexec.kernel named after |what| over |numLoops| loops (all parallel
  /// when |iters| is empty) whose body |body| builds.
  exec::KernelOp buildKernel(mlir::Location loc, llvm::StringRef what,
                             unsigned numLoops, llvm::ArrayRef<KIn> ins,
                             llvm::ArrayRef<mlir::Value> outs,
                             llvm::ArrayRef<mlir::AffineMap> outMaps,
                             llvm::ArrayRef<llvm::StringRef> iters,
                             mlir::ArrayAttr init, BodyFn body);
  /// An all-parallel kernel over the result's shape reading |operands| with
  /// broadcasting; defines the buffer of |op|'s only result.
  void elementwise(mlir::Operation *op, mlir::ValueRange operands, BodyFn body);
  /// A dlexec.builtin_kernel of template |tmpl| reading |ins| into a new
  /// buffer for |op|'s only result; copies |op|'s attributes named in
  /// |attrNames| (a unit attribute as `true`).
  exec::BuiltinKernelOp builtin(mlir::Operation *op, llvm::StringRef tmpl,
                                llvm::ArrayRef<mlir::Value> ins,
                                llvm::ArrayRef<llvm::StringRef> attrNames);

  /// Emits "cannot lower '<op>': <why>" at |op| and fails.
  mlir::LogicalResult unsupported(mlir::Operation *op, const llvm::Twine &why);
  /// Fails with an error at |op| unless |v| has a float element type.
  mlir::LogicalResult checkFloat(mlir::Operation *op, mlir::Value v);

  mlir::ModuleOp module;
  mlir::func::FuncOp src;
  exec::FuncOp dst;
  mlir::OpBuilder b;
  llvm::DenseMap<mlir::Value, mlir::Value> buffers;
  llvm::DenseMap<mlir::Value, mlir::TypedAttr> splats;
  llvm::SmallVector<std::pair<mlir::StringAttr, mlir::Value>> writes;
  llvm::SmallVector<std::pair<std::string, mlir::Value>> results;
  /// Values whose buffer an asynchronous collective is writing (dlgraph
  /// value -> the dlexec buffer it was issued on): run() waits for it before
  /// the first op that reads the value (views of it stay in flight), and at
  /// the end of the function.
  llvm::DenseMap<mlir::Value, mlir::Value> inFlight;
  /// Concatenations written in place (DataMovement.cpp): each dlgraph.concat
  /// lowered or looked at so far -> its family's root and the root's input
  /// at which its run starts; and the (root, input) slots already copied.
  llvm::DenseMap<mlir::Operation *, std::pair<mlir::Operation *, int64_t>>
      concatRoots;
  llvm::DenseSet<std::pair<mlir::Operation *, int64_t>> concatSlotsWritten;
  /// Last-two-dims transposes left unmaterialized (DataMovement.cpp): each
  /// dlgraph.transpose result that every reader reads through a
  /// batched_gemm's trans flag (matmulAbsorbsTranspose) -> the buffer of
  /// the transpose's input, an activation written once (contiguous).
  llvm::DenseMap<mlir::Value, mlir::Value> transposedSources;

private:
  mlir::LogicalResult lowerOp(mlir::Operation *op);
  mlir::LogicalResult finishWrites();

  llvm::StringSet<> &symbols;
  const LoweringTable &table;
  int counter = 0;
};

} // namespace dlc::lowering

#endif
