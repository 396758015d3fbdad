//===- GraphTrainingOps.td - dlgraph loss/gradient/optimizer ops -*- tablegen -*-===//
// Ops that `--train` adds: the loss, gradients of ops whose backward is not a
// composition of forward ops, and the optimizer updates.
#ifndef DLC_DIALECT_GRAPH_TRAINING_OPS_TD
#define DLC_DIALECT_GRAPH_TRAINING_OPS_TD

include "dialects/Graph/GraphBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Graph_SoftmaxCrossEntropyOp : Graph_Op<"softmax_cross_entropy", [Pure,
    Graph_InferType, Graph_KeepsF32, Graph_ReadsLowPrecision,
    Graph_RecomputeModerate]> {
  let summary = "Mean softmax cross-entropy of logits against integer class ids";
  let description = [{
    Softmax over the last axis of `logits` [..., C]; `labels` has the shape
    of `logits` without the last axis (i64 class ids in [0, C)). The result
    is the mean over all label elements, a rank-0 tensor (as
    `torch.nn.functional.cross_entropy` with reduction='mean'). f16/bf16
    logits are widened as they are read and the loss is computed and
    returned in f32. With `label_smoothing` e in [0, 1] (PyTorch's
    `label_smoothing`), the target of a row is (1 - e) one_hot(label) + e / C:
    row loss = (1 - e) (lse - x[label]) + e / C * sum_k (lse - x[k]), lse =
    log(sum_k exp(x[k])). A label outside [0, C) contributes nothing but
    counts in the mean.
    ```mlir
    %l = dlgraph.softmax_cross_entropy %x, %t : (tensor<64x10xf32>, tensor<64xi64>) -> tensor<f32>
    %s = dlgraph.softmax_cross_entropy %x, %t {label_smoothing = 1.0e-01 : f32} : (tensor<64x10xf32>, tensor<64xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$logits, AnyRankedTensor:$labels,
                       DefaultValuedAttr<F32Attr, "0.0f">:$label_smoothing);
  let results = (outs AnyRankedTensor:$loss);
  let assemblyFormat = "$logits `,` $labels attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_SoftmaxCrossEntropyGradOp : Graph_Op<"softmax_cross_entropy_grad",
    [Pure, AllTypesMatch<["logits", "result"]>,
     DeclareOpInterfaceMethods<InferTypeOpInterface>,
     Graph_KeepsF32, Graph_ReadsLowPrecision, Graph_RecomputeModerate]> {
  let summary = "Gradient of softmax_cross_entropy with respect to the logits";
  let description = [{
    d_logits = (softmax(logits) - ((1 - e) one_hot(labels) + e / C)) * d_loss
    / count(labels), e = `label_smoothing` (0 by default); rows whose label
    is outside [0, C) get 0. With f16/bf16 logits, `loss_grad` is f32,
    everything is computed in f32 and d_logits is rounded once to the
    logits' type.
    ```mlir
    %g = dlgraph.softmax_cross_entropy_grad %x, %t, %dl : (tensor<64x10xf32>, tensor<64xi64>, tensor<f32>) -> tensor<64x10xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$logits, AnyRankedTensor:$labels,
                       AnyRankedTensor:$loss_grad,
                       DefaultValuedAttr<F32Attr, "0.0f">:$label_smoothing);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$logits `,` $labels `,` $loss_grad attr-dict `:` functional-type(operands, results)";
}

// With a stride above 1 several input sizes give one output size, so the
// result type is not inferred.
def Graph_ConvBackwardDataOp : Graph_Op<"conv_backward_data", [Pure,
    Graph_LowPrecision, Graph_RecomputeExpensive]> {
  let summary = "Gradient of conv with respect to its input";
  let description = [{
    Same attributes as `dlgraph.conv`; the result type is the input's.
    ```mlir
    %dx = dlgraph.conv_backward_data %dy, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
            dilations = array<i64: 1, 1>, group = 1 : i64}
          : (tensor<8x16x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<8x3x32x32xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$result_grad, AnyRankedTensor:$filter,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs AnyRankedTensor:$input_grad);
  let assemblyFormat = "$result_grad `,` $filter attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = [{
    /// Multiply-adds of one evaluation (RecomputeCostOpInterface).
    int64_t getMultiplyAdds();
  }];
}

// With a stride above 1 several kernel sizes give one output size, so the
// result type is not inferred.
def Graph_ConvBackwardFilterOp : Graph_Op<"conv_backward_filter", [Pure,
    Graph_LowPrecision, Graph_RecomputeExpensive]> {
  let summary = "Gradient of conv with respect to its filter";
  let description = [{
    Same attributes as `dlgraph.conv`; the result type is the filter's.
    ```mlir
    %dw = dlgraph.conv_backward_filter %x, %dy {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
            dilations = array<i64: 1, 1>, group = 1 : i64}
          : (tensor<8x3x32x32xf32>, tensor<8x16x32x32xf32>) -> tensor<16x3x3x3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$result_grad,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs AnyRankedTensor:$filter_grad);
  let assemblyFormat = "$input `,` $result_grad attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = [{
    /// Multiply-adds of one evaluation (RecomputeCostOpInterface).
    int64_t getMultiplyAdds();
  }];
}

