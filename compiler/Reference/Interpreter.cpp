//===- Interpreter.cpp - double-precision reference evaluator for dlgraph -===//
// Interpreter::create and Interpreter::run: run walks the function's body and
// evaluates each op through the EvalTable that the op families
// (<Family>.cpp) fill.
#include "compiler/Reference/Interpreter.h"
#include "compiler/Reference/Evaluators.h"

#include "dialects/Graph/GraphOps.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::reference;

Tensor::Tensor(std::vector<int64_t> s, double fill) : shape(std::move(s)) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  data.assign(n, fill);
}

namespace {

/// Every op family's evaluation functions, registered once.
const EvalTable &evalTable() {
  static const EvalTable table = [] {
    EvalTable t;
    populateReferenceVariables(t);
    populateReferenceElementwise(t);
    populateReferenceNormalization(t);
    populateReferenceLinear(t);
    populateReferenceConv(t);
    populateReferencePool(t);
    populateReferenceReductions(t);
    populateReferenceDataMovement(t);
    populateReferenceLosses(t);
    populateReferenceRandom(t);
    populateReferenceOptimizers(t);
    populateReferenceAttention(t);
    return t;
  }();
  return table;
}

} // namespace

bool Interpreter::canEvaluate(TypeID opKind) {
  return evalTable().contains(opKind);
}

FailureOr<Interpreter> Interpreter::create(ModuleOp module) {
  Interpreter interp;
  for (VariableOp var : module.getOps<VariableOp>()) {
    auto type = cast<RankedTensorType>(var.getType());
    Tensor t(
        std::vector<int64_t>(type.getShape().begin(), type.getShape().end()));
    if (auto init = var.getInitialValueAttr()) {
      auto dense = dyn_cast<DenseElementsAttr>(init);
      if (!dense)
        return var.emitError() << "reference interpreter needs a dense "
                                  "initial value";
      int64_t i = 0;
      if (isa<FloatType>(type.getElementType())) {
        for (APFloat v : dense.getValues<APFloat>())
          t.data[i++] = v.convertToDouble();
      } else {
        for (APInt v : dense.getValues<APInt>())
          t.data[i++] = (double)v.getSExtValue();
      }
    }
    interp.variables[var.getSymName().str()] = std::move(t);
  }
  return interp;
}

FailureOr<std::vector<Tensor>>
Interpreter::run(func::FuncOp func, const std::vector<Tensor> &args) {
  Frame frame(variables);
  Block &body = func.getBody().front();
  if (args.size() != body.getNumArguments())
    return func.emitError()
           << "reference interpreter got " << args.size()
           << " arguments, expected " << body.getNumArguments();
  for (auto [arg, t] : llvm::zip(body.getArguments(), args)) {
    if (t.shape != shapeOf(arg))
      return func.emitError() << "argument shape mismatch";
    frame.set(arg, t);
  }

  const EvalTable &table = evalTable();
  for (Operation &opRef : body) {
    Operation *op = &opRef;
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<Tensor> results;
      for (Value v : ret.getOperands())
        results.push_back(frame.get(v));
      for (auto &[name, t] : frame.writes)
        variables[name] = t;
      return results;
    }
    const EvalTable::Handler *evaluate = table.lookup(op);
    FailureOr<Tensor> r = failure();
    if (evaluate)
      r = (*evaluate)(frame, op);
    if (failed(r))
      return op->emitError() << "reference interpreter does not support '"
                             << op->getName() << "' in this form";
    if (op->getNumResults() > 0)
      frame.set(op->getResult(0), std::move(*r));
  }
  return func.emitError() << "function has no return";
}
