/* FakeDriver.c - stand-in libcuda.so.1 builds for testing the CUDA device's
 * driver loading without a GPU. Default build: cuInit fails with
 * CUDA_ERROR_NO_DEVICE. With FAKE_ZERO_DEVICES: cuInit succeeds, every entry
 * point the device needs is served through cuGetProcAddress_v2 (which
 * insists on base names and a CUDA 12+ API version), and cuDeviceGetCount
 * reports zero devices. */
#include <stdint.h>
#include <string.h>

/* cuda.h's own type names, so that the runtime's calls through pointers of
 * cuda.h's function types match these definitions (UBSan's
 * -fsanitize=function checks that in sanitized builds). */
typedef enum cudaError_enum { FAKE_CUDA_SUCCESS = 0 } CUresult;
typedef enum CUdriverProcAddressQueryResult_enum {
  FAKE_PROC_ADDRESS_SUCCESS = 0
} CUdriverProcAddressQueryResult;
typedef uint64_t cuuint64_t; /* as cuda.h has it */

CUresult cuGetErrorName(CUresult error, const char **name) {
  *name = error == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_NOT_FOUND";
  return 0;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  *text = error == 100 ? "no CUDA-capable device is detected"
                       : "named symbol not found";
  return 0;
}

#ifndef FAKE_ZERO_DEVICES

CUresult cuInit(unsigned int flags) {
  (void)flags;
  return 100; /* CUDA_ERROR_NO_DEVICE */
}

#else

CUresult cuInit(unsigned int flags) { return flags == 0 ? 0 : 1; }
static CUresult getVersion(int *version) {
  *version = 13000;
  return 0;
}
static CUresult getCount(int *count) {
  *count = 0;
  return 0;
}
/* Never called: the device stops at zero devices. */
static CUresult unused(void) { return 999; }

/* Entry points served by cuGetProcAddress_v2, by base name. */
static const char *const kServed[] = {"cuDeviceGet",
                                      "cuDeviceGetName",
                                      "cuDeviceGetAttribute",
                                      "cuDevicePrimaryCtxRetain",
                                      "cuDevicePrimaryCtxRelease",
                                      "cuCtxSetCurrent",
                                      "cuStreamCreate",
                                      "cuStreamDestroy",
                                      "cuStreamSynchronize",
                                      "cuMemPoolCreate",
                                      "cuMemPoolDestroy",
                                      "cuMemPoolSetAttribute",
                                      "cuMemPoolGetAttribute",
                                      "cuMemAllocFromPoolAsync",
                                      "cuMemFreeAsync",
                                      "cuMemcpyHtoDAsync",
                                      "cuMemcpyDtoHAsync",
                                      "cuMemcpyDtoDAsync",
                                      "cuMemsetD8Async",
                                      "cuMemsetD32Async",
                                      "cuModuleLoadData",
                                      "cuModuleUnload",
                                      "cuModuleGetFunction",
                                      "cuLaunchKernel",
                                      "cuStreamWaitEvent",
                                      "cuEventCreate",
                                      "cuEventRecord",
                                      "cuEventQuery",
                                      "cuEventDestroy"};

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                             cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus) {
  *pfn = 0;
  if (cudaVersion < 12000 || flags != 0) {
    *symbolStatus = 2; /* CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT */
    return 500;
  }
  if (strcmp(symbol, "cuDriverGetVersion") == 0)
    *pfn = (void *)getVersion;
  else if (strcmp(symbol, "cuDeviceGetCount") == 0)
    *pfn = (void *)getCount;
  else
    for (unsigned i = 0; i < sizeof kServed / sizeof *kServed; ++i)
      if (strcmp(symbol, kServed[i]) == 0)
        *pfn = (void *)unused;
  *symbolStatus = *pfn ? 0 : 1; /* SUCCESS : SYMBOL_NOT_FOUND */
  return *pfn ? 0 : 500;        /* CUDA_ERROR_NOT_FOUND */
}

#endif