class Graph_PoolGradOp<string mnemonic, string fwd>
    : Graph_Op<mnemonic, [Pure, AllTypesMatch<["input", "input_grad"]>,
                          DeclareOpInterfaceMethods<InferTypeOpInterface>, Graph_FollowsOperands,
                          Graph_RecomputeModerate]> {
  let summary = "Gradient of " # fwd # " with respect to its input";
  let description = [{
    Same attributes as the forward op; `input` is the forward input (its
    type is the result type).
    ```mlir
    %dx = dlgraph.}] # mnemonic # [{ %x, %dy {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>,
            pads = array<i64: 0, 0, 0, 0>} : (tensor<8x16x8x8xf32>, tensor<8x16x4x4xf32>) -> tensor<8x16x8x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$result_grad,
                       DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
                       UnitAttr:$ceil_mode, UnitAttr:$count_include_pad);
  let results = (outs AnyRankedTensor:$input_grad);
  let assemblyFormat = "$input `,` $result_grad attr-dict `:` functional-type(operands, results)";
}

def Graph_MaxPoolGradOp : Graph_PoolGradOp<"max_pool_grad", "max_pool">;
def Graph_AveragePoolGradOp : Graph_PoolGradOp<"average_pool_grad", "average_pool">;

// Max pooling's backward from the argmax instead of the input, as PyTorch's
// max_pool2d_with_indices / max_pool2d_with_indices_backward: the indices
// (i32, a quarter of an f32 input's bytes at stride 2) replace the input
// that max_pool_grad reads. Rematerialization (--dlgraph-remat) uses them
// so that the pooling's input need not be kept or recomputed for it.
// NotRecomputable: the indices are made to be kept (recomputing them would
// need the input they stand in for).
def Graph_MaxPoolIndicesOp : Graph_Op<"max_pool_indices", [Pure,
    Graph_InferType, Graph_FollowsOperands, Graph_NotRecomputable]> {
  let summary = "Where 2-D max pooling takes each output from, as i32 indices";
  let description = [{
    Same attributes as dlgraph.max_pool; the result has the pooled shape
    [N, C, OH, OW] and element type i32: for each window, the flat index
    ih * W + iw within its [H, W] input plane of the first maximum in window
    scan order (a NaN wins), the element max_pool returns and max_pool_grad
    sends the gradient to.
    ```mlir
    %i = dlgraph.max_pool_indices %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>,
           pads = array<i64: 0, 0, 0, 0>} : tensor<8x16x8x8xf32> -> tensor<8x16x4x4xi32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
                       UnitAttr:$ceil_mode, UnitAttr:$count_include_pad);
  let results = (outs AnyRankedTensor:$indices);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($indices)";
  let hasVerifier = 1;
}

