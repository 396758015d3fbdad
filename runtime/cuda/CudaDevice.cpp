//===- CudaDevice.cpp - the CUDA device of libdlrt ------------------------===//
// One primary context and one non-blocking stream per device; memory from a
// stream-ordered pool; kernels from package cubins or NVRTC (cached on
// disk); GEMM through cuBLASLt and convolutions through cuDNN, f32 without
// TF32, f16 and bf16 with f32 compute and one rounding (LibraryCalls.h
// ElementType), with scratch only from the session's planned workspace
// (Device::setWorkspace). Every library is opened with dlopen (CudaApi.h).
// This file: creation, the context, the memory pool and scratch, copies, the
// stream and CUDA graphs; kernels are in CudaKernels.cpp, GEMMs in
// CudaBlasLt.cpp and convolutions in CudaDnn.cpp (CudaDeviceImpl.h).
#include "runtime/cuda/CudaDeviceImpl.h"

#include <algorithm>
#include <climits>
#include <cstring>

namespace dlrt::cuda {

Status CudaDevice::check(CUresult result, const char *call) const {
  if (result == CUDA_SUCCESS)
    return Status::OK();
  return Status::error(result == CUDA_ERROR_OUT_OF_MEMORY ? DLRT_OUT_OF_MEMORY
                                                          : DLRT_INTERNAL,
                       describeCuResult(*cu_, result, call));
}

Status CudaDevice::checkLt(cublasStatus_t status, const char *call) const {
  if (status == CUBLAS_STATUS_SUCCESS)
    return Status::OK();
  const char *name = ctx_->lt->cublasLtGetStatusName(status);
  const char *text = ctx_->lt->cublasLtGetStatusString(status);
  return Status::error(status == CUBLAS_STATUS_ALLOC_FAILED ? DLRT_OUT_OF_MEMORY
                                                            : DLRT_INTERNAL,
                       std::string(call) + " failed: " + (name ? name : "?") +
                           " (" + (text ? text : "") + ")");
}

Status CudaDevice::checkDnn(cudnnStatus_t status, const char *call) const {
  if (status == CUDNN_STATUS_SUCCESS)
    return Status::OK();
  const char *text = ctx_->dnn->cudnnGetErrorString(status);
  return Status::error(
      status == CUDNN_STATUS_ALLOC_FAILED ? DLRT_OUT_OF_MEMORY : DLRT_INTERNAL,
      std::string(call) + " failed: " +
          (text ? text : "cudnnStatus " + std::to_string(int(status))));
}

Status CudaDevice::makeCurrent() {
  return check(cu_->cuCtxSetCurrent(ctx_->context), "cuCtxSetCurrent");
}

Status CudaDevice::createImpl(int ordinal, std::unique_ptr<Device> *out) {
  out->reset();
  const DriverApi *cu = nullptr;
  DLRT_TRY(loadDriver(&cu));
  auto unavailable = [&](CUresult r, const char *call) {
    return Status::error(DLRT_UNAVAILABLE, describeCuResult(*cu, r, call));
  };
  int count = 0;
  if (CUresult r = cu->cuDeviceGetCount(&count); r != CUDA_SUCCESS)
    return unavailable(r, "cuDeviceGetCount");
  if (count == 0)
    return Status::error(DLRT_UNAVAILABLE, "no CUDA device found");
  if (ordinal < 0 || ordinal >= count)
    return Status::error(DLRT_UNAVAILABLE,
                         "CUDA device " + std::to_string(ordinal) +
                             " does not exist (" + std::to_string(count) +
                             " device(s) found)");
  // The libraries are needed by every package with kernels or library
  // calls; a missing one is reported now rather than at the first use.
  const NvrtcApi *nvrtc = nullptr;
  DLRT_TRY(loadNvrtc(&nvrtc));
  auto ctx = std::make_shared<CudaContext>();
  ctx->cu = cu;
  DLRT_TRY(loadCublasLt(&ctx->lt));
  DLRT_TRY(loadCudnn(&ctx->dnn));

  if (CUresult r = cu->cuDeviceGet(&ctx->device, ordinal); r != CUDA_SUCCESS)
    return unavailable(r, "cuDeviceGet");
  int poolsSupported = 0;
  if (CUresult r = cu->cuDeviceGetAttribute(
          &poolsSupported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
          ctx->device);
      r != CUDA_SUCCESS)
    return unavailable(r, "cuDeviceGetAttribute");
  if (!poolsSupported)
    return Status::error(DLRT_UNAVAILABLE,
                         "CUDA device " + std::to_string(ordinal) +
                             " does not support stream-ordered memory pools");
  CUcontext context = nullptr;
  if (CUresult r = cu->cuDevicePrimaryCtxRetain(&context, ctx->device);
      r != CUDA_SUCCESS)
    return unavailable(r, "cuDevicePrimaryCtxRetain");
  ctx->context = context; // released by ~CudaContext from here on

  std::unique_ptr<CudaDevice> device(new CudaDevice(ctx));
  device->cu_ = cu;
  DLRT_TRY(device->makeCurrent());
  DLRT_TRY(device->check(
      cu->cuDeviceGetAttribute(&device->ccMajor_,
                               CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                               ctx->device),
      "cuDeviceGetAttribute"));
  DLRT_TRY(device->check(
      cu->cuDeviceGetAttribute(&device->ccMinor_,
                               CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                               ctx->device),
      "cuDeviceGetAttribute"));
  device->arch_ = "sm_" + std::to_string(device->ccMajor_) +
                  std::to_string(device->ccMinor_);
  // Launch sizes of grid-stride kernels; 0 (not reported) leaves them
  // uncapped.
  if (cu->cuDeviceGetAttribute(&device->smCount_,
                               CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                               ctx->device) != CUDA_SUCCESS)
    device->smCount_ = 0;
  if (cu->cuDeviceGetAttribute(&device->threadsPerSm_,
                               CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
                               ctx->device) != CUDA_SUCCESS)
    device->threadsPerSm_ = 0;
  char deviceName[256] = {};
  DLRT_TRY(device->check(
      cu->cuDeviceGetName(deviceName, sizeof deviceName - 1, ctx->device),
      "cuDeviceGetName"));
  device->name_ = "cuda:" + std::to_string(ordinal) + " " + deviceName + " (" +
                  device->arch_ + ")";

  DLRT_TRY(
      device->check(cu->cuStreamCreate(&ctx->stream, CU_STREAM_NON_BLOCKING),
                    "cuStreamCreate"));
  CUmemPoolProps props;
  std::memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = ctx->device;
  DLRT_TRY(device->check(cu->cuMemPoolCreate(&ctx->pool, &props),
                         "cuMemPoolCreate"));
  // Keep freed memory in the pool across synchronizations: a training step
  // frees and reallocates the same sizes every iteration.
  cuuint64_t threshold = UINT64_MAX;
  DLRT_TRY(device->check(
      cu->cuMemPoolSetAttribute(ctx->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                &threshold),
      "cuMemPoolSetAttribute"));
  // cuBLASLt 13 and cuDNN 9 for CUDA 13 need a driver for CUDA >= 13.0;
  // name the driver's version when they refuse to start.
  const std::string driverNote =
      " (the CUDA driver supports CUDA " +
      std::to_string(cu->driver_version / 1000) + "." +
      std::to_string(cu->driver_version % 1000 / 10) + ")";
  if (Status status = device->checkLt(ctx->lt->cublasLtCreate(&ctx->ltHandle),
                                      "cublasLtCreate");
      !status.ok())
    return Status::error(status.code, status.message + driverNote);
  if (Status status = device->checkDnn(ctx->dnn->cudnnCreate(&ctx->dnnHandle),
                                       "cudnnCreate");
      !status.ok())
    return Status::error(status.code, status.message + driverNote);
  DLRT_TRY(device->checkDnn(
      ctx->dnn->cudnnSetStream(ctx->dnnHandle, ctx->stream), "cudnnSetStream"));
  *out = std::move(device);
  return Status::OK();
}

Status CudaDevice::allocate(size_t bytes, DeviceBuffer *out) {
  *out = DeviceBuffer();
  if (bytes == 0)
    return Status::OK();
  DLRT_TRY(makeCurrent());
  CUdeviceptr ptr = 0;
  if (CUresult r =
          cu_->cuMemAllocFromPoolAsync(&ptr, bytes, ctx_->pool, ctx_->stream);
      r != CUDA_SUCCESS) {
    Status status = check(r, "cuMemAllocFromPoolAsync");
    status.message += " (" + std::to_string(bytes) + " bytes)";
    return status;
  }
  if (ptr % 256 != 0) {
    cu_->cuMemFreeAsync(ptr, ctx_->stream);
    return Status::error(DLRT_INTERNAL,
                         "cuMemAllocFromPoolAsync returned memory that is "
                         "not 256-byte aligned");
  }
  out->data = reinterpret_cast<void *>(ptr);
  out->bytes = bytes;
  return Status::OK();
}

void CudaDevice::release(DeviceBuffer &buffer) {
  if (buffer.data) {
    Status status = makeCurrent();
    if (status.ok())
      status =
          check(cu_->cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(buffer.data),
                                    ctx_->stream),
                "cuMemFreeAsync");
    if (!status.ok() && deferred_.ok())
      deferred_ = status;
  }
  buffer = DeviceBuffer();
}

