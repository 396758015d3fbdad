//===- DifferentiableOpInterface.td - reverse-mode rules ---*- tablegen -*-===//
// The op interface through which reverse-mode automatic differentiation asks
// a dlgraph op for its vector-Jacobian product.
#ifndef DLC_DIALECT_GRAPH_DIFFERENTIABLE_OP_INTERFACE_TD
#define DLC_DIALECT_GRAPH_DIFFERENTIABLE_OP_INTERFACE_TD

include "mlir/IR/OpBase.td"

def DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::dlc::graph";
  let description = [{
    An op that reverse-mode automatic differentiation can propagate gradients
    through. Its one method builds the op's vector-Jacobian product with
    dlgraph ops: given the gradient of the loss with respect to each result,
    the gradient with respect to each operand (the formulas follow PyTorch's
    autograd, `tools/autograd/derivatives.yaml`, so that compiled training
    matches torch numerically).

    Which operands get a gradient: every floating-point operand the result
    depends on differentiably. Integer operands (class labels, gather
    indices) and i1 operands (a select condition) get none, nor does the
    operand of a cast from an integer type; piecewise-constant ops (ceil,
    floor, round) give a zero gradient, as torch does.

    dlgraph ops implement it as external models, one file per op family,
    under `compiler/Training/Gradients/`, attached by
    `dlc::registerGradientInterfaceExternalModels`; an op without it stops
    differentiation with an error when it lies on a path from a trainable
    parameter to the loss.

    Example: for `%y = dlgraph.exp %x : tensor<4xf32>` with result gradient
    `%dy`, the rule builds `%dx = dlgraph.mul %dy, %y : tensor<4xf32>`.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds, with `builder` (whose insertion point is after every value the
        rule may use), the gradient of the loss with respect to each operand
        into `operandGrads`, given the gradient with respect to each result in
        `resultGrads`.

        `resultGrads` has one entry per result, each of exactly the result's
        type and never null: the reverse sweep passes a zero constant for a
        result that has no gradient (an integer result, e.g. dropout's i1
        mask, gets an integer zero that rules ignore).

        `operandGrads` is pre-sized to the operand count with every entry
        null; the rule sets an entry to a value of exactly that operand's
        type (broadcast operands are reduced with `dlgraph.reduce_sum` and
        reshaped), and leaves it null for an operand that has no gradient.

        Fails, after emitting an error at the op, when the rule cannot handle
        the op's form.
      }],
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::MutableArrayRef<::mlir::Value>":$operandGrads)>
  ];
}

#endif // DLC_DIALECT_GRAPH_DIFFERENTIABLE_OP_INTERFACE_TD