// The forward input's shape is only in the result type, so it is not
// inferred.
def Graph_MaxPoolIndicesGradOp : Graph_Op<"max_pool_indices_grad", [Pure,
    Graph_FollowsOperands, Graph_RecomputeModerate]> {
  let summary = "Gradient of max_pool with respect to its input, from the argmax";
  let description = [{
    `indices` are dlgraph.max_pool_indices of the forward input (same
    attributes); the result has the forward input's type and is bit-identical
    to dlgraph.max_pool_grad's: each input element sums, in ascending output
    order, the gradients of the windows whose index names it.
    ```mlir
    %dx = dlgraph.max_pool_indices_grad %i, %dy {kernel_shape = array<i64: 2, 2>,
            strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>}
          : (tensor<8x16x4x4xi32>, tensor<8x16x4x4xf32>) -> tensor<8x16x8x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$indices, AnyRankedTensor:$result_grad,
                       DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
                       UnitAttr:$ceil_mode, UnitAttr:$count_include_pad);
  let results = (outs AnyRankedTensor:$input_grad);
  let assemblyFormat = "$indices `,` $result_grad attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

// The forward input's shape is only in the result type, so it is not
// inferred.
def Graph_ResizeGradOp : Graph_Op<"resize_grad", [Pure, Graph_FollowsOperands,
    Graph_RecomputeModerate]> {
  let summary = "Gradient of dlgraph.resize with respect to its input";
  let description = [{
    The adjoint of the resize with the same attributes: every output
    element's gradient is added to the input elements it read, with the
    weights it read them with (nearest: weight 1). The result type is the
    forward input's type.
    ```mlir
    %dx = dlgraph.resize_grad %dy {mode = "nearest", coordinate_transformation_mode = "asymmetric",
            nearest_mode = "floor", scales = array<f64: 1.0, 1.0, 2.0, 2.0>}
          : tensor<1x3x8x8xf32> -> tensor<1x3x4x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$result_grad, StrAttr:$mode,
                       StrAttr:$coordinate_transformation_mode,
                       StrAttr:$nearest_mode, DenseF64ArrayAttr:$scales);
  let results = (outs AnyRankedTensor:$input_grad);
  let assemblyFormat = "$result_grad attr-dict `:` type($result_grad) `->` type($input_grad)";
  let hasVerifier = 1;
}

def Graph_AttentionGradOp : Graph_Op<"attention_grad", [Pure,
    Graph_InferType, AttrSizedOperandSegments, Graph_KeepsF32,
    Graph_ReadsLowPrecision, Graph_RecomputeExpensive]> {
  let summary = "Gradients of dlgraph.attention from its log-sum-exp (FlashAttention-2's backward)";
  let description = [{
    dQ, dK, dV of dlgraph.attention for the output gradient dO, given the
    forward's operands, its output O and its row log-sum-exp `lse`; the
    probabilities are recomputed tile by tile, P = exp(S - lse), never
    stored (Dao 2023, algorithm 2): dV = Pᵀ·dO, dP = dO·Vᵀ, dS = P ∘ (dP -
    rowsum(dO ∘ O)), dQ = dS·K·scale, dK = dSᵀ·Q·scale, the K/V gradients of
    a grouped-query head summed over its query heads. The attributes, the
    mask and the dropout step are the forward's; dO has O's type and
    shape and layout (any float type); the results have the types of Q, K
    and V. The mask gets no gradient.
    ```mlir
    %dq, %dk, %dv = dlgraph.attention_grad %q, %k, %v, %o, %lse, %do {scale = 1.250000e-01 : f64, causal = true}
        : (tensor<2x8x128x64xf32>, tensor<2x2x128x64xf32>, tensor<2x2x128x64xf32>,
           tensor<2x8x128x64xf32>, tensor<2x8x128xf32>, tensor<2x8x128x64xf32>)
        -> (tensor<2x8x128x64xf32>, tensor<2x2x128x64xf32>, tensor<2x2x128x64xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$query, AnyRankedTensor:$key,
                       AnyRankedTensor:$value, AnyRankedTensor:$result,
                       AnyRankedTensor:$lse, AnyRankedTensor:$result_grad,
                       Optional<AnyRankedTensor>:$mask,
                       Optional<AnyRankedTensor>:$step,
                       F64Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<DenseBoolArrayAttr, "{}">:$seq_first,
                       DefaultValuedAttr<F32Attr, "0.0f">:$dropout_ratio,
                       DefaultValuedAttr<I64Attr, "0">:$seed);
  let results = (outs AnyRankedTensor:$query_grad, AnyRankedTensor:$key_grad,
                      AnyRankedTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $result `,` $lse `,` $result_grad
    (`mask` $mask^)? (`step` $step^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Multiply-adds of the backward's own products, dO·Vᵀ, dV, dQ and dK:
    /// 4 * B * Hq * Sq * Skv * D, twice the forward's (the model FLOPs of
    /// PaLM's count, dlc --stats). The kernels also recompute the scores and
    /// dO·Vᵀ once more (the dQ and the dK/dV passes each need them): 7 in
    /// all, the recomputation not counted (RecomputeCostOpInterface).
    int64_t getMultiplyAdds();
  }];
}

def Graph_SGDUpdateOp : Graph_Op<"sgd_update", [Pure,
    AllTypesMatch<["param", "new_param"]>,
    AllTypesMatch<["momentum_buffer", "new_momentum_buffer"]>,
    DeclareOpInterfaceMethods<InferTypeOpInterface>, Graph_Elementwise,
    Graph_KeepsF32,
    Graph_RecomputeCheap]> {
  let summary = "One torch.optim.SGD step for one parameter";
  let description = [{
    With g = grad + weight_decay * param: when momentum != 0,
    buf' = momentum * buf + g (buf' = g on the first step, `step` == 1), and
    param' = param - lr * buf'; else param' = param - lr * g and buf' = buf.
    `step` is the rank-0 f32 step count after increment (1 on the first step);
    `lr` is the rank-0 f32 learning rate of this step (a constant, or the
    schedule --dlgraph-apply-optimizer computes from the step counter).
    ```mlir
    %p, %b = dlgraph.sgd_update %w, %g, %buf, %step, %lr {momentum = 0.9 : f32, weight_decay = 0.0 : f32}
           : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$param, AnyRankedTensor:$grad,
                       AnyRankedTensor:$momentum_buffer, AnyRankedTensor:$step,
                       AnyRankedTensor:$lr,
                       F32Attr:$momentum, F32Attr:$weight_decay);
  let results = (outs AnyRankedTensor:$new_param, AnyRankedTensor:$new_momentum_buffer);
  let assemblyFormat = "$param `,` $grad `,` $momentum_buffer `,` $step `,` $lr attr-dict `:` functional-type(operands, results)";
}

def Graph_AdamUpdateOp : Graph_Op<"adam_update", [Pure,
    AllTypesMatch<["param", "new_param"]>,
    AllTypesMatch<["exp_avg", "new_exp_avg"]>,
    AllTypesMatch<["exp_avg_sq", "new_exp_avg_sq"]>,
    DeclareOpInterfaceMethods<InferTypeOpInterface>, Graph_Elementwise,
    Graph_KeepsF32,
    Graph_RecomputeCheap]> {
  let summary = "One torch.optim.Adam / AdamW step for one parameter";
  let description = [{
    Kingma & Ba 2015; AdamW (Loshchilov & Hutter 2019) when `decoupled`.
    `step` is the rank-0 f32 step count after increment and `lr` the rank-0
    f32 learning rate of this step. Adam: g = grad + weight_decay * param;
    AdamW: param *= (1 - lr * weight_decay) first.
    m' = beta1 m + (1-beta1) g; v' = beta2 v + (1-beta2) g^2;
    param' = param - lr * (m' / (1-beta1^t)) / (sqrt(v' / (1-beta2^t)) + epsilon).
    ```mlir
    %p, %m2, %v2 = dlgraph.adam_update %w, %g, %m, %v, %t, %lr {beta1 = 0.9 : f32,
           beta2 = 0.999 : f32, epsilon = 1.0e-08 : f32, weight_decay = 0.0 : f32}
         : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$param, AnyRankedTensor:$grad,
                       AnyRankedTensor:$exp_avg, AnyRankedTensor:$exp_avg_sq,
                       AnyRankedTensor:$step, AnyRankedTensor:$lr,
                       F32Attr:$beta1, F32Attr:$beta2, F32Attr:$epsilon,
                       F32Attr:$weight_decay, UnitAttr:$decoupled);
  let results = (outs AnyRankedTensor:$new_param, AnyRankedTensor:$new_exp_avg,
                      AnyRankedTensor:$new_exp_avg_sq);
  let assemblyFormat = "$param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $step `,` $lr attr-dict `:` functional-type(operands, results)";
}

// The forward data's shape is only in the result type, so it is not
// inferred. Repeated indices accumulate: f32.
class Graph_GatherGradBase<string mnemonic, string fwd>
    : Graph_Op<mnemonic, [Pure, Graph_KeepsF32, Graph_RecomputeModerate]> {
  let summary = "Gradient of dlgraph." # fwd # " with respect to data (a scatter-add into zeros)";
  let description = [{
    `input_grad` has the forward data's type; each result_grad element is
    added at the position the forward op read it from (repeated indices
    accumulate; out-of-range indices contribute nothing).
    ```mlir
    %dw = dlgraph.}] # mnemonic # [{ %ids, %dy {axis = 0 : i64} : (tensor<4x8xi64>, tensor<4x8x16xf32>) -> tensor<100x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$indices, AnyRankedTensor:$result_grad,
                       I64Attr:$axis);
  let results = (outs AnyRankedTensor:$input_grad);
  let assemblyFormat = "$indices `,` $result_grad attr-dict `:` functional-type(operands, results)";
}

def Graph_GatherGradOp : Graph_GatherGradBase<"gather_grad", "gather">;
def Graph_GatherElementsGradOp : Graph_GatherGradBase<"gather_elements_grad", "gather_elements">;

// Communication: a side effect (MemRead + MemWrite on the default resource)
// keeps every rank's collectives in one order and out of CSE and DCE.
def Graph_AllReduceOp : Graph_Op<"all_reduce", [SameOperandsAndResultType,
    MemoryEffects<[MemRead, MemWrite]>, Graph_KeepsF32,
    Graph_NotRecomputable]> {
  let summary = "Sum or mean of a tensor over the ranks of a data-parallel run";
  let description = [{
    Every rank passes a tensor of the same type; each gets the elementwise
    sum (`reduction = "sum"`) or mean (`"avg"`, the sum divided by the
    number of ranks) of all of them. On one rank it is the identity. The
    data-parallel pass (`--dlgraph-data-parallel`) puts one per gradient
    bucket; every rank issues its all-reduces in program order (NCCL and
    Gloo match collectives by order), so they are never reordered, merged
    or removed. Floating-point elements only; computed in f32 or wider
    (mixed precision keeps it f32, as DDP reduces f32 gradients).
    ```mlir
    %g = dlgraph.all_reduce %bucket {reduction = "avg"} : tensor<1024xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input, StrAttr:$reduction);
  let results = (outs RankedTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

#endif // DLC_DIALECT_GRAPH_TRAINING_OPS_TD