Status CudaDevice::memoryUsage(MemoryUsage *out) {
  *out = MemoryUsage();
  DLRT_TRY(makeCurrent());
  const std::pair<CUmemPool_attribute, int64_t *> attributes[] = {
      {CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &out->reservedBytes},
      {CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &out->reservedPeakBytes},
      {CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &out->usedBytes},
      {CU_MEMPOOL_ATTR_USED_MEM_HIGH, &out->usedPeakBytes}};
  for (const auto &[attribute, field] : attributes) {
    cuuint64_t value = 0;
    DLRT_TRY(check(cu_->cuMemPoolGetAttribute(ctx_->pool, attribute, &value),
                   "cuMemPoolGetAttribute"));
    *field = int64_t(value);
  }
  return Status::OK();
}

Status CudaDevice::scratch(size_t bytes, size_t *offset, DeviceBuffer *own,
                           void **out) {
  *own = DeviceBuffer();
  if (bytes <= workspaceBytesAt(*offset)) {
    *out = workspaceAt(*offset);
    *offset = std::min(workspaceBytes_, (*offset + bytes + 255) / 256 * 256);
    return Status::OK();
  }
  // A graph would hold this call's own allocation: such steps run step by
  // step (the session falls back when the capture fails).
  if (capturing_)
    return Status::error(DLRT_UNAVAILABLE,
                         "a library call needs " + std::to_string(bytes) +
                             " bytes of scratch beyond the planned workspace");
  DLRT_TRY(allocate(bytes, own));
  *out = own->data;
  return Status::OK();
}

