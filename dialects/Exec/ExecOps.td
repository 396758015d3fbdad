//===- ExecOps.td - dlexec ops -----------------------------*- tablegen -*-===//
#ifndef DLC_DIALECT_EXEC_OPS_TD
#define DLC_DIALECT_EXEC_OPS_TD

include "dialects/Exec/ExecBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/FunctionInterfaces.td"

def Exec_VariableOp : Exec_Op<"variable", [Symbol]> {
  let summary = "A persistent buffer that lives across steps";
  let description = [{
    `kind` is `parameter` (trained), `optimizer_state`, `buffer`
    (persistent but not trained, PyTorch's term: BatchNorm running
    statistics, the dropout step counter) or `constant` (read-only, not
    checkpointed). What the C API calls a session's state is every
    variable but the constants. `initial_value` holds the initial
    contents; without one the buffer starts as zeros.
    ```mlir
    dlexec.variable @fc1.weight : memref<128x784xf32> {kind = "parameter"} = dense<0.0>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeAttrOf<AnyMemRef>:$type,
                       StrAttr:$kind, OptionalAttr<ElementsAttr>:$initial_value);
  let assemblyFormat = "$sym_name `:` $type attr-dict (`=` $initial_value^)?";
  let hasVerifier = 1;
}

def Exec_FuncOp : Exec_Op<"func", [Symbol, SingleBlock, NoTerminator,
                                   IsolatedFromAbove]> {
  let summary = "A step function: a straight-line schedule of buffers and launches";
  let description = [{
    `arena_bytes` is the size of the activation arena the memory plan needs
    (absent before planning). Names of `dlexec.input`/`dlexec.output` are the
    graph's input and output names.
    ```mlir
    dlexec.func @train_step attributes {arena_bytes = 4096 : i64} {
      %x = dlexec.input "x" : memref<64x784xf32>
      ...
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, OptionalAttr<I64Attr>:$arena_bytes);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

def Exec_InputOp : Exec_Op<"input", [Pure]> {
  let summary = "A caller-provided buffer (a graph input, or `labels`)";
  let description = "`%x = dlexec.input \"x\" : memref<64x784xf32>`";
  let arguments = (ins StrAttr:$name);
  let results = (outs AnyMemRef:$buffer);
  let assemblyFormat = "$name attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Exec_OutputOp : Exec_Op<"output"> {
  let summary = "Marks a buffer as the named graph output of the function";
  let description = "`dlexec.output \"loss\", %l : memref<f32>`";
  let arguments = (ins StrAttr:$name, AnyMemRef:$buffer);
  let assemblyFormat = "$name `,` $buffer attr-dict `:` type($buffer)";
}

def Exec_VariableRefOp : Exec_Op<"variable_ref", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "The buffer of a persistent variable";
  let description = "`%w = dlexec.variable_ref @fc1.weight : memref<128x784xf32>`";
  let arguments = (ins FlatSymbolRefAttr:$variable);
  let results = (outs AnyMemRef:$buffer);
  let assemblyFormat = "$variable attr-dict `:` type($buffer)";
}

def Exec_AllocOp : Exec_Op<"alloc"> {
  let summary = "An activation buffer in the step's arena";
  let description = [{
    `offset` (bytes from the arena base) is set by the memory planner;
    before planning it is absent.
    ```mlir
    %t = dlexec.alloc {offset = 256 : i64} : memref<64x128xf32>
    ```
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$offset);
  let results = (outs AnyMemRef:$buffer);
  let assemblyFormat = "attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Exec_ReshapeOp : Exec_Op<"reshape", [Pure]> {
  let summary = "A view of a dense buffer with another shape (no copy)";
  let description = "`%v = dlexec.reshape %t : memref<2x3xf32> to memref<6xf32>`";
  let arguments = (ins AnyMemRef:$source);
  let results = (outs AnyMemRef:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `to` type($result)";
  let hasVerifier = 1;
}

def Exec_SubviewOp : Exec_Op<"subview", [Pure]> {
  let summary = "A strided window of a buffer (a slice or concat part, no copy)";
  let description = [{
    Element `i` of the result is element `offsets + strides * i` of
    `source` (per dimension; same rank and element type, identity
    layouts). A slice, and a concatenation whose inputs are a run of a
    larger concatenation's inputs (DenseNet's growing feature maps), lower
    to it. `--dlexec-plan-memory` composes it into the indexing maps of the
    kernels that read it and copies it into a dense buffer for any other
    reader (a library call, an output). After planning a subview remains
    only as the single output of a library call or builtin kernel whose row
    accepts strided outputs (`conv2d_forward`, `max_pool2d`,
    `average_pool2d`: a dense block's convolution or pooling writing its
    channel slot of the concatenation's buffer); the package stores it as a
    strided alias buffer and the call writes through its strides.
    ```mlir
    %v = dlexec.subview %t {offsets = array<i64: 0, 64, 0, 0>, strides = array<i64: 1, 1, 1, 1>}
        : memref<2x256x8x8xf32> to memref<2x32x8x8xf32>
    ```
  }];
  let arguments = (ins AnyMemRef:$source, DenseI64ArrayAttr:$offsets,
                       DenseI64ArrayAttr:$strides);
  let results = (outs AnyMemRef:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `to` type($result)";
  let hasVerifier = 1;
}

def Exec_AllReduceOp : Exec_Op<"all_reduce"> {
  let summary = "Starts an in-place all-reduce of a buffer over the ranks";
  let description = [{
    Issues, on the rank's communicator, the all-reduce (`reduction` "sum" or
    "avg", the sum divided by the number of ranks) of the whole buffer, in
    place, and returns at once: the communication runs while later steps
    do. Nothing may read or write the buffer until the `dlexec.wait` on it
    (the lowering places the wait before the buffer's first later use). On
    one rank (no communicator) it is the identity. Every rank issues its
    all-reduces in the same order (the program order).
    ```mlir
    dlexec.all_reduce %bucket {reduction = "avg"} : memref<1024xf32>
    ...
    dlexec.wait %bucket : memref<1024xf32>
    ```
  }];
  let arguments = (ins AnyMemRef:$buffer, StrAttr:$reduction);
  let assemblyFormat = "$buffer attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Exec_WaitOp : Exec_Op<"wait"> {
  let summary = "Waits for the collective in flight on a buffer";
  let description = [{
    Blocks the step until the `dlexec.all_reduce` issued on `buffer` has
    finished; an error of the communication (a rank failed, the timeout
    passed) fails the step there.
    `dlexec.wait %bucket : memref<1024xf32>`
  }];
  let arguments = (ins AnyMemRef:$buffer);
  let assemblyFormat = "$buffer attr-dict `:` type($buffer)";
}

def Exec_KernelOp : Exec_Op<"kernel", [AttrSizedOperandSegments, IsolatedFromAbove,
                                       SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "A generated loop-nest kernel whose body is arith/math ops";
  let description = [{
    Same structure as `linalg.generic` on memrefs: one iteration space,
    `iterator_types` (`parallel` or `reduction`) per loop, one affine
    `indexing_maps` entry per operand (inputs then outputs) mapping loop
    indices to element indices. The body receives one scalar per input
    element and the current value of each output element, and yields the
    new output values. For a reduction, `init` gives each output's initial
    value (the kernel writes it before accumulating). `dlexec.index` in the
    body gives a loop index. Codegen maps parallel loops to threads and runs
    reduction loops inside a thread. The body is isolated from above: it uses
    only its block arguments and ops defined inside it (constants included).
    ```mlir
    dlexec.kernel @fused_add_relu ins(%a, %b : memref<64x128xf32>, memref<128xf32>)
        outs(%c : memref<64x128xf32>) attributes {
          indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
          iterator_types = ["parallel", "parallel"]} {
    ^bb0(%x: f32, %y: f32, %out: f32):
      %s = arith.addf %x, %y : f32
      %z = arith.constant 0.0 : f32
      %r = arith.maximumf %s, %z : f32
      dlexec.yield %r : f32
    }
    ```
    A reduction kernel may carry an `epilogue` region (reduction epilogue
    fusion, as XLA's reduction / multi-output fusion does): evaluated once
    per output element, after the reduction loops, by the thread that
    stores the reduced values. Its block has one argument per operand, like
    the body: an input's element at its map (only inputs whose map uses no
    reduction loop may be read there), the reduced (stored) value of each
    output the body yields, and the current value of each other output. It
    yields the values of the last E outputs (the epilogue outputs); the
    body then yields (and `init` initializes) only the first ones.
    ```mlir
    dlexec.kernel @var_rsqrt ins(%d, %g : memref<4x8xf32>, memref<8xf32>)
        outs(%v, %r : memref<8xf32>, memref<8xf32>) attributes {
          indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                           affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (j)>],
          init = [0.0 : f32], iterator_types = ["reduction", "parallel"]} {
    ^bb0(%x: f32, %gamma: f32, %acc: f32, %unused: f32):
      %sq = arith.mulf %x, %x : f32
      %s = arith.addf %acc, %sq : f32
      dlexec.yield %s : f32
    } epilogue {
    ^bb0(%x: f32, %gamma: f32, %var: f32, %old: f32):
      %rstd = math.rsqrt %var : f32
      %scale = arith.mulf %rstd, %gamma : f32
      dlexec.yield %scale : f32
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Variadic<AnyMemRef>:$inputs,
                       Variadic<AnyMemRef>:$outputs,
                       AffineMapArrayAttr:$indexing_maps,
                       StrArrayAttr:$iterator_types,
                       OptionalAttr<ArrayAttr>:$init);
  let regions = (region SizedRegion<1>:$body, MaxSizedRegion<1>:$epilogue);
  let assemblyFormat = [{
    $sym_name (`ins` `(` $inputs^ `:` type($inputs) `)`)?
    `outs` `(` $outputs `:` type($outputs) `)` attr-dict-with-keyword $body
    (`epilogue` $epilogue^)?
  }];
  let extraClassDeclaration = [{
    /// The number E of outputs the epilogue region writes (the last E
    /// outputs); 0 without an epilogue.
    unsigned getNumEpilogueOutputs() {
      if (getEpilogue().empty())
        return 0;
      return getEpilogue().front().getTerminator()->getNumOperands();
    }
    /// The number of outputs the body yields (accumulates, for a reduction):
    /// the first outputs, all but the epilogue's.
    unsigned getNumBodyOutputs() {
      return getOutputs().size() - getNumEpilogueOutputs();
    }
  private:
    /// The verifier's rules for the epilogue region (|maps|: the indexing
    /// maps) and for the ops of the body or the epilogue.
    ::mlir::LogicalResult verifyEpilogue(::llvm::ArrayRef<::mlir::AffineMap> maps);
    ::mlir::LogicalResult verifyBodyOps(::mlir::Block &body);
  public:
  }];
  let hasVerifier = 1;
}

def Exec_MultiTensorKernelOp : Exec_Op<"multi_tensor_kernel", [
    AttrSizedOperandSegments, IsolatedFromAbove,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "One elementwise body applied to the elements of many tensors";
  let description = [{
    A horizontal fusion of all-parallel `dlexec.kernel`s with the same body
    over tensors of different shapes (the optimizer updates of a step, one
    per parameter), as PyTorch's `foreach` / fused Adam and NVIDIA apex's
    `multi_tensor_apply` do: one launch over the concatenated element
    ranges of the tensors, each thread finding its tensor from the offsets
    of the ranges and reading and writing it through that tensor's
    operands. `sizes` gives the elements of each of the N tensors. The
    first `num_shared` inputs are single-element operands every tensor
    reads (a step count, a learning rate); then come the per-tensor inputs,
    tensor by tensor (R each); the outputs are per-tensor too, tensor by
    tensor. Every per-tensor operand of tensor t is a dense buffer of
    sizes[t] elements, read and written at the same flat index. The body is
    the body of one such kernel over flat indices: block arguments for the
    shared inputs, the R per-tensor inputs and the outputs, in that order;
    it yields one value per output role and uses no `dlexec.index`. Results
    equal those of the N kernels run one after the other: each element is
    computed by the same operations in the same order (the pass that forms
    it, `--dlexec-multi-tensor`, groups only kernels whose tensors are
    disjoint).
    ```mlir
    dlexec.multi_tensor_kernel @step_update ins(%lr, %w, %dw, %b, %db
        : memref<f32>, memref<4x8xf32>, memref<4x8xf32>, memref<8xf32>, memref<8xf32>)
        outs(%w, %b : memref<4x8xf32>, memref<8xf32>)
        attributes {num_shared = 1 : i64, sizes = array<i64: 32, 8>} {
    ^bb0(%rate: f32, %p: f32, %g: f32, %out: f32):
      %u = arith.mulf %rate, %g : f32
      %n = arith.subf %p, %u : f32
      dlexec.yield %n : f32
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Variadic<AnyMemRef>:$inputs,
                       Variadic<AnyMemRef>:$outputs,
                       DenseI64ArrayAttr:$sizes, I64Attr:$num_shared);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name (`ins` `(` $inputs^ `:` type($inputs) `)`)?
    `outs` `(` $outputs `:` type($outputs) `)` attr-dict-with-keyword $body
  }];
  let extraClassDeclaration = [{
    /// The number of tensors N (the length of `sizes`).
    unsigned getNumTensors() { return getSizes().size(); }
    /// The per-tensor inputs of each tensor (R).
    unsigned getNumInputRoles() {
      return getNumTensors() == 0 ? 0
          : (getInputs().size() - getNumShared()) / getNumTensors();
    }
    /// The outputs of each tensor.
    unsigned getNumOutputRoles() {
      return getNumTensors() == 0 ? 0 : getOutputs().size() / getNumTensors();
    }
  }];
  let hasVerifier = 1;
}

def Exec_IndexOp : Exec_Op<"index", [Pure]> {
  let summary = "The current index of loop `dim` inside a dlexec.kernel body";
  let description = "`%i = dlexec.index 1 : index`";
  let arguments = (ins I64Attr:$dim);
  let results = (outs Index:$result);
  let assemblyFormat = "$dim attr-dict `:` type($result)";
}

def Exec_YieldOp : Exec_Op<"yield", [Pure, Terminator, ReturnLike,
                                     ParentOneOf<["KernelOp",
                                                  "MultiTensorKernelOp"]>]> {
  let summary = "Yields the new output values of a dlexec.kernel iteration";
  let description = "`dlexec.yield %r : f32`";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, ::mlir::ValueRange()); }]>];
}

def Exec_LibraryCallOp : Exec_Op<"library_call", [AttrSizedOperandSegments]> {
  let summary = "A call into cuBLASLt / cuDNN (CUDA) or oneDNN (host)";
  let description = [{
    `callee` is a row of `runtime/schema/LibraryCalls.def`; the verifier
    checks the operand count, shapes, dtypes and attributes and derives the
    parameters the package stores (`getParams`). The calls:
    - `gemm`: ins(A, B[, C]) outs(Y); attributes `trans_a`, `trans_b`,
      `alpha`, `beta`; Y = alpha op(A) op(B) + beta C (C broadcast from [N]
      or [M, N]; when C is absent and beta != 0, Y is accumulated into).
    - `batched_gemm`: ins(A, B) outs(Y), row-major:
      Y[p] = op(A[p]) op(B[p]) for every index p of the batch dims `batch`
      (DenseI64Array), where matrix A[p] is [m, k] ([k, m] with `trans_a`)
      at element offset sum_i p_i * stride_a[i] of A, B[p] is [k, n] ([n, k]
      with `trans_b`) at sum_i p_i * stride_b[i] of B (stride 0: broadcast
      along that dim), and Y is contiguous [prod(batch) * m, n]; `m`, `n`,
      `k` (i64) give the sizes of op(A[p]) and op(B[p]).
    - `conv2d_forward`: ins(X, W[, B]) outs(Y)
    - `conv2d_backward_data`: ins(dY, W) outs(dX)
    - `conv2d_backward_filter`: ins(X, dY) outs(dW)
    - `conv3d_forward`, `conv3d_backward_data`, `conv3d_backward_filter`:
      the same over rank-5 NCDHW operands (3 strides and dilations, 6 pads)
      with `strides`, `pads` [top, left, bottom, right], `dilations`, `group`.
    ```mlir
    dlexec.library_call "gemm" ins(%a, %b : memref<64x784xf32>, memref<128x784xf32>)
        outs(%y : memref<64x128xf32>) {trans_b = true, alpha = 1.0 : f32, beta = 0.0 : f32}
    ```
  }];
  let arguments = (ins StrAttr:$callee, Variadic<AnyMemRef>:$inputs,
                       Variadic<AnyMemRef>:$outputs);
  let assemblyFormat = [{
    $callee `ins` `(` $inputs `:` type($inputs) `)`
    `outs` `(` $outputs `:` type($outputs) `)` attr-dict
  }];
  let extraClassDeclaration = [{
    /// The callee's row in the library-call table (LibraryCalls.def), or
    /// null for an unknown callee.
    const ::dlc::exec::LibraryCallInfo *getCallInfo();
    /// The call's parameters, as the package stores them. Emits the
    /// verifier's error and fails when the op breaks a rule of its row.
    ::mlir::FailureOr<::dlc::exec::LibraryCallParams> getParams();
  }];
  let hasVerifier = 1;
}

def Exec_BuiltinKernelOp : Exec_Op<"builtin_kernel", [AttrSizedOperandSegments]> {
  let summary = "An instance of a hand-written kernel template (pooling and the like)";
  let description = [{
    `template` names a row of `runtime/schema/BuiltinTemplates.def`, a kernel
    template that codegen instantiates for both targets with this op's shapes
    and attributes baked in. `getParams()` reads the family's attributes into
    typed parameters (`runtime/schema/BuiltinParams.h`) and checks the rules
    they alone decide; the verifier calls it and checks the row's operand
    counts and the family's shapes, dtypes and the attributes against the
    operands, and codegen builds from the same parameters:
    - `max_pool2d`: ins(X) outs(Y); `average_pool2d`: ins(X) outs(Y)
    - `max_pool2d_grad`: ins(X, dY) outs(dX) (X is the forward input);
      `average_pool2d_grad`: ins(X, dY) outs(dX)
    - `max_pool2d_indices`: ins(X) outs(I), I i32 of the pooled shape (the
      flat index ih * W + iw of each window's first maximum);
      `max_pool2d_indices_grad`: ins(I, dY) outs(dX)
      all six with the attributes of the dlgraph pooling op: `kernel_shape`,
      `strides`, `pads` [top, left, bottom, right], `dilations`, and
      `ceil_mode = true`, `count_include_pad = true` (BoolAttr) when set.
    - `softmax`, `log_softmax`: ins(X) outs(Y), `axis` (i64, in [-rank, rank)).
    - `layer_norm`: ins(X [..., N], scale [N], bias [N]) outs(Y, mean, rstd)
      over the last axis; `layer_norm_train` also outs(centered,
      normalized); `epsilon` (f32, >= 0).
    - `softmax_cross_entropy`: ins(logits [..., C] f32, labels [...] i64)
      outs(loss, rank 0): mean cross-entropy (dlgraph.softmax_cross_entropy),
      `label_smoothing` (f32 in [0, 1], default 0).
    - `softmax_cross_entropy_grad`: ins(logits, labels, loss_grad rank 0)
      outs(dlogits) (dlgraph.softmax_cross_entropy_grad), `label_smoothing`.
    - `gather`: ins(data, indices i32/i64) outs(Y); `gather_grad`:
      ins(indices, dY) outs(dData); `gather_elements`, `gather_elements_grad`
      likewise; all with `axis` (i64, >= 0). Out-of-range indices read 0 and
      add nothing; the gradients zero dData and accumulate in index order
      (deterministic, no atomics).
    - `dropout`: ins(X, step rank-0 f32) outs(Y, mask i1), `ratio` (f32),
      `seed` (i64): Philox-4x32-10 with counter (element, step) and key seed;
      kept elements scaled by 1 / (1 - ratio).
    - `resize`: ins(X) outs(Y); `resize_grad`: ins(dY) outs(dX) (a
      deterministic scatter-add); attributes of dlgraph.resize (`mode`,
      `coordinate_transformation_mode`, `nearest_mode`, `scales`).
    ```mlir
    dlexec.builtin_kernel @k7 "max_pool2d" ins(%x : memref<8x16x8x8xf32>) outs(%y : memref<8x16x4x4xf32>)
        {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrAttr:$template_name,
                       Variadic<AnyMemRef>:$inputs, Variadic<AnyMemRef>:$outputs);
  let assemblyFormat = [{
    $sym_name $template_name `ins` `(` $inputs `:` type($inputs) `)`
    `outs` `(` $outputs `:` type($outputs) `)` attr-dict
  }];
  let extraClassDeclaration = [{
    /// The template's row (BuiltinTemplates.def), or null for an unknown
    /// template.
    const ::dlc::exec::BuiltinTemplateInfo *getTemplateInfo();
    /// The template family's parameters, read from the attributes
    /// (runtime/schema/BuiltinParams.h). Emits the verifier's error and
    /// fails for an unknown template or an attribute that breaks a rule of
    /// its own; the rules that relate attributes to the operands are the
    /// verifier's.
    ::mlir::FailureOr<::dlc::exec::BuiltinKernelParams> getParams();
  }];
  let hasVerifier = 1;
}

#endif
