//===- Passes.td - rematerialization on dlexec ----------------------------===//
#ifndef DLC_COMPILER_LOWERING_REMAT_PASSES_TD
#define DLC_COMPILER_LOWERING_REMAT_PASSES_TD

include "mlir/Pass/PassBase.td"

def RematPersistentKernelsPass
    : Pass<"dlexec-remat-persistent-kernels", "mlir::ModuleOp"> {
  let summary = "Recompute a low-precision copy of persistent variables "
                "before each later reader instead of keeping it";
  let description = [{
    A kernel whose every input is a persistent variable (a parameter, an
    optimizer state) computes something that can be recomputed at any
    point of the step for the cost of reading those variables, while
    keeping its result costs arena bytes for as long as its last reader is
    away. The typical case is the bf16/fp16 cast of a weight under
    `--precision bf16|fp16`: one cast is shared by the forward gemm and the
    backward gemm of the input gradient, so the low-precision copy of every
    weight is live from the forward pass to the backward pass, across the
    step's peak. This pass gives each later reader its own copy, computed
    right before it (rematerialization of an op whose operands stay live
    anyway, as XLA's rematerialization pass does for cheap instructions;
    Chen et al. 2016 for recomputation in training): one extra launch per
    extra reader, the same values bit for bit.

    A kernel is a candidate when its iterators are all parallel (no
    reduction), it has one output, an arena buffer (`dlexec.alloc`, not a
    view) of a float type narrower than one of its inputs (a low-precision
    copy, whose bytes are a weight's; a kernel that only rearranges or
    compares persistent state, such as a causal mask, would cost a launch
    per reader for a few bytes) that no other op writes, every input is (a
    reshape of) a `dlexec.variable_ref`, and every reader of the output
    reads it as an input of a kernel, builtin kernel, library call or
    multi-tensor kernel.
    A later reader gets its copy only if no op between the kernel and that
    reader writes one of the variables the kernel reads (an optimizer
    update scheduled in between), so the copy computes the same values.

    Assumes unplanned buffers (run before `--dlexec-plan-memory`).

    Before:
    ```mlir
    %w = dlexec.variable_ref @fc.weight : memref<128x32xf32>
    %c = dlexec.alloc : memref<128x32xbf16>
    dlexec.kernel @k1_cast ins(%w : ...) outs(%c : ...) {...}
    dlexec.library_call "gemm" ins(%x, %c : ...) outs(%y : ...)   // forward
    ...
    dlexec.library_call "gemm" ins(%dy, %c : ...) outs(%dx : ...) // backward
    ```
    After:
    ```mlir
    dlexec.kernel @k1_cast ins(%w : ...) outs(%c : ...) {...}
    dlexec.library_call "gemm" ins(%x, %c : ...) outs(%y : ...)
    ...
    %c2 = dlexec.alloc : memref<128x32xbf16>
    dlexec.kernel @k1_cast_remat1 ins(%w : ...) outs(%c2 : ...) {...}
    dlexec.library_call "gemm" ins(%dy, %c2 : ...) outs(%dx : ...)
    ```
  }];
  let dependentDialects = ["dlc::exec::ExecDialect"];
}

#endif