Status CudaDevice::copyToDevice(void *dst, const void *src, size_t bytes) {
  if (bytes == 0)
    return Status::OK();
  DLRT_TRY(makeCurrent());
  // From pageable memory the call returns once |src| has been staged, so
  // the caller may reuse it immediately.
  return check(cu_->cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src,
                                      bytes, ctx_->stream),
               "cuMemcpyHtoDAsync");
}

Status CudaDevice::copyToHost(void *dst, const void *src, size_t bytes) {
  if (bytes == 0)
    return Status::OK();
  DLRT_TRY(makeCurrent());
  DLRT_TRY(check(cu_->cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src),
                                        bytes, ctx_->stream),
                 "cuMemcpyDtoHAsync"));
  return synchronize();
}

Status CudaDevice::copyOnDevice(void *dst, const void *src, size_t bytes) {
  if (bytes == 0)
    return Status::OK();
  DLRT_TRY(makeCurrent());
  return check(cu_->cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(dst),
                                      reinterpret_cast<CUdeviceptr>(src), bytes,
                                      ctx_->stream),
               "cuMemcpyDtoDAsync");
}

Status CudaDevice::fillZero(void *dst, size_t bytes) {
  if (bytes == 0)
    return Status::OK();
  DLRT_TRY(makeCurrent());
  return check(cu_->cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(dst), 0,
                                    bytes, ctx_->stream),
               "cuMemsetD8Async");
}

