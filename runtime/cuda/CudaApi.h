//===- CudaApi.h - CUDA libraries loaded with dlopen ------------*- C++ -*-===//
// libdlrt has no link-time dependency on CUDA: the driver, NVRTC, cuBLASLt
// and cuDNN are opened with dlopen and called through these tables. The
// CUDA headers are used for types and signatures only.
#ifndef DLRT_CUDA_CUDAAPI_H
#define DLRT_CUDA_CUDAAPI_H

#include <cublasLt.h>
#include <cuda.h>
#include <cudnn.h>
#include <nvrtc.h>

#include <string>

#include "runtime/device/Device.h"

namespace dlrt::cuda {

// Each list names the functions one library provides. A driver entry's name
// may be a macro for its versioned symbol (cuStreamDestroy -> _v2); the table
// member and its type follow the macro, so they match the header's signature.
#define DLRT_CUDA_DRIVER_FUNCTIONS(X)                                          \
  X(cuDriverGetVersion)                                                        \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuCtxSetCurrent)                                                           \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuMemPoolCreate)                                                           \
  X(cuMemPoolDestroy)                                                          \
  X(cuMemPoolSetAttribute)                                                     \
  X(cuMemPoolGetAttribute)                                                     \
  X(cuMemAllocFromPoolAsync)                                                   \
  X(cuMemFreeAsync)                                                            \
  X(cuMemcpyHtoDAsync)                                                         \
  X(cuMemcpyDtoHAsync)                                                         \
  X(cuMemcpyDtoDAsync)                                                         \
  X(cuMemsetD8Async)                                                           \
  X(cuMemsetD32Async)                                                          \
  X(cuModuleLoadData)                                                          \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuLaunchKernel)                                                            \
  X(cuStreamWaitEvent)                                                         \
  X(cuEventCreate)                                                             \
  X(cuEventRecord)                                                             \
  X(cuEventQuery)                                                              \
  X(cuEventDestroy)

/// CUDA Graphs (stream capture and replay): optional. A driver or stand-in
/// without them leaves these null and the device runs steps without graphs.
#define DLRT_CUDA_GRAPH_FUNCTIONS(X)                                           \
  X(cuStreamBeginCapture)                                                      \
  X(cuStreamEndCapture)                                                        \
  X(cuGraphInstantiateWithFlags)                                               \
  X(cuGraphLaunch)                                                             \
  X(cuGraphExecDestroy)                                                        \
  X(cuGraphDestroy)

/// The occupancy calculator: optional. Without it grid-stride launches size
/// their grid from the multiprocessor's thread limit alone.
#define DLRT_CUDA_OCCUPANCY_FUNCTIONS(X)                                       \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)

#define DLRT_NVRTC_FUNCTIONS(X)                                                \
  X(nvrtcVersion)                                                              \
  X(nvrtcGetErrorString)                                                       \
  X(nvrtcCreateProgram)                                                        \
  X(nvrtcDestroyProgram)                                                       \
  X(nvrtcCompileProgram)                                                       \
  X(nvrtcGetProgramLogSize)                                                    \
  X(nvrtcGetProgramLog)                                                        \
  X(nvrtcGetCUBINSize)                                                         \
  X(nvrtcGetCUBIN)

#define DLRT_CUBLASLT_FUNCTIONS(X)                                             \
  X(cublasLtCreate)                                                            \
  X(cublasLtDestroy)                                                           \
  X(cublasLtGetVersion)                                                        \
  X(cublasLtGetStatusName)                                                     \
  X(cublasLtGetStatusString)                                                   \
  X(cublasLtMatmulDescCreate)                                                  \
  X(cublasLtMatmulDescDestroy)                                                 \
  X(cublasLtMatmulDescSetAttribute)                                            \
  X(cublasLtMatrixLayoutCreate)                                                \
  X(cublasLtMatrixLayoutDestroy)                                               \
  X(cublasLtMatrixLayoutSetAttribute)                                          \
  X(cublasLtMatmulPreferenceCreate)                                            \
  X(cublasLtMatmulPreferenceDestroy)                                           \
  X(cublasLtMatmulPreferenceSetAttribute)                                      \
  X(cublasLtMatmulAlgoGetHeuristic)                                            \
  X(cublasLtMatmul)

