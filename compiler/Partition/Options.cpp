//===- Options.cpp - the partitioning phase's options, declared once ------===//
#include "compiler/Partition/Passes.h"

#include "compiler/Support/ByteSize.h"
#include "runtime/schema/PipelineSchedule.h"
#include "llvm/ADT/StringExtras.h"

using namespace dlc;

std::string dlc::PartitionOptions::check() const {
  if (pipelineStages < 0)
    return "--pipeline-stages must be >= 1, got " +
           std::to_string(pipelineStages);
  if (!llvm::is_contained(builtinDeviceModels(), deviceModel) &&
      !llvm::StringRef(deviceModel).ends_with(".json"))
    return "unknown --device-model '" + deviceModel +
           "'; supported: " + llvm::join(builtinDeviceModels(), ", ") +
           ", FILE.json";
  if (microbatches < 1)
    return "--microbatches must be >= 1, got " + std::to_string(microbatches);
  if (std::string error; !exec::parsePipelineSchedule(schedule, &error))
    return "--schedule: " + error;
  if (!bucketSize.empty()) {
    std::optional<int64_t> size = parseByteSize(bucketSize);
    if (!size || *size < 1)
      return "--bucket-size must be a positive size in bytes, optionally with "
             "KiB, MiB or GiB (e.g. 26214400, 25MiB), got '" +
             bucketSize + "'";
  }
  return "";
}

void dlc::PartitionOptions::bindOptions(OptionsBinder &b) {
  using llvm::cl::value_desc;
  b.opt("data-parallel", dataParallel,
        "With --train: a step for data-parallel training on any number of "
        "ranks (dlrt launch, torchrun, mpirun): the gradients are averaged "
        "over the ranks with all-reduces in buckets, issued while the "
        "backward runs, as PyTorch DDP; docs/distributed.md");
  b.opt("bucket-size", bucketSize,
        "With --data-parallel: the most bytes of one gradient bucket, in "
        "bytes or with KiB, MiB or GiB (default 25MiB, DDP's)",
        value_desc("SIZE"));
  b.opt("pipeline-stages", pipelineStages,
        "With --train: split the training step into S pipeline stages (by a "
        "roofline cost model, or --pipeline-split); the package runs on S x "
        "D ranks under a launcher, each stage's forward and backward per "
        "micro-batch in --schedule order (docs/pipeline.md)",
        value_desc("S"));
  b.opt("device-model", deviceModel,
        "With --pipeline-stages: the device the cost model assumes: h100 "
        "(H100 SXM5 datasheet), host (this machine, one core per stage, "
        "measured) or FILE.json (default {default})",
        value_desc("h100|host|FILE.json"));
  b.opt("pipeline-split", pipelineSplit,
        "With --pipeline-stages: the ONNX node names ending each stage but "
        "the last, comma-separated, instead of the cost model's split",
        value_desc("NODE[,NODE...]"));
  b.opt("microbatches", microbatches,
        "With --pipeline-stages: micro-batches per step; the global batch is "
        "M x --batch-size",
        value_desc("M"));
  b.opt("schedule", schedule,
        "With --pipeline-stages: the pipeline schedule, gpipe (all "
        "forwards, then all backwards) or 1f1b (PipeDream-Flush; default)",
        value_desc("gpipe|1f1b"));
}

