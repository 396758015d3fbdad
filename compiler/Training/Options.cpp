//===- Options.cpp - the training phase's options, declared once ----------===//
#include "compiler/Training/Passes.h"

using namespace dlc;

void dlc::PrecisionOptions::bindOptions(OptionsBinder &b) {
  b.opt("precision", precision,
        "Compute precision of the training step and forward: fp32, bf16 or "
        "fp16 (mixed precision: f32 master weights, GEMM and convolution in "
        "the low type, reductions and the loss in f32; "
        "docs/mixed-precision.md; default {default})");
  b.opt("loss-scale", lossScale,
        "Loss scaling for --train: dynamic (torch.cuda.amp.GradScaler's "
        "rules), none, or a number (a static scale); default dynamic with "
        "--precision fp16, none otherwise",
        llvm::cl::value_desc("dynamic|none|N"));
  b.opt("loss-scale-init", lossScaleInit,
        "Initial dynamic loss scale (default {default})");
  b.opt("loss-scale-growth-factor", lossScaleGrowthFactor,
        "Dynamic loss scale growth factor (default {default})");
  b.opt("loss-scale-backoff-factor", lossScaleBackoffFactor,
        "Dynamic loss scale backoff factor on inf/NaN gradients (default "
        "{default})");
  b.opt("loss-scale-growth-interval", lossScaleGrowthInterval,
        "Finite steps between loss scale growths (default {default})");
}

void dlc::RematOptions::bindOptions(OptionsBinder &b) {
  b.opt("remat", remat,
        "Activation checkpointing for --train: none, sqrt (Chen et al. "
        "2016's sqrt(n) segments) or auto (recompute the cheapest "
        "activations to a memory target; docs/remat.md; default {default})",
        llvm::cl::value_desc("none|sqrt|auto"));
  bindMemoryBudget(b, memoryBudget);
  // The target the memory-budget search sets: dlgraph-remat's own option.
  if (!b.isGlobal())
    b.opt("arena-target", rematArenaTarget,
          "auto: the simulated activation peak to reach, in bytes (0: drop "
          "everything held that can be recomputed)");
}

void dlc::RematOptions::bindMemoryBudget(OptionsBinder &b,
                                         std::string &memoryBudget) {
  b.opt("memory-budget", memoryBudget,
        "With --train: the planned peak memory (persistent + inputs + arena "
        "+ workspace) the step must fit, in bytes or with KiB, MiB or GiB; "
        "recomputes the activations that add the fewest FLOPs (implies "
        "--remat auto); an unreachable budget is an error naming the "
        "smallest reachable one",
        llvm::cl::value_desc("SIZE"));
}

