//===- GraphOps.td - dlgraph forward (ONNX-level) ops ------*- tablegen -*-===//
#ifndef DLC_DIALECT_GRAPH_OPS_TD
#define DLC_DIALECT_GRAPH_OPS_TD

include "dialects/Graph/GraphBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Variables: parameters, optimizer state, BatchNorm running statistics.
//===----------------------------------------------------------------------===//

def Graph_VariableOp : Graph_Op<"variable", [Symbol]> {
  let summary = "A persistent tensor (parameter, optimizer state, running statistic)";
  let description = [{
    Declares a tensor that lives across steps. `initial_value` holds its
    initial contents (an ONNX initializer); without one it starts as zeros.
    `trainable` marks parameters that the optimizer updates.

    ```mlir
    dlgraph.variable @fc1.weight : tensor<128x784xf32> = dense<0.1> {trainable}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeAttrOf<AnyRankedTensor>:$type,
                       OptionalAttr<ElementsAttr>:$initial_value,
                       UnitAttr:$trainable);
  let assemblyFormat = "$sym_name `:` $type (`=` $initial_value^)? attr-dict";
  let hasVerifier = 1;
}

def Graph_ReadVariableOp : Graph_Op<"read_variable",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     MemoryEffects<[MemRead]>]> {
  let summary = "Reads the current value of a variable";
  let description = [{
    ```mlir
    %w = dlgraph.read_variable @fc1.weight : tensor<128x784xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$variable);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$variable attr-dict `:` type($result)";
}

def Graph_WriteVariableOp : Graph_Op<"write_variable",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     MemoryEffects<[MemWrite]>]> {
  let summary = "Sets the value a variable has after the step";
  let description = [{
    All reads in a function see the value from before the step; writes take
    effect at the end of the step (so an optimizer update may read and write
    the same variable).

    ```mlir
    dlgraph.write_variable @fc1.weight, %new : tensor<128x784xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$variable, AnyRankedTensor:$value);
  let assemblyFormat = "$variable `,` $value attr-dict `:` type($value)";
}

//===----------------------------------------------------------------------===//
// Constants and shape ops.
//===----------------------------------------------------------------------===//

def Graph_ConstantOp : Graph_Op<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "A constant tensor (ONNX Constant)";
  let description = [{
    ```mlir
    %c = dlgraph.constant dense<1.0> : tensor<4xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Graph_IdentityOp : Graph_Op<"identity", [Pure, SameOperandsAndResultType]> {
  let summary = "Returns its input (ONNX Identity, Dropout in inference)";
  let description = "`%y = dlgraph.identity %x : tensor<4xf32>`";
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
}

def Graph_ReshapeOp : Graph_Op<"reshape", [Pure]> {
  let summary = "Reshape to the static result type (ONNX Reshape, Flatten)";
  let description = [{
    The target shape is the result type; element counts must match.
    ```mlir
    %y = dlgraph.reshape %x : tensor<2x3x4xf32> to tensor<2x12xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_TransposeOp : Graph_Op<"transpose", [Pure]> {
  let summary = "Permutes dimensions (ONNX Transpose)";
  let description = [{
    `result.shape[i] = input.shape[perm[i]]`.
    ```mlir
    %y = dlgraph.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_BroadcastToOp : Graph_Op<"broadcast_to", [Pure]> {
  let summary = "Broadcasts to the result shape with NumPy rules (ONNX Expand)";
  let description = [{
    ```mlir
    %y = dlgraph.broadcast_to %x : tensor<1x4xf32> to tensor<8x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise ops.
//===----------------------------------------------------------------------===//

class Graph_UnaryOp<string mnemonic, string onnx, list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultType], traits)> {
  let summary = "Elementwise " # mnemonic # " (ONNX " # onnx # ")";
  let description = "`%y = dlgraph." # mnemonic # " %x : tensor<8xf32>`";
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Graph_ReluOp : Graph_UnaryOp<"relu", "Relu">;
def Graph_ExpOp : Graph_UnaryOp<"exp", "Exp">;
def Graph_LogOp : Graph_UnaryOp<"log", "Log">;
def Graph_NegOp : Graph_UnaryOp<"neg", "Neg">;
def Graph_SqrtOp : Graph_UnaryOp<"sqrt", "Sqrt">;
def Graph_RsqrtOp : Graph_UnaryOp<"rsqrt", "1/Sqrt">;
def Graph_TanhOp : Graph_UnaryOp<"tanh", "Tanh">;
def Graph_SigmoidOp : Graph_UnaryOp<"sigmoid", "Sigmoid">;
def Graph_ErfOp : Graph_UnaryOp<"erf", "Erf">;
def Graph_AbsOp : Graph_UnaryOp<"abs", "Abs">;

def Graph_ClipOp : Graph_Op<"clip", [Pure, SameOperandsAndResultType]> {
  let summary = "Clamps to [min, max] (ONNX Clip with constant bounds)";
  let description = [{
    ```mlir
    %y = dlgraph.clip %x {min = 0.0 : f32, max = 6.0 : f32} : tensor<8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, F32Attr:$min, F32Attr:$max);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

class Graph_BinaryOp<string mnemonic, string onnx>
    : Graph_Op<mnemonic, [Pure, ResultsBroadcastableShape,
                          SameOperandsAndResultElementType]> {
  let summary = "Elementwise " # mnemonic # " with NumPy broadcasting (ONNX " # onnx # ")";
  let description = [{
    ```mlir
    %z = dlgraph.}] # mnemonic # [{ %x, %y : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Graph_AddOp : Graph_BinaryOp<"add", "Add">;
def Graph_SubOp : Graph_BinaryOp<"sub", "Sub">;
def Graph_MulOp : Graph_BinaryOp<"mul", "Mul">;
def Graph_DivOp : Graph_BinaryOp<"div", "Div">;
def Graph_MaxOp : Graph_BinaryOp<"max", "Max">;
def Graph_MinOp : Graph_BinaryOp<"min", "Min">;
def Graph_PowOp : Graph_BinaryOp<"pow", "Pow">;

def Graph_SelectOp : Graph_Op<"select", [Pure]> {
  let summary = "Picks `on_true` where `condition` holds, else `on_false` (ONNX Where)";
  let description = [{
    Operands broadcast with NumPy rules.
    ```mlir
    %r = dlgraph.select %c, %a, %b : (tensor<8xi1>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$condition, AnyRankedTensor:$on_true,
                       AnyRankedTensor:$on_false);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$condition `,` $on_true `,` $on_false attr-dict `:` functional-type(operands, results)";
}

def Graph_CompareOp : Graph_Op<"compare", [Pure]> {
  let summary = "Elementwise comparison with broadcasting (ONNX Equal/Less/Greater)";
  let description = [{
    `predicate` is one of `eq`, `ne`, `lt`, `le`, `gt`, `ge`.
    ```mlir
    %c = dlgraph.compare gt, %x, %y : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
    ```
  }];
  let arguments = (ins StrAttr:$predicate, AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$predicate `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_CastOp : Graph_Op<"cast", [Pure]> {
  let summary = "Converts the element type (ONNX Cast)";
  let description = "`%y = dlgraph.cast %x : tensor<8xi64> to tensor<8xf32>`";
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
}

//===----------------------------------------------------------------------===//
// Linear algebra and convolution.
//===----------------------------------------------------------------------===//

def Graph_GemmOp : Graph_Op<"gemm", [Pure]> {
  let summary = "General matrix multiply Y = alpha*op(A)*op(B) + beta*C (ONNX Gemm)";
  let description = [{
    A and B are 2-D; op() transposes when `trans_a`/`trans_b` is set; C is
    optional and broadcasts to [M, N].
    ```mlir
    %y = dlgraph.gemm %a, %b, %c {trans_b = true} : (tensor<64x784xf32>, tensor<128x784xf32>, tensor<128xf32>) -> tensor<64x128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$a, AnyRankedTensor:$b,
                       Optional<AnyRankedTensor>:$c,
                       DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0">:$beta,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_b);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_MatMulOp : Graph_Op<"matmul", [Pure]> {
  let summary = "Matrix product with NumPy semantics (ONNX MatMul)";
  let description = [{
    ```mlir
    %y = dlgraph.matmul %a, %b : (tensor<64x32xf32>, tensor<32x10xf32>) -> tensor<64x10xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_ConvOp : Graph_Op<"conv", [Pure]> {
  let summary = "2-D convolution, NCHW input, OIHW filter (ONNX Conv)";
  let description = [{
    `pads` = [top, left, bottom, right]; `group` splits channels.
    ```mlir
    %y = dlgraph.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
           dilations = array<i64: 1, 1>, group = 1 : i64}
         : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<8x16x32x32xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$filter,
                       Optional<AnyRankedTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `,` $filter (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalization, pooling, softmax.
//===----------------------------------------------------------------------===//

def Graph_BatchNormOp : Graph_Op<"batch_norm", [Pure]> {
  let summary = "Batch normalization with given statistics (ONNX BatchNormalization, inference)";
  let description = [{
    y = scale * (x - mean) / sqrt(var + epsilon) + bias over channel axis 1.
    `momentum` is ONNX's (running = running * momentum + batch * (1 -
    momentum); PyTorch's momentum 0.1 is 0.9 here); it only matters when
    training turns this op into `batch_norm_training`.
    ```mlir
    %y = dlgraph.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f32}
         : (tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x16x4x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$scale,
                       AnyRankedTensor:$bias, AnyRankedTensor:$mean,
                       AnyRankedTensor:$variance,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon,
                       DefaultValuedAttr<F32Attr, "0.9">:$momentum);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `,` $scale `,` $bias `,` $mean `,` $variance attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_BatchNormTrainingOp : Graph_Op<"batch_norm_training", [Pure]> {
  let summary = "Batch normalization with batch statistics (ONNX BatchNormalization, training_mode=1)";
  let description = [{
    Normalizes with the mean and biased variance of the batch over all axes
    but 1, and returns them (`batch_mean`, `batch_var`) so running statistics
    can be updated.
    ```mlir
    %y, %m, %v = dlgraph.batch_norm_training %x, %s, %b {epsilon = 1.0e-05 : f32}
         : (tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$scale,
                       AnyRankedTensor:$bias,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  let results = (outs AnyRankedTensor:$result, AnyRankedTensor:$batch_mean,
                      AnyRankedTensor:$batch_var);
  let assemblyFormat = "$input `,` $scale `,` $bias attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

class Graph_PoolOp<string mnemonic, string onnx> : Graph_Op<mnemonic, [Pure]> {
  let summary = "2-D " # mnemonic # " over NCHW (ONNX " # onnx # ")";
  let description = [{
    `pads` = [top, left, bottom, right]; the output size uses floor, or ceil
    when `ceil_mode` is set.
    ```mlir
    %y = dlgraph.}] # mnemonic # [{ %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>,
           pads = array<i64: 0, 0, 0, 0>} : tensor<8x16x8x8xf32> -> tensor<8x16x4x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
                       UnitAttr:$ceil_mode, UnitAttr:$count_include_pad);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_MaxPoolOp : Graph_PoolOp<"max_pool", "MaxPool">;
def Graph_AveragePoolOp : Graph_PoolOp<"average_pool", "AveragePool">;

def Graph_GlobalAveragePoolOp : Graph_Op<"global_average_pool", [Pure]> {
  let summary = "Mean over all spatial axes, keeping them as size 1 (ONNX GlobalAveragePool)";
  let description = "`%y = dlgraph.global_average_pool %x : tensor<8x16x4x4xf32> -> tensor<8x16x1x1xf32>`";
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_SoftmaxOp : Graph_Op<"softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "Softmax along `axis` (ONNX Softmax, opset 13 semantics)";
  let description = "`%y = dlgraph.softmax %x {axis = 1 : i64} : tensor<8x10xf32>`";
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Graph_LogSoftmaxOp : Graph_Op<"log_softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "Log of softmax along `axis` (ONNX LogSoftmax, opset 13 semantics)";
  let description = "`%y = dlgraph.log_softmax %x {axis = 1 : i64} : tensor<8x10xf32>`";
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions.
//===----------------------------------------------------------------------===//

class Graph_ReduceOp<string mnemonic, string onnx> : Graph_Op<mnemonic, [Pure]> {
  let summary = "Reduces over `axes` (ONNX " # onnx # ")";
  let description = [{
    With `keepdims` the reduced axes stay as size 1.
    ```mlir
    %s = dlgraph.}] # mnemonic # [{ %x {axes = array<i64: 0>} : tensor<8x4xf32> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keepdims);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_ReduceSumOp : Graph_ReduceOp<"reduce_sum", "ReduceSum">;
def Graph_ReduceMeanOp : Graph_ReduceOp<"reduce_mean", "ReduceMean">;
def Graph_ReduceMaxOp : Graph_ReduceOp<"reduce_max", "ReduceMax">;

#endif // DLC_DIALECT_GRAPH_OPS_TD
