//===- Passes.td - multi-tensor kernels ------------------------------------===//
#ifndef DLC_COMPILER_LOWERING_MULTITENSOR_PASSES_TD
#define DLC_COMPILER_LOWERING_MULTITENSOR_PASSES_TD

include "mlir/Pass/PassBase.td"

def MultiTensorPass : Pass<"dlexec-multi-tensor", "mlir::ModuleOp"> {
  let summary = "Merge same-bodied updates of persistent tensors into "
                "dlexec.multi_tensor_kernel launches";
  let description = [{
    Horizontal fusion of the per-parameter update kernels of a step (one
    `dlexec.kernel` per parameter for SGD / Adam / AdamW, the gradient
    accumulators, BatchNorm running statistics) into one
    `dlexec.multi_tensor_kernel` per group, as PyTorch's `foreach` and
    fused optimizers and NVIDIA apex's `multi_tensor_apply` launch one
    kernel over a list of tensors.

    A kernel is a candidate when its iterators are all parallel, its body
    reads no `dlexec.index`, every output is a persistent variable
    (`dlexec.variable_ref`, through reshapes), and every operand is either
    indexed by the identity map of the iteration space (a per-tensor
    operand, a whole dense buffer: a variable, an arena buffer or an input)
    or, for an input, by a map without results (a single element every
    tensor reads: the step count, a scheduled learning rate). Candidates
    join a group when their bodies are equivalent (same ops, same constants:
    different hyper-parameters, e.g. `--no-weight-decay` groups, form
    different groups), their operand element types match and they read the
    same shared operands.

    A group is merged where its last member is; the earlier members move
    down to it. The walk closes a group (it takes no further members)
    before any op that reads or writes what a member writes or writes what
    a member reads, and before a member that would touch another member's
    buffers, so the merged kernel computes what the members computed, each
    element by the same operations in the same order (bit for bit).
    The arena buffers members read (gradients) stay live until the merge
    point: a member joins a group only if that keeps the live arena bytes
    at every position of the schedule (buffers from their alloc to their
    last use, the deferrals of earlier groups included) at or below the
    schedule's own peak, so that the updates run where the gradients are
    ready while memory is tight and in few launches where it is not (the
    planner's arena may still differ by fragmentation). `max-pending-bytes`
    (default 4 MiB) also closes a group once the arena buffers its members
    read exceed it (0: no limit), which bounds what the planner must fit
    around the held gradients (without it, ResNet-18 under `--remat auto`
    planned 258 -> 300 MiB). Each dlexec.func (a pipeline stage's step) is grouped on
    its own.

    Assumes unplanned buffers (run before `--dlexec-plan-memory`);
    guarantees the same results. A group of one kernel is left as it is.

    Before (two updates, interleaved with the backward pass):
    ```mlir
    dlexec.kernel @k1 ins(%w, %dw, %lr : memref<4x8xf32>, memref<4x8xf32>, memref<f32>)
        outs(%w : memref<4x8xf32>) {...} { p - lr * g }
    dlexec.library_call "gemm" ...
    dlexec.kernel @k2 ins(%b, %db, %lr : memref<8xf32>, memref<8xf32>, memref<f32>)
        outs(%b : memref<8xf32>) {...} { p - lr * g }
    ```
    After:
    ```mlir
    dlexec.library_call "gemm" ...
    dlexec.multi_tensor_kernel @k1_multi_tensor ins(%lr, %w, %dw, %b, %db : ...)
        outs(%w, %b : ...) attributes {num_shared = 1, sizes = array<i64: 32, 8>} {...}
    ```
  }];
  let options = [
    Option<"maxPendingBytes", "max-pending-bytes", "int64_t",
           /*default=*/"4194304",
           "close a group once the arena buffers its members read exceed "
           "this many bytes (0: no limit)">,
  ];
  let dependentDialects = ["dlc::exec::ExecDialect"];
}

#endif
