//===- GridStrideLaunchTest.cpp - the CUDA device's grid-stride launches -===//
//
// A kernel whose source holds dlc's grid-stride marker line is launched
// with at most one wave of the device (multiprocessor count times the
// kernel's occupancy), the same kernel without the line with a block per
// block_size threads; either way every element is covered once. Runs on the
// CUDA stand-in (an H100's 132 multiprocessors, 8 blocks of 256 threads
// each) or a GPU; skips without either.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaApi.h"
#include "runtime/device/Device.h"

#include <gtest/gtest.h>

#include <vector>

using namespace dlrt;

namespace {

/// Counts the blocks launched and the elements visited (1 << 20 of them).
const char *kCountSource = R"(
// dlc: grid-stride loop
extern "C" __global__ void count(unsigned *blocks, unsigned *elements) {
  if (threadIdx.x == 0)
    atomicAdd(blocks, 1u);
  unsigned mine = 0;
  for (unsigned e = blockIdx.x * blockDim.x + threadIdx.x; e < (1u << 20);
       e += gridDim.x * blockDim.x)
    ++mine;
  atomicAdd(elements, mine);
}
)";

/// {blocks launched, elements visited} for |source| launched over 1 << 20
/// threads in blocks of 256.
std::pair<unsigned, unsigned> launchCount(Device &device,
                                          const std::string &source) {
  Device::KernelSpec spec;
  spec.name = "count";
  spec.cuda_source = source;
  spec.num_threads = 1 << 20;
  spec.block_size = 256;
  std::vector<std::unique_ptr<DeviceKernel>> kernels;
  Status status = device.loadKernels({}, {spec}, &kernels);
  EXPECT_TRUE(status.ok()) << status.message;
  if (!status.ok())
    return {0, 0};
  DeviceBuffer counters;
  EXPECT_TRUE(device.allocate(8, &counters).ok());
  EXPECT_TRUE(device.fillZero(counters.data, 8).ok());
  auto *base = static_cast<unsigned *>(counters.data);
  status = device.launch(*kernels[0], {base, base + 1});
  EXPECT_TRUE(status.ok()) << status.message;
  unsigned host[2] = {0, 0};
  EXPECT_TRUE(device.copyToHost(host, counters.data, 8).ok());
  EXPECT_TRUE(device.synchronize().ok());
  device.release(counters);
  return {host[0], host[1]};
}

TEST(GridStrideLaunch, GridIsOneWaveOfTheDevice) {
  std::unique_ptr<Device> device;
  Status status = createCudaDevice(0, &device);
  if (!status.ok())
    GTEST_SKIP() << "no CUDA device: " << status.message;
  auto [blocks, elements] = launchCount(*device, kCountSource);
  EXPECT_EQ(elements, 1u << 20);
  if (cuda::cudaStandinPath())
    EXPECT_EQ(blocks, 132u * 8u); // the stand-in's SMs x its occupancy
  else
    EXPECT_LT(blocks, 4096u);
  // Without the marker line: one thread per element.
  std::string plain = kCountSource;
  plain.erase(plain.find("// dlc: grid-stride loop"),
              std::string("// dlc: grid-stride loop").size());
  auto [plainBlocks, plainElements] = launchCount(*device, plain);
  EXPECT_EQ(plainBlocks, 4096u);
  EXPECT_EQ(plainElements, 1u << 20);
}

} // namespace
