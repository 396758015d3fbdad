//===- GeneratedKernel.h - the emitter of generated kernel bodies -*- C++
//-*-===//
//
// Private to codegen/: the class that prints one dlexec.kernel body as C
// (KernelEmitter.cpp: operands, loops, accumulators; KernelEmitterOps.cpp:
// one body op; KernelEmitterCuda.cpp: the CUDA grid-stride and cooperative
// forms) and the C-expression helpers those files share.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CODEGEN_GENERATEDKERNEL_H
#define DLC_CODEGEN_GENERATEDKERNEL_H

#include "codegen/KernelCode.h"

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace dlc::codegen::detail {

/// "f16" or "bf16", the suffix of the conversion helpers of |type|.
std::string halfName(mlir::Type type);

/// The C literal of a typed scalar attribute (arith.constant value or `init`).
mlir::FailureOr<std::string> attrLiteral(mlir::Attribute attr, mlir::Type type);

/// Names loop |d| in C: `i<d>` unless a caller renames it.
using DimNamer = llvm::function_ref<std::string(unsigned)>;
std::string plainDimName(unsigned d);

/// C expression of an affine expression over loop indices `i<d>` (or the
/// names |dimName| gives). Constants are `long long` literals, or plain
/// `int` ones when |narrow| (every index and offset fits in 32 bits).
mlir::FailureOr<std::string> affineToC(mlir::AffineExpr expr,
                                       bool narrow = false,
                                       DimNamer dimName = plainDimName);

/// C for arith.maximumf / minimumf of |a| and |b| (|max| picks which):
/// NaN-propagating, as the ops are.
std::string nanPropagatingMinMax(bool max, const std::string &a,
                                 const std::string &b);

/// Prints the body of one dlexec.kernel.
class GeneratedKernelEmitter {
public:
  explicit GeneratedKernelEmitter(exec::KernelOp op)
      : op(op), os(body), invOs(invariantBody) {}

  mlir::FailureOr<KernelCode> emit();

private:
  mlir::LogicalResult computeLoopSizes();
  /// The steps of emit(), in order. Fills elemTypes, valueTypes and the
  /// parameter types of |code|.
  mlir::LogicalResult collectOperandTypes(KernelCode &code);
  /// Fills rawOperands.
  void findCopyOnlyOperands(const KernelCode &code);
  /// Fills promoted, promotedAdds and halfAccumulates.
  void findAccumulatorUpdates();
  /// Declares the output accumulators; fills accTypes, accInits,
  /// accInitLoads.
  mlir::LogicalResult emitAccumulators(const std::string &in);
  /// Loads the inputs of one element; fills loadedInputs.
  void emitInputLoads(const std::string &in);
  /// The body ops and the accumulator updates of one element.
  mlir::LogicalResult emitElementUpdate(const std::string &in);
  /// The stores of the accumulators and the epilogue.
  mlir::FailureOr<std::string> emitStores(const std::string &in);
  /// The expression loading operand |i| at |ref| (as stored for a
  /// rawOperand).
  std::string loadOperand(unsigned i, const std::string &ref);
  mlir::FailureOr<std::string> offsetOf(unsigned operand, mlir::AffineMap map,
                                        bool narrow = false,
                                        DimNamer dimName = plainDimName);
  /// Replaces the CUDA body of a kernel without reduction loops whose
  /// indices fit in 32 bits with grid-stride loops (KernelCode::cudaLoops),
  /// over 128-bit vectors where every operand allows (see the definition).
  /// |accInitLoads| says which outputs read their old value, |loadedInputs|
  /// which inputs the element code loads, |ops| is the element code between
  /// the loads and the stores, |load| the load expression of an operand.
  void emitElementwiseCuda(
      KernelCode &code, llvm::ArrayRef<mlir::AffineMap> maps,
      llvm::ArrayRef<mlir::Type> elemTypes,
      llvm::ArrayRef<std::string> valueTypes, llvm::ArrayRef<bool> accInitLoads,
      llvm::ArrayRef<bool> loadedInputs, const std::string &ops,
      llvm::function_ref<std::string(unsigned, const std::string &)> load,
      llvm::function_ref<std::string(unsigned, const std::string &)> store);
  /// The C expression of |bodyOp| if it is a constant, a loop index,
  /// integer or float arithmetic, a bitcast, a comparison or a select; empty
  /// if it is none of those. |cType| is the C type of its result.
  mlir::FailureOr<std::string> arithmeticExpr(mlir::Operation *bodyOp,
                                              llvm::ArrayRef<std::string> args,
                                              const std::string &cType) const;
  /// The C expression of |bodyOp| if it is a conversion or a math function;
  /// empty if it is neither. Sets |roundedHalf| where the expression already
  /// holds a value rounded to the 2-byte result type.
  mlir::FailureOr<std::string>
  conversionOrMathExpr(mlir::Operation *bodyOp,
                       llvm::ArrayRef<std::string> args,
                       const std::string &cType, bool &roundedHalf) const;
  mlir::LogicalResult emitBodyOp(mlir::Operation *bodyOp,
                                 const std::string &indent);
  /// The C statements of the epilogue region, run where the reduced values
  /// have just been stored (parallel indices `i<d>` in scope): each reduced
  /// output is read back as stored, so the epilogue sees exactly the values
  /// a separate kernel would load; the epilogue outputs are then stored.
  mlir::FailureOr<std::string> emitEpilogue(
      llvm::ArrayRef<std::string> offsets, llvm::ArrayRef<mlir::Type> elemTypes,
      llvm::ArrayRef<std::string> valueTypes, const std::string &indent);
  mlir::FailureOr<std::string> nameOf(mlir::Value v, mlir::Operation *user);
  std::string fresh() { return "v" + std::to_string(counter++); }
  /// C statements declaring `const long long i<d>` for each loop of |dims|
  /// (outermost first, the last fastest) from the flat index |var|, each
  /// line indented by |indent|; 32-bit arithmetic when |narrow|.
  std::string decodeIndices(llvm::ArrayRef<unsigned> dims, llvm::StringRef var,
                            bool narrow, llvm::StringRef indent) const;
  /// Adds the CUDA form of a reduction longer than a warp: several threads
  /// per output, each combining a strided slice of the reduction, their
  /// partials combined through shared memory (KernelCode::cudaBody). Leaves
  /// |code| serial where an output's update is not a recognised associative
  /// combiner.
  void emitCooperativeReduction(KernelCode &code,
                                llvm::ArrayRef<unsigned> parallel,
                                llvm::ArrayRef<unsigned> reduction,
                                llvm::ArrayRef<mlir::AffineMap> maps,
                                const std::string &inner,
                                const std::string &stores);

  exec::KernelOp op;
  std::string body;
  llvm::raw_string_ostream os;
  /// Statements that read no loop index, printed before every loop.
  std::string invariantBody;
  llvm::raw_string_ostream invOs;
  /// Values computed in invariantBody.
  llvm::DenseSet<mlir::Value> invariantValues;
  std::vector<int64_t> loopSizes;
  llvm::DenseMap<mlir::Value, std::string> names;
  /// f32 sums accumulated in double: the arith.addf of each such output.
  llvm::DenseMap<mlir::Operation *, unsigned> promotedAdds;
  /// The ops that update an f16 / bf16 reduction accumulator (they read it
  /// and their only use is its yield): computed in float and not rounded,
  /// so that the accumulator is rounded once, when it is stored.
  llvm::DenseSet<mlir::Operation *> halfAccumulates;
  /// Per output: the C type of its accumulator and its initial value.
  std::vector<std::string> accTypes, accInits;

  // What emit() learns about the kernel, step by step.
  unsigned numInputs = 0;
  /// Per operand: its element type and the C type its values compute in.
  llvm::SmallVector<mlir::Type> elemTypes;
  llvm::SmallVector<std::string> valueTypes;
  /// Operands read and written as stored (a copy-only kernel).
  llvm::DenseSet<unsigned> rawOperands;
  llvm::SmallVector<unsigned> parallel, reduction;
  llvm::SmallVector<mlir::AffineMap> maps;
  /// Per operand: the C offset expression of the element it accesses.
  llvm::SmallVector<std::string> offsets;
  /// Per accumulator: whether it is an f32 sum accumulated in double.
  std::vector<bool> promoted;
  /// For emitElementwiseCuda: the outputs whose accumulator starts from the
  /// stored value, the inputs the element code loads.
  llvm::SmallVector<bool> accInitLoads, loadedInputs;
  int counter = 0;
};

} // namespace dlc::codegen::detail

#endif // DLC_CODEGEN_GENERATEDKERNEL_H
