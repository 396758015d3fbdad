//===- Evaluators.h - shared state of the per-family evaluators -*- C++ -*-===//
// Internal to the reference interpreter: the state of one run (the Frame),
// the table through which each op family registers its evaluation
// functions, and the tensor index helpers several families use. Each family
// lives in <Family>.cpp, with the names of compiler/Conversion/GraphToExec.
#ifndef DLC_COMPILER_REFERENCE_EVALUATORS_H
#define DLC_COMPILER_REFERENCE_EVALUATORS_H

#include "compiler/Reference/Interpreter.h"

#include "runtime/schema/Semantics/Broadcast.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/TypeID.h"
#include "llvm/ADT/DenseMap.h"

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dlc::reference {

/// The state of one Interpreter::run: the value of every SSA value computed
/// so far, the interpreter's variables, and the variable writes that take
/// effect when the function returns.
class Frame {
public:
  explicit Frame(std::map<std::string, Tensor> &variables)
      : variables(variables) {}

  /// The value of |v|; an empty tensor (inserted) if it has none yet.
  const Tensor &get(mlir::Value v) { return env[v]; }
  /// Sets the value of |v| (an argument, or an op's result).
  void set(mlir::Value v, Tensor t) { env[v] = std::move(t); }

  /// The interpreter's variables, keyed by symbol name (read, not written,
  /// during the run).
  std::map<std::string, Tensor> &variables;
  /// The dlgraph.write_variable ops run so far (symbol name, value), in
  /// order; run() applies them at the return.
  std::vector<std::pair<std::string, Tensor>> writes;

private:
  llvm::DenseMap<mlir::Value, Tensor> env;
};

/// The evaluation function of each dlgraph op kind (keyed by the op's
/// TypeID); every op family adds its ops through one
/// `populateReference<Family>` function.
class EvalTable {
public:
  /// Evaluates one op on the values in the Frame: returns the value of its
  /// first result (an empty tensor for an op without results) after setting
  /// those of its other results in the Frame, or fails, without a
  /// diagnostic, on a form of the op the interpreter does not evaluate
  /// (run() reports it at the op).
  using Handler =
      std::function<mlir::FailureOr<Tensor>(Frame &, mlir::Operation *)>;

  /// Registers |fn|, called as `fn(Frame &, OpT)`, for each of OpTs.
  template <typename... OpTs, typename Fn> void add(Fn fn) {
    (insert(mlir::TypeID::get<OpTs>(),
            [fn](Frame &frame, mlir::Operation *op) -> mlir::FailureOr<Tensor> {
              return fn(frame, mlir::cast<OpTs>(op));
            }),
     ...);
  }

  /// The handler registered for |op|'s kind, or null when there is none.
  const Handler *lookup(mlir::Operation *op) const {
    auto it = handlers.find(op->getName().getTypeID());
    return it == handlers.end() ? nullptr : &it->second;
  }

  /// Whether a handler is registered for the op kind |id|.
  bool contains(mlir::TypeID id) const { return handlers.count(id); }

private:
  void insert(mlir::TypeID id, Handler handler) {
    handlers[id] = std::move(handler);
  }

  llvm::DenseMap<mlir::TypeID, Handler> handlers;
};

// One registration per op family (<Family>.cpp).
void populateReferenceVariables(EvalTable &table);
void populateReferenceElementwise(EvalTable &table);
void populateReferenceNormalization(EvalTable &table);
void populateReferenceLinear(EvalTable &table);
void populateReferenceConv(EvalTable &table);
void populateReferencePool(EvalTable &table);
void populateReferenceReductions(EvalTable &table);
void populateReferenceDataMovement(EvalTable &table);
void populateReferenceLosses(EvalTable &table);
void populateReferenceRandom(EvalTable &table);
void populateReferenceOptimizers(EvalTable &table);
void populateReferenceAttention(EvalTable &table);

/// The shape of ranked tensor value |v|.
inline std::vector<int64_t> shapeOf(mlir::Value v) {
  auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
  return std::vector<int64_t>(t.getShape().begin(), t.getShape().end());
}

/// The row-major strides (in elements) of |shape|.
inline std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = (int64_t)shape.size() - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// The multi-index |idx| of row-major linear index |lin| in |shape|.
inline void unravel(int64_t lin, const std::vector<int64_t> &shape,
                    std::vector<int64_t> &idx) {
  idx.resize(shape.size());
  for (int64_t i = (int64_t)shape.size() - 1; i >= 0; --i) {
    idx[i] = shape[i] ? lin % shape[i] : 0;
    lin = shape[i] ? lin / shape[i] : 0;
  }
}

/// The operand values mapN passes to its function, one per input.
using Vals = std::vector<double>;

/// Elementwise map over operands broadcast to |outShape|.
template <typename F>
Tensor mapN(const std::vector<int64_t> &outShape,
            const std::vector<const Tensor *> &ins, F f) {
  Tensor out(outShape);
  std::vector<int64_t> idx;
  std::vector<double> vals(ins.size());
  for (int64_t i = 0; i < out.numElements(); ++i) {
    unravel(i, outShape, idx);
    for (size_t k = 0; k < ins.size(); ++k)
      vals[k] =
          ins[k]
              ->data[dlc::semantics::broadcastSourceOffset(idx, ins[k]->shape)];
    out.data[i] = f(vals);
  }
  return out;
}

/// Reduction over |axes| producing |outShape| (keepdims or not).
template <typename Init, typename Step, typename Fin>
Tensor reduce(const Tensor &x, llvm::ArrayRef<int64_t> axes,
              const std::vector<int64_t> &outShape, Init init, Step step,
              Fin fin) {
  std::vector<bool> reduced(x.shape.size(), false);
  int64_t count = 1;
  for (int64_t a : axes) {
    reduced[a] = true;
    count *= x.shape[a];
  }
  std::vector<int64_t> kept;
  for (size_t i = 0; i < x.shape.size(); ++i)
    kept.push_back(reduced[i] ? 1 : x.shape[i]);
  Tensor acc(kept, init());
  std::vector<int64_t> idx;
  auto ks = stridesOf(kept);
  for (int64_t i = 0; i < x.numElements(); ++i) {
    unravel(i, x.shape, idx);
    int64_t o = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      o += (reduced[d] ? 0 : idx[d]) * ks[d];
    acc.data[o] = step(acc.data[o], x.data[i]);
  }
  for (double &v : acc.data)
    v = fin(v, count);
  acc.shape = outShape;
  return acc;
}

} // namespace dlc::reference

#endif // DLC_COMPILER_REFERENCE_EVALUATORS_H
