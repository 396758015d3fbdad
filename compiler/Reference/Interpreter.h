//===- Interpreter.h - double-precision reference evaluator for dlgraph -*- C++ -*-===//
#ifndef DLC_COMPILER_REFERENCE_INTERPRETER_H
#define DLC_COMPILER_REFERENCE_INTERPRETER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/TypeID.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dlc::reference {

/// A dense row-major tensor. Every element type (f32, f64, i64, i1) is held
/// as double: i64 class ids and i1 masks are exact up to 2^53.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;

  Tensor() = default;
  Tensor(std::vector<int64_t> shape, double fill = 0.0);
  int64_t numElements() const { return (int64_t)data.size(); }
};

/// Evaluates dlgraph functions in double precision, slowly and simply, as
/// the oracle for tests (autodiff against finite differences, lowering
/// against the graph). Variables live in `variables`, keyed by symbol name,
/// initialized from `initial_value` (or zeros); `dlgraph.write_variable`
/// takes effect when the function returns (the dlgraph semantics).
class Interpreter {
public:
  /// Reads the variables of |module|. Fails (with a diagnostic) on a
  /// variable whose initial value is not dense.
  static mlir::FailureOr<Interpreter> create(mlir::ModuleOp module);

  /// Runs |func| on |args| (one per argument, shapes must match) and returns
  /// its results. Fails with a diagnostic at an op it does not support.
  mlir::FailureOr<std::vector<Tensor>> run(mlir::func::FuncOp func,
                                           const std::vector<Tensor> &args);

  /// Whether run() evaluates ops of kind |opKind| (an op's
  /// `getName().getTypeID()`, or `TypeID::get<OpT>()`): whether an op family
  /// registers an evaluation function for it. run() may still refuse some
  /// forms of such an op (a non-dense dlgraph.constant); it handles
  /// func.return itself.
  static bool canEvaluate(mlir::TypeID opKind);

  std::map<std::string, Tensor> variables;
};

} // namespace dlc::reference

#endif // DLC_COMPILER_REFERENCE_INTERPRETER_H
