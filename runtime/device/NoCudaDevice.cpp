//===- NoCudaDevice.cpp - createCudaDevice when built without runtime/cuda ===//
#include "runtime/device/Device.h"

namespace dlrt {

Status createCudaDevice(int, std::unique_ptr<Device> *out) {
  out->reset();
  return Status::error(DLRT_UNAVAILABLE,
                       "this libdlrt was built without the CUDA device");
}

} // namespace dlrt
