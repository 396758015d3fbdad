//===- DeviceModel.cpp - hardware figures for the cost model --------------===//

#include "compiler/Partition/DeviceModel.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace llvm;

namespace dlc {

ArrayRef<StringLiteral> builtinDeviceModels() {
  static constexpr StringLiteral names[] = {"h100", "host"};
  return names;
}

DeviceModel h100DeviceModel() {
  // NVIDIA H100 Tensor Core GPU datasheet, SXM5 column (dense figures).
  DeviceModel m;
  m.name = "h100";
  m.peakFp32Flops = 494e12;  // TF32 tensor core (fp32 matmuls via cuBLASLt)
  m.peakHalfFlops = 989e12;  // BF16/FP16 tensor core, dense
  m.memoryBandwidth = 3.35e12; // HBM3
  m.linkBandwidth = 450e9;   // NVLink 4: 900 GB/s total, 450 GB/s each way
  m.linkLatency = 5e-6;      // assumed per-transfer launch + link latency
  m.allReduceBusBandwidth = 450e9;
  return m;
}

DeviceModel hostDeviceModel() {
  // Measured on this project's 2-core x86 machine, one core per stage
  // (OMP_NUM_THREADS=1, as a host pipeline runs one thread per rank), by
  // test/benchmarks/host_device_model.py on 2026-11-27; how each figure is
  // measured: docs/pipeline.md, "Device models".
  DeviceModel m;
  m.name = "host";
  m.peakFp32Flops = 153e9;   // f32 1024^3 GEMM, dlrt run --repeat, fastest
  m.peakHalfFlops = 98.2e9;  // the same GEMM in bf16
  m.memoryBandwidth = 15.9e9; // f32 add of 64 Mi elements, 3 x 256 MiB moved
  m.linkBandwidth = 1.42e9;  // Gloo loopback, 2-rank all-reduce busbw, best
  m.linkLatency = 2.2e-3;    // fastest 2-rank all-reduce of <= 16 KiB
  m.allReduceBusBandwidth = 1.42e9;
  return m;
}

namespace {
struct Field {
  StringLiteral key;
  double DeviceModel::*member;
};
constexpr Field kFields[] = {
    {"peak_fp32_flops", &DeviceModel::peakFp32Flops},
    {"peak_half_flops", &DeviceModel::peakHalfFlops},
    {"memory_bandwidth", &DeviceModel::memoryBandwidth},
    {"link_bandwidth", &DeviceModel::linkBandwidth},
    {"link_latency", &DeviceModel::linkLatency},
    {"all_reduce_busbw", &DeviceModel::allReduceBusBandwidth},
};

std::string supportedKeys() {
  std::string s;
  for (const Field &f : kFields)
    s += (s.empty() ? "" : ", ") + f.key.str();
  return s;
}
} // namespace

Expected<DeviceModel> parseDeviceModelJSON(StringRef text, StringRef name) {
  Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return createStringError(inconvertibleErrorCode(),
                             "device model '%s': malformed JSON: %s",
                             name.str().c_str(),
                             toString(parsed.takeError()).c_str());
  const json::Object *obj = parsed->getAsObject();
  if (!obj)
    return createStringError(inconvertibleErrorCode(),
                             "device model '%s': expected a JSON object with "
                             "the keys %s",
                             name.str().c_str(), supportedKeys().c_str());
  for (const auto &kv : *obj) {
    bool known = false;
    for (const Field &f : kFields)
      known |= StringRef(kv.first) == f.key;
    if (!known)
      return createStringError(inconvertibleErrorCode(),
                               "device model '%s': unknown key '%s' "
                               "(supported: %s)",
                               name.str().c_str(), kv.first.str().c_str(),
                               supportedKeys().c_str());
  }
  DeviceModel m;
  m.name = name.str();
  for (const Field &f : kFields) {
    const json::Value *v = obj->get(f.key);
    if (!v)
      return createStringError(inconvertibleErrorCode(),
                               "device model '%s': missing key '%s' "
                               "(required: %s)",
                               name.str().c_str(), f.key.data(),
                               supportedKeys().c_str());
    std::optional<double> d = v->getAsNumber();
    if (!d || !(*d > 0))
      return createStringError(inconvertibleErrorCode(),
                               "device model '%s': '%s' must be a number > 0",
                               name.str().c_str(), f.key.data());
    m.*f.member = *d;
  }
  return m;
}

Expected<DeviceModel> loadDeviceModel(StringRef spec) {
  if (spec == "h100")
    return h100DeviceModel();
  if (spec == "host")
    return hostDeviceModel();
  if (!spec.ends_with(".json"))
    return createStringError(inconvertibleErrorCode(),
                             "unknown device model '%s' (supported: h100, "
                             "host, FILE.json)",
                             spec.str().c_str());
  ErrorOr<std::unique_ptr<MemoryBuffer>> buf = MemoryBuffer::getFile(spec);
  if (!buf)
    return createStringError(inconvertibleErrorCode(),
                             "device model '%s': cannot read: %s",
                             spec.str().c_str(),
                             buf.getError().message().c_str());
  return parseDeviceModelJSON((*buf)->getBuffer(), spec);
}

} // namespace dlc
