//===- DeviceModel.h - hardware figures for the cost model -------*- C++ -*-===//
//
// The device model the pipeline partitioner costs ops with (docs/pipeline.md,
// "Partitioning and the cost model"): peak math rates, memory bandwidth and
// the link between pipeline stages.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_PARTITION_COST_DEVICEMODEL_H
#define DLC_COMPILER_PARTITION_COST_DEVICEMODEL_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace dlc {

/// Hardware figures of one device; every field is > 0.
struct DeviceModel {
  std::string name;            ///< "h100", "host", or the JSON file's path
  double peakFp32Flops = 0;    ///< fp32 math peak, FLOP/s
  double peakHalfFlops = 0;    ///< bf16/fp16 math peak, FLOP/s
  double memoryBandwidth = 0;  ///< device memory bandwidth, bytes/s
  double linkBandwidth = 0;    ///< stage-to-stage link, one direction, bytes/s
  double linkLatency = 0;      ///< stage-to-stage link latency, seconds
  double allReduceBusBandwidth = 0; ///< all-reduce bus bandwidth, bytes/s
};

/// The built-in model names `--device-model` accepts besides FILE.json.
llvm::ArrayRef<llvm::StringLiteral> builtinDeviceModels();

/// The NVIDIA H100 SXM5 model (figures and sources in docs/pipeline.md).
DeviceModel h100DeviceModel();

/// This machine's measured figures for one core (one pipeline stage per
/// core): test/benchmarks/host_device_model.py, figures and how each was
/// measured in docs/pipeline.md.
DeviceModel hostDeviceModel();

/// Parses a device model from JSON text with exactly the keys
/// peak_fp32_flops, peak_half_flops, memory_bandwidth, link_bandwidth,
/// link_latency, all_reduce_busbw (numbers > 0, units as in DeviceModel).
/// |name| names the source in errors.
llvm::Expected<DeviceModel> parseDeviceModelJSON(llvm::StringRef text,
                                                  llvm::StringRef name);

/// Resolves `--device-model`: a built-in name, or a path ending in ".json".
llvm::Expected<DeviceModel> loadDeviceModel(llvm::StringRef spec);

} // namespace dlc

#endif // DLC_COMPILER_PARTITION_COST_DEVICEMODEL_H
