//===- GraphOps.td - dlgraph forward (ONNX-level) ops ------*- tablegen -*-===//
#ifndef DLC_DIALECT_GRAPH_OPS_TD
#define DLC_DIALECT_GRAPH_OPS_TD

include "dialects/Graph/GraphBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Variables: parameters, optimizer state, BatchNorm running statistics.
//===----------------------------------------------------------------------===//

def Graph_VariableOp : Graph_Op<"variable", [Symbol, Graph_FollowsOperands,
    Graph_NotRecomputable]> {
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

// The result type is the variable's (a symbol lookup), so it is not inferred.
def Graph_ReadVariableOp : Graph_Op<"read_variable",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     MemoryEffects<[MemRead]>, Graph_FollowsOperands, Graph_RecomputeFree]> {
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
     MemoryEffects<[MemWrite]>, Graph_FollowsOperands, Graph_NotRecomputable]> {
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

// The result type is the value attribute's (inferred).
def Graph_ConstantOp : Graph_Op<"constant", [ConstantLike, Pure,
    Graph_InferType, Graph_FollowsOperands, Graph_RecomputeFree]> {
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

def Graph_IdentityOp : Graph_Op<"identity", [Pure, SameOperandsAndResultType,
    InferTypeOpInterface, Graph_Elementwise, Graph_FollowsOperands,
    Graph_RecomputeFree]> {
  let summary = "Returns its input (ONNX Identity, Dropout in inference)";
  let description = "`%y = dlgraph.identity %x : tensor<4xf32>`";
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
}

// The target shape is the result type, so it is not inferred.
def Graph_ReshapeOp : Graph_Op<"reshape", [Pure, Graph_FollowsOperands,
    Graph_RecomputeFree]> {
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

def Graph_TransposeOp : Graph_Op<"transpose", [Pure, Graph_InferType,
    Graph_FollowsOperands, Graph_RecomputeCheap, Graph_MovesElements]> {
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
  let hasFolder = 1;
}

// The target shape is the result type, so it is not inferred.
def Graph_BroadcastToOp : Graph_Op<"broadcast_to", [Pure,
    Graph_FollowsOperands, Graph_RecomputeCheap, Graph_MovesElements]> {
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
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise ops.
//===----------------------------------------------------------------------===//

// |precision|: Graph_KeepsF32 for the functions PyTorch autocast runs in
// float32 (exp, log, rsqrt, tan, asin, acos, sinh, cosh), else
// Graph_FollowsOperands.
class Graph_UnaryOp<string mnemonic, string onnx,
                    Trait precision = Graph_FollowsOperands,
                    list<Trait> extra = []>
    : Graph_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultType,
                          InferTypeOpInterface, Graph_Elementwise, precision,
                          Graph_RecomputeCheap], extra)> {
  let summary = "Elementwise " # mnemonic # " (ONNX " # onnx # ")";
  let description = "`%y = dlgraph." # mnemonic # " %x : tensor<8xf32>`";
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Graph_ReluOp : Graph_UnaryOp<"relu", "Relu">;
def Graph_ExpOp : Graph_UnaryOp<"exp", "Exp", Graph_KeepsF32>;
def Graph_LogOp : Graph_UnaryOp<"log", "Log", Graph_KeepsF32>;
def Graph_NegOp : Graph_UnaryOp<"neg", "Neg"> {
  let hasFolder = 1;
}
def Graph_SqrtOp : Graph_UnaryOp<"sqrt", "Sqrt">;
def Graph_RsqrtOp : Graph_UnaryOp<"rsqrt", "1/Sqrt", Graph_KeepsF32>;
def Graph_TanhOp : Graph_UnaryOp<"tanh", "Tanh">;
def Graph_SigmoidOp : Graph_UnaryOp<"sigmoid", "Sigmoid">;
def Graph_ErfOp : Graph_UnaryOp<"erf", "Erf">;
// Trigonometric and hyperbolic functions and their inverses (float).
def Graph_SinOp : Graph_UnaryOp<"sin", "Sin", Graph_FollowsOperands,
                                [Graph_Periodic]>;
def Graph_CosOp : Graph_UnaryOp<"cos", "Cos", Graph_FollowsOperands,
                                [Graph_Periodic]>;
def Graph_TanOp : Graph_UnaryOp<"tan", "Tan", Graph_KeepsF32>;
def Graph_AsinOp : Graph_UnaryOp<"asin", "Asin", Graph_KeepsF32>;
def Graph_AcosOp : Graph_UnaryOp<"acos", "Acos", Graph_KeepsF32>;
def Graph_AtanOp : Graph_UnaryOp<"atan", "Atan">;
def Graph_SinhOp : Graph_UnaryOp<"sinh", "Sinh", Graph_KeepsF32>;
def Graph_CoshOp : Graph_UnaryOp<"cosh", "Cosh", Graph_KeepsF32>;
def Graph_AsinhOp : Graph_UnaryOp<"asinh", "Asinh">;
def Graph_AcoshOp : Graph_UnaryOp<"acosh", "Acosh">;
def Graph_AtanhOp : Graph_UnaryOp<"atanh", "Atanh">;
def Graph_AbsOp : Graph_UnaryOp<"abs", "Abs"> {
  let hasFolder = 1;
}
def Graph_CeilOp : Graph_UnaryOp<"ceil", "Ceil">;
def Graph_FloorOp : Graph_UnaryOp<"floor", "Floor">;
/// Rounds half to even (ONNX Round, numpy.round).
def Graph_RoundOp : Graph_UnaryOp<"round", "Round">;

def Graph_ClipOp : Graph_Op<"clip", [Pure, SameOperandsAndResultType,
    InferTypeOpInterface, Graph_Elementwise, Graph_FollowsOperands,
    Graph_RecomputeCheap]> {
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

// |precision|: Graph_KeepsF32 for pow (float32 in PyTorch autocast), else
// Graph_FollowsOperands.
class Graph_BinaryOp<string mnemonic, string onnx,
                     Trait precision = Graph_FollowsOperands>
    : Graph_Op<mnemonic, [Pure, ResultsBroadcastableShape,
                          SameOperandsAndResultElementType, Graph_InferType,
                          Graph_Elementwise, precision, Graph_RecomputeCheap]> {
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

def Graph_AddOp : Graph_BinaryOp<"add", "Add"> {
  let hasFolder = 1;
}
def Graph_SubOp : Graph_BinaryOp<"sub", "Sub"> {
  let hasFolder = 1;
}
def Graph_MulOp : Graph_BinaryOp<"mul", "Mul"> {
  let hasFolder = 1;
}
def Graph_DivOp : Graph_BinaryOp<"div", "Div"> {
  let hasFolder = 1;
}
def Graph_MaxOp : Graph_BinaryOp<"max", "Max"> {
  let hasFolder = 1;
}
def Graph_MinOp : Graph_BinaryOp<"min", "Min"> {
  let hasFolder = 1;
}
def Graph_PowOp : Graph_BinaryOp<"pow", "Pow", Graph_KeepsF32>;
/// Remainder with the sign of the dividend, C fmod (ONNX Mod, fmod = 1).
def Graph_FmodOp : Graph_BinaryOp<"fmod", "Mod with fmod = 1"> {
  let hasFolder = 1;
}
/// Remainder with the sign of the divisor, Python % (ONNX Mod, fmod = 0).
def Graph_ModOp : Graph_BinaryOp<"mod", "Mod with fmod = 0"> {
  let hasFolder = 1;
}

// Bitwise ops on signless integers (i32, i64 from ONNX), two's complement.
class Graph_IntegerBinaryOp<string mnemonic, string onnx>
    : Graph_Op<mnemonic, [Pure, ResultsBroadcastableShape,
                          SameOperandsAndResultElementType, Graph_InferType,
                          Graph_Elementwise, Graph_FollowsOperands,
                          Graph_RecomputeCheap]> {
  let summary = "Elementwise integer " # mnemonic # " with NumPy broadcasting (ONNX " # onnx # ")";
  let description = [{
    ```mlir
    %z = dlgraph.}] # mnemonic # [{ %x, %y : (tensor<8x4xi32>, tensor<4xi32>) -> tensor<8x4xi32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnySignlessInteger]>:$lhs,
                       RankedTensorOf<[AnySignlessInteger]>:$rhs);
  let results = (outs RankedTensorOf<[AnySignlessInteger]>:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Graph_BitwiseAndOp : Graph_IntegerBinaryOp<"bitwise_and", "BitwiseAnd">;
def Graph_BitwiseOrOp : Graph_IntegerBinaryOp<"bitwise_or", "BitwiseOr">;
def Graph_BitwiseXorOp : Graph_IntegerBinaryOp<"bitwise_xor", "BitwiseXor">;
/// lhs << rhs, the bits past the sign bit discarded; 0 where rhs < 0 or
/// rhs >= the bit width (ONNX BitShift LEFT, opset 28).
def Graph_ShiftLeftOp : Graph_IntegerBinaryOp<"shift_left", "BitShift LEFT">;
/// Arithmetic (sign-extending) lhs >> rhs; where rhs < 0 or rhs >= the bit
/// width, -1 for a negative lhs and 0 otherwise (ONNX BitShift RIGHT on a
/// signed type, opset 28).
def Graph_ShiftRightOp : Graph_IntegerBinaryOp<"shift_right", "BitShift RIGHT">;

def Graph_BitwiseNotOp : Graph_Op<"bitwise_not", [Pure,
    SameOperandsAndResultType, InferTypeOpInterface, Graph_Elementwise,
    Graph_FollowsOperands, Graph_RecomputeCheap]> {
  let summary = "Elementwise integer complement ~x (ONNX BitwiseNot)";
  let description = "`%y = dlgraph.bitwise_not %x : tensor<8xi32>`";
  let arguments = (ins RankedTensorOf<[AnySignlessInteger]>:$input);
  let results = (outs RankedTensorOf<[AnySignlessInteger]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
}

// The target element type is the result type, so it is not inferred.
def Graph_BitcastOp : Graph_Op<"bitcast", [Pure, SameOperandsAndResultShape,
    Graph_Elementwise, Graph_FollowsOperands, Graph_RecomputeCheap]> {
  let summary = "Reinterprets the bits of each element as another type of the same width (ONNX BitCast)";
  let description = [{
    Not differentiable.
    ```mlir
    %y = dlgraph.bitcast %x : tensor<8xf32> to tensor<8xi32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_SelectOp : Graph_Op<"select", [Pure, Graph_InferType,
    Graph_Elementwise, Graph_FollowsOperands, Graph_RecomputeCheap]> {
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
  let hasFolder = 1;
}

def Graph_CompareOp : Graph_Op<"compare", [Pure, Graph_InferType,
    Graph_Elementwise, Graph_FollowsOperands, Graph_RecomputeCheap]> {
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
  let hasFolder = 1;
}

// The target element type is the result type, so it is not inferred.
def Graph_CastOp : Graph_Op<"cast", [Pure, Graph_Elementwise,
    Graph_FollowsOperands, Graph_RecomputeCheap]> {
  let summary = "Converts the element type (ONNX Cast)";
  let description = "`%y = dlgraph.cast %x : tensor<8xi64> to tensor<8xf32>`";
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra and convolution.
//===----------------------------------------------------------------------===//

def Graph_GemmOp : Graph_Op<"gemm", [Pure, Graph_InferType,
    Graph_LowPrecision, Graph_RecomputeExpensive]> {
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
  let extraClassDeclaration = [{
    /// Multiply-adds of one evaluation (RecomputeCostOpInterface).
    int64_t getMultiplyAdds();
  }];
}

def Graph_MatMulOp : Graph_Op<"matmul", [Pure, Graph_InferType,
    Graph_LowPrecision, Graph_RecomputeExpensive]> {
  let summary = "Matrix product with NumPy semantics (ONNX MatMul)";
  let description = [{
    numpy.matmul: the last two dims are the matrices ([..., M, K] x
    [..., K, N] -> [..., M, N]) and the leading (batch) dims broadcast; a
    1-D lhs [K] is a row and a 1-D rhs [K] a column, whose added dim is
    removed from the result.
    ```mlir
    %y = dlgraph.matmul %a, %b : (tensor<64x32xf32>, tensor<32x10xf32>) -> tensor<64x10xf32>
    %s = dlgraph.matmul %q, %k : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Multiply-adds of one evaluation (RecomputeCostOpInterface).
    int64_t getMultiplyAdds();
  }];
}

def Graph_ConvOp : Graph_Op<"conv", [Pure, Graph_InferType,
    Graph_LowPrecision, Graph_RecomputeExpensive]> {
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
  let extraClassDeclaration = [{
    /// Multiply-adds of one evaluation (RecomputeCostOpInterface).
    int64_t getMultiplyAdds();
  }];
}

//===----------------------------------------------------------------------===//
// Normalization, pooling, softmax.
//===----------------------------------------------------------------------===//

def Graph_BatchNormOp : Graph_Op<"batch_norm", [Pure,
    AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<InferTypeOpInterface>, Graph_KeepsF32,
    Graph_RecomputeCheap]> {
  let summary = "Batch normalization with given statistics (ONNX BatchNormalization, inference)";
  let description = [{
    y = scale * (x - mean) / sqrt(var + epsilon) + bias over channel axis 1.
    `momentum` is ONNX's (running = running * momentum + batch * (1 -
    momentum); PyTorch's momentum 0.1 is 0.9 here); it only matters when
    training decomposes this op into batch statistics and running-statistic
    updates.
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

class Graph_PoolOp<string mnemonic, string onnx>
    : Graph_Op<mnemonic, [Pure, Graph_InferType, Graph_FollowsOperands,
                          Graph_RecomputeModerate]> {
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

def Graph_GlobalAveragePoolOp : Graph_Op<"global_average_pool", [Pure,
    Graph_InferType, Graph_FollowsOperands, Graph_RecomputeModerate,
    Graph_Reduction]> {
  let summary = "Mean over all spatial axes, keeping them as size 1 (ONNX GlobalAveragePool)";
  let description = "`%y = dlgraph.global_average_pool %x : tensor<8x16x4x4xf32> -> tensor<8x16x1x1xf32>`";
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_SoftmaxOp : Graph_Op<"softmax", [Pure, SameOperandsAndResultType,
    InferTypeOpInterface, Graph_KeepsF32, Graph_RecomputeModerate,
    Graph_NormalizesScores]> {
  let summary = "Softmax along `axis` (ONNX Softmax, opset 13 semantics)";
  let description = "`%y = dlgraph.softmax %x {axis = 1 : i64} : tensor<8x10xf32>`";
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Graph_LogSoftmaxOp : Graph_Op<"log_softmax", [Pure,
    SameOperandsAndResultType, InferTypeOpInterface, Graph_KeepsF32,
    Graph_RecomputeModerate, Graph_NormalizesScores]> {
  let summary = "Log of softmax along `axis` (ONNX LogSoftmax, opset 13 semantics)";
  let description = "`%y = dlgraph.log_softmax %x {axis = 1 : i64} : tensor<8x10xf32>`";
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Graph_AttentionOp : Graph_Op<"attention", [Pure, Graph_InferType,
    AttrSizedOperandSegments, Graph_KeepsF32, Graph_ReadsLowPrecision,
    Graph_RecomputeExpensive,
    DeclareOpInterfaceMethods<Graph_ScoreMaskOpInterface>]> {
  let summary = "Scaled dot-product attention softmax(Q·Kᵀ·scale + mask)·V, fused";
  let description = [{
    One attention (Vaswani et al. 2017) computed as FlashAttention does (Dao
    et al. 2022; FlashAttention-2, Dao 2023): tile by tile with an online
    softmax, never storing the [B, Hq, Sq, Skv] scores. Q is [B, Hq, Sq, D],
    K [B, Hkv, Skv, D], V [B, Hkv, Skv, Dv] with Hq a multiple of Hkv
    (grouped-query attention; multi-query when Hkv = 1): query head h reads
    K/V head h / (Hq / Hkv), and the repeated heads are never materialized.
    `seq_first` (empty, or one flag per Q, K, V, O) marks operands stored
    [B, S, H, D] instead (the layout before the head-split transpose, which
    the kernel reads through strides). Results: O [B, Hq, Sq, Dv] (or
    [B, Sq, Hq, Dv]) in Q's element type, and `lse`, the f32 log-sum-exp of
    each query row's masked, scaled scores [B, Hq, Sq], which the backward
    (dlgraph.attention_grad) reads instead of the probabilities.
    Q, K and V may each be f32, f16 or bf16 (or all f64): the kernels widen
    them as they read and compute in f32 (f64), so mixed precision leaves
    them as their producers made them (KeepsF32 with ReadsLowPrecision).

    `mask` broadcasts (NumPy rules) to [B, Hq, Sq, Skv]: i1 keeps a score
    where true (PyTorch's scaled_dot_product_attention), a float mask is
    added to the scaled scores. `causal` keeps key j for query i when
    j <= i + Skv - Sq (aligned at the bottom right, as a KV cache and ONNX
    Attention's is_causal with a past; the usual triangle when Sq = Skv).
    A query row with every key masked gives O = 0 (ONNX Attention's
    definition), lse = -inf. With `dropout_ratio` r > 0 the probabilities
    are dropped as dlgraph.dropout drops a [B, Hq, Sq, Skv] tensor with
    `seed` and the rank-0 f32 `step` (the same Philox-4x32-10 stream, one
    element per score in row-major order), after the softmax and before V:
    the normalizer is the undropped one.
    ```mlir
    %o, %lse = dlgraph.attention %q, %k, %v {scale = 1.250000e-01 : f64, causal = true}
        : (tensor<2x8x128x64xf32>, tensor<2x2x128x64xf32>, tensor<2x2x128x64xf32>)
        -> (tensor<2x8x128x64xf32>, tensor<2x8x128xf32>)
    %o2, %lse2 = dlgraph.attention %q, %k, %v mask %m {scale = 1.250000e-01 : f64}
        : (tensor<2x8x128x64xf32>, tensor<2x2x128x64xf32>, tensor<2x2x128x64xf32>, tensor<2x1x1x128xi1>)
        -> (tensor<2x8x128x64xf32>, tensor<2x8x128xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$query, AnyRankedTensor:$key,
                       AnyRankedTensor:$value,
                       Optional<AnyRankedTensor>:$mask,
                       Optional<AnyRankedTensor>:$step,
                       F64Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<DenseBoolArrayAttr, "{}">:$seq_first,
                       DefaultValuedAttr<F32Attr, "0.0f">:$dropout_ratio,
                       DefaultValuedAttr<I64Attr, "0">:$seed);
  let results = (outs AnyRankedTensor:$result, AnyRankedTensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)? (`step` $step^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Multiply-adds of one evaluation, 2 * B * Hq * Sq * Skv * D for the
    /// scores and the product with V (RecomputeCostOpInterface).
    int64_t getMultiplyAdds();
  }];
}

//===----------------------------------------------------------------------===//
// Reductions.
//===----------------------------------------------------------------------===//

// |precision|: sums, means and products of many elements keep f32 (sum and
// prod are on PyTorch autocast's float32 list); max is exact in any type.
class Graph_ReduceOp<string mnemonic, string onnx,
                     Trait precision = Graph_KeepsF32>
    : Graph_Op<mnemonic, [Pure, Graph_InferType, precision,
                          Graph_RecomputeModerate, Graph_Reduction]> {
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
def Graph_ReduceMaxOp : Graph_ReduceOp<"reduce_max", "ReduceMax",
                                         Graph_FollowsOperands>;
def Graph_ReduceProdOp : Graph_ReduceOp<"reduce_prod", "ReduceProd">;

class Graph_ArgReduceOp<string mnemonic, string onnx>
    : Graph_Op<mnemonic, [Pure, Graph_InferType, Graph_FollowsOperands,
                          Graph_RecomputeModerate]> {
  let summary = "Index of the " # !if(!eq(onnx, "ArgMax"), "largest", "smallest")
                # " element along `axis` (ONNX " # onnx # ")";
  let description = [{
    The result holds i64 indices into `axis` (normalized, >= 0); with
    `keepdims` the axis stays as size 1. Ties pick the first index, or the
    last with `select_last_index`. NaN inputs are not treated specially
    (a NaN never compares greater or smaller).
    ```mlir
    %i = dlgraph.}] # mnemonic # [{ %x {axis = 1 : i64, keepdims} : tensor<8x10xf32> -> tensor<8x1xi64>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis,
                       UnitAttr:$keepdims, UnitAttr:$select_last_index);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_ArgMaxOp : Graph_ArgReduceOp<"arg_max", "ArgMax">;
def Graph_ArgMinOp : Graph_ArgReduceOp<"arg_min", "ArgMin">;

// The result shape is the result type (scales do not determine it exactly
// when the importer derived them from sizes), so it is not inferred.
def Graph_ResizeOp : Graph_Op<"resize", [Pure, Graph_FollowsOperands,
    Graph_RecomputeCheap]> {
  let summary = "Nearest or (multi)linear resampling (ONNX Resize, Upsample)";
  let description = [{
    The result shape is the result type; `scales` (one per axis, > 0) are
    ONNX's (output size / input size, or the given scales) and enter the
    coordinate transform. For output index o on an axis with input length
    L and scale s (R = s L, the real-valued resized length, as in ONNX's
    reference), the input coordinate x is, by
    `coordinate_transformation_mode`: half_pixel (o + 0.5) / s - 0.5;
    pytorch_half_pixel the same, or 0 when R <= 1; align_corners
    o (L - 1) / (R - 1), or 0 when R = 1; asymmetric o / s;
    tf_half_pixel_for_nn (o + 0.5) / s. `mode` "nearest" rounds x by
    `nearest_mode` (round_prefer_floor, round_prefer_ceil, floor, ceil) and
    clamps it to [0, L - 1]; "linear" interpolates between floor(x) and
    floor(x) + 1, each clamped to [0, L - 1], on every axis (bilinear on
    two axes, trilinear on three). Coordinates are computed in double.
    ```mlir
    %y = dlgraph.resize %x {mode = "linear", coordinate_transformation_mode = "pytorch_half_pixel",
           nearest_mode = "floor", scales = array<f64: 1.0, 1.0, 2.0, 2.0>}
         : tensor<1x3x4x4xf32> -> tensor<1x3x8x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, StrAttr:$mode,
                       StrAttr:$coordinate_transformation_mode,
                       StrAttr:$nearest_mode, DenseF64ArrayAttr:$scales);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_DropoutOp : Graph_Op<"dropout", [Pure, Graph_InferType,
    Graph_Elementwise, Graph_FollowsOperands, Graph_RecomputeCheap]> {
  let summary = "Training-mode dropout with a counter-based RNG (ONNX Dropout, training_mode = 1)";
  let description = [{
    Keeps each element with probability 1 - `ratio` and scales kept ones by
    1 / (1 - `ratio`); `mask` is true where the element was kept. The
    random stream is a pure function of (`seed`, `step`, flat element
    index): element i keeps when u < 1 - ratio, with u uniform in [0, 1)
    from the top 24 bits of Philox-4x32-10 (Salmon et al. 2011) with key
    (seed low, seed high) and counter (i low, i high, step, 0), as defined
    once in runtime/schema/Semantics/Philox.h. `step` is a
    rank-0 f32 counter (the importer passes a persistent variable that
    every call advances), so each step draws a new mask; the same seed and
    step give the same mask on every device.
    ```mlir
    %y, %m = dlgraph.dropout %x, %step {ratio = 5.0e-01 : f32, seed = 7 : i64}
         : (tensor<8x16xf32>, tensor<f32>) -> (tensor<8x16xf32>, tensor<8x16xi1>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$step,
                       F32Attr:$ratio, I64Attr:$seed);
  let results = (outs AnyRankedTensor:$result, AnyRankedTensor:$mask);
  let assemblyFormat = "$input `,` $step attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Data movement: slice, pad, concat, gather.
//===----------------------------------------------------------------------===//

// The element counts are the result type (there is no `ends`), so the
// result type is not inferred.
def Graph_SliceOp : Graph_Op<"slice", [Pure, Graph_FollowsOperands,
    Graph_RecomputeCheap, Graph_MovesElements]> {
  let summary = "Strided slice: result[i] = input[starts + steps * i] (ONNX Slice, Split)";
  let description = [{
    One `starts`/`steps` entry per input dimension; `starts` are
    normalized indices and `steps` are non-zero (negative steps walk
    backwards). The result type gives the element count per dimension;
    every index read is in range.
    ```mlir
    %y = dlgraph.slice %x {starts = array<i64: 0, 3>, steps = array<i64: 1, -1>}
         : tensor<4x8xf32> -> tensor<4x2xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$steps);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

// The trailing padding is only in the result type, so it is not inferred.
def Graph_PadOp : Graph_Op<"pad", [Pure, Graph_FollowsOperands,
    Graph_RecomputeCheap, Graph_MovesElements]> {
  let summary = "Places the input at starts + steps * i in a tensor filled with `value` (ONNX Pad, constant mode; the gradient of slice)";
  let description = [{
    result = splat(value); result[starts + steps * i] = input[i]. With
    unit steps this is ONNX Pad (constant mode) with `starts` the leading
    pads; with the starts/steps of a `dlgraph.slice` and value 0 it is that
    slice's gradient. Every written index is in range of the result.
    ```mlir
    %y = dlgraph.pad %x {starts = array<i64: 1, 0>, steps = array<i64: 1, 1>, value = 0.0 : f64}
         : tensor<2x3xf32> -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$steps,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_ConcatOp : Graph_Op<"concat", [Pure, Graph_InferType,
    Graph_FollowsOperands, Graph_RecomputeCheap]> {
  let summary = "Joins tensors along `axis` (ONNX Concat on non-constant data)";
  let description = [{
    All inputs have the result's element type and rank and equal sizes
    except along `axis` (normalized, >= 0).
    ```mlir
    %y = dlgraph.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_GatherOp : Graph_Op<"gather", [Pure, Graph_InferType,
    Graph_FollowsOperands, Graph_RecomputeCheap]> {
  let summary = "Picks slices of `data` along `axis` by `indices` (ONNX Gather, embedding lookup)";
  let description = [{
    result.shape = data.shape[:axis] + indices.shape + data.shape[axis+1:];
    `axis` is normalized (>= 0); indices are i32 or i64 and may be
    negative (counted from the end). An index outside [-n, n) reads
    nothing: its result elements are 0 (the kernels never read out of
    bounds).
    ```mlir
    %e = dlgraph.gather %w, %ids {axis = 0 : i64} : (tensor<100x16xf32>, tensor<4x8xi64>) -> tensor<4x8x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$data, AnyRankedTensor:$indices,
                       I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_GatherElementsOp : Graph_Op<"gather_elements", [Pure,
    Graph_InferType, Graph_FollowsOperands, Graph_RecomputeCheap]> {
  let summary = "result[p] = data[p with p[axis] = indices[p]] (ONNX GatherElements)";
  let description = [{
    The result has the shape of `indices` (same rank as `data`, each
    dimension no larger than data's except along `axis`). Indices are
    i32/i64, may be negative; out-of-range indices give 0.
    ```mlir
    %y = dlgraph.gather_elements %x, %i {axis = 1 : i64} : (tensor<2x5xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$data, AnyRankedTensor:$indices,
                       I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}


//===----------------------------------------------------------------------===//
// Scans and one-hot encoding (ONNX CumSum, OneHot). Their result types are
// inferred (ScanOps.cpp).
//===----------------------------------------------------------------------===//

include "mlir/IR/BuiltinAttributeInterfaces.td"

def Graph_CumSumOp : Graph_Op<"cumsum", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>, Graph_KeepsF32,
    Graph_RecomputeModerate]> {
  let summary = "Cumulative sum along `axis` (ONNX CumSum)";
  let description = [{
    For an index p along `axis` (normalized, >= 0) of length n,
    result[p] = sum of input[j] over j <= p; with `exclusive`, over j < p
    (so result[0] = 0); with `reverse`, over j >= p (or j > p with both).
    The result has the input's type; element types f32, f64, i32, i64.
    ```mlir
    %y = dlgraph.cumsum %x {axis = 1 : i64, reverse} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32, F64, I32, I64]>:$input,
                       I64Attr:$axis, UnitAttr:$exclusive, UnitAttr:$reverse);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Graph_CumProdOp : Graph_Op<"cumprod", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>, Graph_KeepsF32,
    Graph_RecomputeModerate]> {
  let summary = "Cumulative product along `axis` (ONNX CumProd)";
  let description = [{
    dlgraph.cumsum with products: result[p] = product of input[j] over
    j <= p; with `exclusive`, over j < p (so result[0] = 1); with
    `reverse`, over j >= p (or j > p with both). Integer products wrap
    (two's complement). Not differentiable yet.
    ```mlir
    %y = dlgraph.cumprod %x {axis = 0 : i64, exclusive} : tensor<5xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32, F64, I32, I64]>:$input,
                       I64Attr:$axis, UnitAttr:$exclusive, UnitAttr:$reverse);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Graph_OneHotOp : Graph_Op<"one_hot", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>, Graph_FollowsOperands,
    Graph_RecomputeCheap]> {
  let summary = "One-hot encoding of integer indices (ONNX OneHot)";
  let description = [{
    Inserts a new dimension of size `depth` at `axis` (normalized, in
    [0, rank of indices]): result[..., k, ...] is `on_value` where the
    index at the other positions equals k, else `off_value`. A negative
    index i counts from the end (i + depth); an index outside [-depth,
    depth) gives a row of `off_value`. Float indices are truncated toward
    zero first, as ONNX specifies. `on_value` and `off_value` have the
    result's element type.
    ```mlir
    %y = dlgraph.one_hot %i {axis = 1 : i64, depth = 10 : i64, off_value = 0.0 : f32, on_value = 1.0 : f32}
         : tensor<4xi64> -> tensor<4x10xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnySignlessInteger, AnyFloat]>:$indices,
                       I64Attr:$depth, I64Attr:$axis, TypedAttrInterface:$off_value,
                       TypedAttrInterface:$on_value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$indices attr-dict `:` type($indices) `->` type($result)";
  let hasVerifier = 1;
}

#endif // DLC_DIALECT_GRAPH_OPS_TD
