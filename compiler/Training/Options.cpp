//===- Options.cpp - the training phase's options, declared once ----------===//
#include "compiler/Training/Passes.h"

#include "compiler/Support/ByteSize.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <cmath>

using namespace dlc;

namespace {
/// Whether |v| is positive and finite once stored as the f32 the step
/// keeps it in.
bool positiveF32(double v) { return v > 0 && std::isfinite(float(v)); }
} // namespace

std::string dlc::PrecisionOptions::check() const {
  if (!llvm::is_contained(supportedPrecisions(), precision))
    return "unknown --precision '" + precision +
           "'; supported: " + llvm::join(supportedPrecisions(), ", ");
  double v = 0;
  if (!lossScale.empty() && lossScale != "dynamic" && lossScale != "none" &&
      (llvm::StringRef(lossScale).getAsDouble(v) || !positiveF32(v)))
    return "--loss-scale must be dynamic, none or a positive number, got '" +
           lossScale + "'";
  if (!positiveF32(lossScaleInit))
    return "--loss-scale-init must be positive and finite in f32, got " +
           formatOptionValue(lossScaleInit);
  if (!(lossScaleGrowthFactor > 1) || !std::isfinite(float(lossScaleGrowthFactor)))
    return "--loss-scale-growth-factor must be greater than 1, got " +
           formatOptionValue(lossScaleGrowthFactor);
  if (!(lossScaleBackoffFactor > 0 && lossScaleBackoffFactor < 1))
    return "--loss-scale-backoff-factor must be in (0, 1), got " +
           formatOptionValue(lossScaleBackoffFactor);
  if (lossScaleGrowthInterval < 1 || lossScaleGrowthInterval > (int64_t(1) << 24))
    return "--loss-scale-growth-interval must be in [1, 2^24] (the tracker "
           "counts in f32), got " +
           std::to_string(lossScaleGrowthInterval);
  return "";
}

std::string dlc::RematOptions::check() const {
  if (!llvm::is_contained(supportedRematModes(), remat))
    return "unknown --remat '" + remat +
           "'; supported: " + llvm::join(supportedRematModes(), ", ");
  if (!memoryBudget.empty()) {
    if (!parseByteSize(memoryBudget))
      return "--memory-budget must be a size in bytes, optionally with KiB, "
             "MiB or GiB (e.g. 536870912, 512MiB, 1.5GiB), got '" +
             memoryBudget + "'";
    if (remat == "sqrt")
      return "--memory-budget chooses what to recompute itself (--remat "
             "auto); it cannot be combined with --remat sqrt";
  }
  if (rematArenaTarget < 0)
    return "arena-target must be >= 0 bytes, got " +
           std::to_string(rematArenaTarget);
  return "";
}

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

