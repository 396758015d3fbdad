//===- Passes.td - LayerNorm row kernels -----------------------------------===//
#ifndef DLC_COMPILER_LOWERING_LAYERNORM_PASSES_TD
#define DLC_COMPILER_LOWERING_LAYERNORM_PASSES_TD

include "mlir/Pass/PassBase.td"

def FuseLayerNormPass : Pass<"dlexec-fuse-layer-norm", "mlir::ModuleOp"> {
  let summary = "Replace the kernels of a decomposed LayerNorm over the last "
                "axis with one layer_norm builtin kernel";
  let description = [{
    The importer decomposes LayerNormalization into dlgraph reductions and
    elementwise ops (autodiff works on those), and after elementwise and
    reduction-epilogue fusion a LayerNorm over the last axis of x [R..., N]
    is four kernels and six passes over the tensor:

    1. `mean = sum(x * c)` over the last loop (c = 1/N), into [R..., 1];
    2. `d = x - mean`, all-parallel;
    3. `var = sum(d * d * c)` with the epilogue `rstd = rsqrt(var + eps)`;
    4. `y = d * rstd * scale + bias`, all-parallel, scale and bias [N].

    This pass recognises that chain by the kernels' structure (iterator
    types, indexing maps, the arithmetic of their bodies) and replaces it
    with one `dlexec.builtin_kernel "layer_norm"` (x, scale, bias -> y,
    mean, rstd) that reads x once and writes y once (codegen: one warp or
    block per row, the row in registers, as PyTorch's and Apex's layer_norm
    kernels). The builtin computes the same two-pass formula with the same
    roundings, so the host device's results keep their bits; the CUDA
    kernel's sums combine in another order (last bits, as any reduction).

    A training step keeps d and u = d * rstd for its backward, so there
    the chain is five kernels: 4 is `u = d * rstd` and 5 is
    `y = u * scale + bias`. That form becomes one
    `dlexec.builtin_kernel "layer_norm_train"` (x, scale, bias -> y, mean,
    rstd, d, u), which writes d and u from the same pass over the row (the
    benchmark GPT's train_step: 9 LayerNorms, 229 -> 193 kernel launches).

    It folds only when: the reductions run over the last loop only; the
    constant c is 1/N rounded to the element type (f32 or f64); `var` is
    read by nothing else, nor is `d` in the four-kernel form (mean and rstd
    may have other readers: the builtin still writes them; in the
    five-kernel form d and u may have readers after the last kernel); the
    affine is exactly ((d * rstd) * scale) + bias, or u * scale + bias
    after u = d * rstd (operands of each op in either order); no output
    shares memory with an input or another output; and no op between the
    first and the last kernel writes x, scale or bias or touches an output.
    The builtin takes the place of the last kernel.
    Runs after `--dlexec-fuse-reduction-epilogues` and before
    `--dlexec-plan-memory`.

    Before:
    ```mlir
    dlexec.kernel @mean ins(%x) outs(%m) { acc + x * 9.765625E-4 }
    dlexec.kernel @sub ins(%x, %m) outs(%d) { x - m }
    dlexec.kernel @var ins(%d) outs(%v, %r) { acc + d * d * 9.765625E-4 }
        epilogue { rsqrt(v + 1.0E-5) }
    dlexec.kernel @affine ins(%b, %w, %d, %r) outs(%y) { d * r * w + b }
    ```
    After:
    ```mlir
    dlexec.builtin_kernel @affine "layer_norm" ins(%x, %w, %b)
        outs(%y, %m, %r) {epsilon = 1.0E-5 : f32}
    ```
  }];
  let dependentDialects = ["::dlc::exec::ExecDialect"];
}

#endif