#define DLRT_CUDNN_FUNCTIONS(X)                                                \
  X(cudnnGetVersion)                                                           \
  X(cudnnGetErrorString)                                                       \
  X(cudnnCreate)                                                               \
  X(cudnnDestroy)                                                              \
  X(cudnnSetStream)                                                            \
  X(cudnnCreateTensorDescriptor)                                               \
  X(cudnnSetTensor4dDescriptor)                                                \
  X(cudnnDestroyTensorDescriptor)                                              \
  X(cudnnCreateFilterDescriptor)                                               \
  X(cudnnSetFilter4dDescriptor)                                                \
  X(cudnnDestroyFilterDescriptor)                                              \
  X(cudnnCreateConvolutionDescriptor)                                          \
  X(cudnnSetConvolution2dDescriptor)                                           \
  X(cudnnSetConvolutionGroupCount)                                             \
  X(cudnnSetConvolutionMathType)                                               \
  X(cudnnDestroyConvolutionDescriptor)                                         \
  X(cudnnGetConvolution2dForwardOutputDim)                                     \
  X(cudnnGetConvolutionForwardAlgorithm_v7)                                    \
  X(cudnnGetConvolutionForwardWorkspaceSize)                                   \
  X(cudnnConvolutionForward)                                                   \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                               \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize)                              \
  X(cudnnConvolutionBackwardData)                                              \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)                             \
  X(cudnnGetConvolutionBackwardFilterWorkspaceSize)                            \
  X(cudnnConvolutionBackwardFilter)                                            \
  X(cudnnAddTensor)                                                            \
  X(cudnnTransformTensor)                                                      \
  X(cudnnSetTensorNdDescriptor)                                                \
  X(cudnnSetFilterNdDescriptor)                                                \
  X(cudnnSetConvolutionNdDescriptor)                                           \
  X(cudnnGetConvolutionNdForwardOutputDim)

#define DLRT_CUDA_DECLARE_MEMBER(name) decltype(&::name) name = nullptr;

/// The CUDA driver API (libcuda.so.1), resolved after cuInit through
/// cuGetProcAddress for the header's CUDA_VERSION (or the versioned symbol
/// names when the driver predates cuGetProcAddress_v2).
struct DriverApi {
  decltype(&::cuInit) cuInit = nullptr;
  decltype(&::cuGetErrorName) cuGetErrorName = nullptr;
  decltype(&::cuGetErrorString) cuGetErrorString = nullptr;
  DLRT_CUDA_DRIVER_FUNCTIONS(DLRT_CUDA_DECLARE_MEMBER)
  DLRT_CUDA_GRAPH_FUNCTIONS(DLRT_CUDA_DECLARE_MEMBER)
  /// Null where the driver (or stand-in) lacks them.
  DLRT_CUDA_OCCUPANCY_FUNCTIONS(DLRT_CUDA_DECLARE_MEMBER)
  int driver_version = 0; ///< e.g. 13000
  /// Every entry of DLRT_CUDA_GRAPH_FUNCTIONS resolved.
  bool has_graphs = false;
};

/// NVRTC (libnvrtc.so.<CUDA major> (13), else libnvrtc.so).
struct NvrtcApi {
  DLRT_NVRTC_FUNCTIONS(DLRT_CUDA_DECLARE_MEMBER)
  int major = 0, minor = 0; ///< nvrtcVersion()
};

/// cuBLASLt (libcublasLt.so.<CUDA major>, i.e. .13).
struct CublasLtApi {
  DLRT_CUBLASLT_FUNCTIONS(DLRT_CUDA_DECLARE_MEMBER)
};

/// cuDNN (libcudnn.so.<CUDNN_MAJOR>, i.e. .9).
struct CudnnApi {
  DLRT_CUDNN_FUNCTIONS(DLRT_CUDA_DECLARE_MEMBER)
};

/// Opens libcuda.so.1 and calls cuInit(0) once per process. On success
/// |*out| points at a table that lives until the process exits. Errors:
/// DLRT_UNAVAILABLE "no CUDA driver: cannot load libcuda.so.1 (<dlerror>)",
/// or naming the failing CUresult of cuInit or a missing entry point.
Status loadDriver(const DriverApi **out);
/// Opens NVRTC (process-wide, once). Errors: DLRT_UNAVAILABLE naming the
/// library and dlerror.
Status loadNvrtc(const NvrtcApi **out);
/// Opens cuBLASLt. Errors: DLRT_UNAVAILABLE naming the library.
Status loadCublasLt(const CublasLtApi **out);
/// Opens cuDNN. Errors: DLRT_UNAVAILABLE naming the library.
Status loadCudnn(const CudnnApi **out);

/// The path in $DLRT_CUDA_STANDIN, or null when it is unset or empty. When
/// set, the driver, NVRTC, cuBLASLt and cuDNN are all taken from that one
/// library — the test-only stand-in of test/cuda-emulation/standin, which
/// runs the CUDA path on the host — and the real libraries are never
/// opened. A library that lacks the symbol `dlrtCudaStandin` is refused
/// (DLRT_UNAVAILABLE naming the variable).
const char *cudaStandinPath();

/// "cuFoo failed: CUDA_ERROR_X (description)".
std::string describeCuResult(const DriverApi &api, CUresult result,
                             const char *call);

} // namespace dlrt::cuda

#endif