Status CudaDevice::synchronize() {
  DLRT_TRY(makeCurrent());
  if (CUresult r = cu_->cuStreamSynchronize(ctx_->stream); r != CUDA_SUCCESS)
    return Status::error(DLRT_INTERNAL,
                         describeCuResult(*cu_, r, "cuStreamSynchronize") +
                             " (reported by an earlier kernel, copy or "
                             "library call on the stream)");
  if (!deferred_.ok()) {
    Status status = deferred_;
    deferred_ = Status::OK();
    return status;
  }
  return Status::OK();
}

namespace {
/// An instantiated CUDA graph of a session's steps.
class CudaGraph : public Device::Graph {
public:
  CudaGraph(const DriverApi *cu, CUgraphExec exec) : cu_(cu), exec_(exec) {}
  ~CudaGraph() override { cu_->cuGraphExecDestroy(exec_); }
  CUgraphExec exec() const { return exec_; }

private:
  const DriverApi *cu_;
  CUgraphExec exec_;
};
} // namespace

Status CudaDevice::beginCapture() {
  if (!cu_->has_graphs)
    return Status::error(
        DLRT_UNAVAILABLE,
        "the CUDA driver has no graph API (cuStreamBeginCapture "
        "and cuGraphLaunch)");
  DLRT_TRY(makeCurrent());
  // Thread-local mode: only this thread's calls may not be ones a capture
  // forbids (a synchronous copy or allocation); other threads are free.
  if (CUresult r = cu_->cuStreamBeginCapture(
          ctx_->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
      r != CUDA_SUCCESS)
    return Status::error(DLRT_UNAVAILABLE,
                         describeCuResult(*cu_, r, "cuStreamBeginCapture"));
  capturing_ = true;
  return Status::OK();
}

Status CudaDevice::endCapture(std::unique_ptr<Graph> *out) {
  out->reset();
  if (!capturing_)
    return Status::error(DLRT_UNAVAILABLE, "no capture in progress");
  capturing_ = false;
  DLRT_TRY(makeCurrent());
  CUgraph graph = nullptr;
  if (CUresult r = cu_->cuStreamEndCapture(ctx_->stream, &graph);
      r != CUDA_SUCCESS || !graph) {
    if (graph)
      cu_->cuGraphDestroy(graph);
    return Status::error(DLRT_UNAVAILABLE,
                         describeCuResult(*cu_, r, "cuStreamEndCapture"));
  }
  CUgraphExec exec = nullptr;
  CUresult r = cu_->cuGraphInstantiateWithFlags(&exec, graph, 0);
  cu_->cuGraphDestroy(graph);
  if (r != CUDA_SUCCESS || !exec)
    return Status::error(
        DLRT_UNAVAILABLE,
        describeCuResult(*cu_, r, "cuGraphInstantiateWithFlags"));
  *out = std::make_unique<CudaGraph>(cu_, exec);
  return Status::OK();
}

Status CudaDevice::launchGraph(Graph &graph) {
  DLRT_TRY(makeCurrent());
  return check(
      cu_->cuGraphLaunch(static_cast<CudaGraph &>(graph).exec(), ctx_->stream),
      "cuGraphLaunch");
}

} // namespace dlrt::cuda

namespace dlrt {

Status createCudaDevice(int ordinal, std::unique_ptr<Device> *out) {
  return cuda::CudaDevice::create(ordinal, out);
}

bool getCudaKernelStats(const Device &device, CudaKernelStats *out) {
  const auto *cuda = dynamic_cast<const cuda::CudaDevice *>(&device);
  if (!cuda)
    return false;
  *out = cuda->stats();
  return true;
}

} // namespace dlrt
