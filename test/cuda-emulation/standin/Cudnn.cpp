//===- Cudnn.cpp - the stand-in cuDNN: handles, descriptors, AddTensor ----===//
// cuDNN 9's legacy API as libdlrt calls it (runtime/cuda/CudaApi.h's
// DLRT_CUDNN_FUNCTIONS and the matching getters), with the checks the real
// library makes when descriptors are set. Statuses follow the cuDNN API
// reference (docs.nvidia.com/deeplearning/cudnn, "cudnn_graph", "cudnn_ops"
// and "cudnn_cnn" libraries, the Returns section of each function); where a
// case is not documented the comment says what was chosen. The convolutions
// themselves are in CudnnConv.cpp.
#include "CudnnState.h"
#include "Standin.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>

using namespace dlc::standin;
using namespace dlc::standin::dnn;

namespace {

bool isKnownDataType(cudnnDataType_t type) { return elementSize(type) != 0; }

/// The descriptor-level check of cudnnSetTensorNdDescriptor: nbDims in
/// [3, CUDNN_DIM_MAX] (the reference says [4, 8] but 3-D tensors are what
/// the RNN API uses, and the library accepts them), every dim > 0, every
/// stride > 0, at most 2^31 - 1 elements (the reference's "2 Giga-elements").
cudnnStatus_t setTensor(cudnnTensorDescriptor_t desc, cudnnDataType_t type,
                        int nbDims, const int *dims, const int *strides,
                        const char *call) {
  if (!desc || !dims || !strides)
    return reject(CUDNN_STATUS_BAD_PARAM, call, "null descriptor or array");
  if (!isKnownDataType(type))
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "data type " + std::to_string(int(type)) + " is not valid");
  if (nbDims < 3 || nbDims > CUDNN_DIM_MAX)
    return reject(CUDNN_STATUS_NOT_SUPPORTED, call,
                  "nbDims " + std::to_string(nbDims) + " is outside [3, " +
                      std::to_string(CUDNN_DIM_MAX) + "]");
  int64_t elements = 1;
  for (int i = 0; i < nbDims; ++i) {
    if (dims[i] <= 0)
      return reject(CUDNN_STATUS_BAD_PARAM, call,
                    "dimA[" + std::to_string(i) +
                        "] = " + std::to_string(dims[i]) + " is not positive");
    if (strides[i] <= 0)
      return reject(CUDNN_STATUS_BAD_PARAM, call,
                    "strideA[" + std::to_string(i) + "] = " +
                        std::to_string(strides[i]) + " is not positive");
    elements *= dims[i];
    if (elements > std::numeric_limits<int32_t>::max())
      return reject(CUDNN_STATUS_NOT_SUPPORTED, call,
                    "the tensor has more than 2^31 - 1 elements");
  }
  desc->dataType = type;
  desc->dims.assign(dims, dims + nbDims);
  desc->strides.assign(strides, strides + nbDims);
  desc->set = true;
  return CUDNN_STATUS_SUCCESS;
}

/// Packed strides of |dims| (N, C, spatial...) in |format|.
cudnnStatus_t packedStrides(cudnnTensorFormat_t format, int nbDims,
                            const int *dims, int *strides, const char *call) {
  if (format == CUDNN_TENSOR_NCHW) {
    int64_t s = 1;
    for (int i = nbDims - 1; i >= 0; --i) {
      strides[i] = int(s);
      s *= dims[i];
    }
    return CUDNN_STATUS_SUCCESS;
  }
  if (format == CUDNN_TENSOR_NHWC) {
    // Channels innermost, then the spatial dims, then N.
    strides[1] = 1;
    int64_t s = dims[1];
    for (int i = nbDims - 1; i >= 2; --i) {
      strides[i] = int(s);
      s *= dims[i];
    }
    strides[0] = int(s);
    return CUDNN_STATUS_SUCCESS;
  }
  if (format == CUDNN_TENSOR_NCHW_VECT_C)
    return reject(CUDNN_STATUS_NOT_SUPPORTED, call,
                  "CUDNN_TENSOR_NCHW_VECT_C is not supported by the stand-in");
  return reject(CUDNN_STATUS_BAD_PARAM, call,
                "format " + std::to_string(int(format)) + " is not valid");
}

cudnnStatus_t setFilter(cudnnFilterDescriptor_t desc, cudnnDataType_t type,
                        cudnnTensorFormat_t format, int nbDims, const int *dims,
                        const char *call) {
  if (!desc || !dims)
    return reject(CUDNN_STATUS_BAD_PARAM, call, "null descriptor or array");
  if (!isKnownDataType(type))
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "data type " + std::to_string(int(type)) + " is not valid");
  if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC)
    return reject(
        format == CUDNN_TENSOR_NCHW_VECT_C ? CUDNN_STATUS_NOT_SUPPORTED
                                           : CUDNN_STATUS_BAD_PARAM,
        call, "format " + std::to_string(int(format)) + " is not supported");
  // The reference: "the minimum number of dimensions in the filter
  // descriptor is three"; NOT_SUPPORTED above CUDNN_DIM_MAX.
  if (nbDims < 3 || nbDims > CUDNN_DIM_MAX)
    return reject(CUDNN_STATUS_NOT_SUPPORTED, call,
                  "nbDims " + std::to_string(nbDims) + " is outside [3, " +
                      std::to_string(CUDNN_DIM_MAX) + "]");
  for (int i = 0; i < nbDims; ++i)
    if (dims[i] <= 0)
      return reject(CUDNN_STATUS_BAD_PARAM, call,
                    "filterDimA[" + std::to_string(i) +
                        "] = " + std::to_string(dims[i]) + " is not positive");
  desc->dataType = type;
  desc->format = format;
  desc->dims.assign(dims, dims + nbDims);
  desc->set = true;
  return CUDNN_STATUS_SUCCESS;
}

bool isConvComputeType(cudnnDataType_t type) {
  return type == CUDNN_DATA_FLOAT || type == CUDNN_DATA_DOUBLE ||
         type == CUDNN_DATA_HALF || type == CUDNN_DATA_BFLOAT16 ||
         type == CUDNN_DATA_INT32;
}

cudnnStatus_t setConvolution(cudnnConvolutionDescriptor_t desc, int length,
                             const int *pads, const int *strides,
                             const int *dilations, cudnnConvolutionMode_t mode,
                             cudnnDataType_t computeType, const char *call) {
  if (!desc || !pads || !strides || !dilations)
    return reject(CUDNN_STATUS_BAD_PARAM, call, "null descriptor or array");
  if (length < 0)
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "arrayLength " + std::to_string(length) + " is negative");
  if (length > CUDNN_DIM_MAX - 2)
    return reject(CUDNN_STATUS_NOT_SUPPORTED, call,
                  "arrayLength " + std::to_string(length) +
                      " is greater than CUDNN_DIM_MAX - 2");
  if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION)
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "mode " + std::to_string(int(mode)) + " is not valid");
  if (!isConvComputeType(computeType))
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "computeType " + std::to_string(int(computeType)) +
                      " is not valid");
  for (int i = 0; i < length; ++i) {
    std::string at = "[" + std::to_string(i) + "] = ";
    if (pads[i] < 0)
      return reject(CUDNN_STATUS_BAD_PARAM, call,
                    "pad" + at + std::to_string(pads[i]) + " is negative");
    if (strides[i] <= 0)
      return reject(CUDNN_STATUS_BAD_PARAM, call,
                    "stride" + at + std::to_string(strides[i]) +
                        " is not positive");
    if (dilations[i] <= 0)
      return reject(CUDNN_STATUS_BAD_PARAM, call,
                    "dilation" + at + std::to_string(dilations[i]) +
                        " is not positive");
  }
  desc->pads.assign(pads, pads + length);
  desc->strides.assign(strides, strides + length);
  desc->dilations.assign(dilations, dilations + length);
  desc->mode = mode;
  desc->computeType = computeType;
  desc->set = true;
  return CUDNN_STATUS_SUCCESS;
}

/// The output dims of a forward convolution, by the reference's formula
/// outputDim = 1 + (inputDim + 2*pad - ((filterDim-1)*dilation + 1)) / stride.
/// BAD_PARAM when the descriptors' ranks or types differ, when the input's
/// channels are not the filter's C times the group count, or when an output
/// dim would be empty.
cudnnStatus_t forwardOutputDims(cudnnConvolutionDescriptor_t conv,
                                cudnnTensorDescriptor_t x,
                                cudnnFilterDescriptor_t w,
                                std::vector<int> *out, const char *call) {
  if (!conv || !x || !w || !conv->set || !x->set || !w->set)
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "a descriptor is null or was never set");
  size_t rank = x->dims.size();
  if (w->dims.size() != rank)
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "the filter has " + std::to_string(w->dims.size()) +
                      " dims, the input " + std::to_string(rank));
  if (conv->pads.size() + 2 != rank)
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "the convolution has " + std::to_string(conv->pads.size()) +
                      " spatial dims, the input " + std::to_string(rank - 2));
  if (w->dataType != x->dataType)
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "the filter's data type " + std::to_string(w->dataType) +
                      " differs from the input's " +
                      std::to_string(x->dataType));
  if (int64_t(w->dims[1]) * conv->groups != x->dims[1])
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "the input has " + std::to_string(x->dims[1]) +
                      " channels, the filter " + std::to_string(w->dims[1]) +
                      " x group count " + std::to_string(conv->groups));
  out->assign(rank, 0);
  (*out)[0] = x->dims[0];
  (*out)[1] = w->dims[0];
  for (size_t i = 2; i < rank; ++i) {
    size_t s = i - 2;
    int64_t span = int64_t(w->dims[i] - 1) * conv->dilations[s] + 1;
    int64_t padded = int64_t(x->dims[i]) + 2 * int64_t(conv->pads[s]);
    if (padded < span)
      return reject(CUDNN_STATUS_BAD_PARAM, call,
                    "spatial dim " + std::to_string(s) + ": the filter spans " +
                        std::to_string(span) + " but the padded input has " +
                        std::to_string(padded) + " (empty output)");
    (*out)[i] = int(1 + (padded - span) / conv->strides[s]);
  }
  return CUDNN_STATUS_SUCCESS;
}

uint16_t floatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t exponent = (bits >> 23) & 0xffu;
  uint32_t mantissa = bits & 0x7fffffu;
  if (exponent == 0xff) // Inf or NaN (kept quiet).
    return uint16_t(sign | 0x7c00u | (mantissa ? 0x200u : 0));
  int e = int(exponent) - 127 + 15;
  if (e >= 31)
    return uint16_t(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10)
      return uint16_t(sign);
    // Subnormal: shift the mantissa with its implicit bit, round to even.
    mantissa |= 0x800000u;
    int shift = 14 - e;
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t midpoint = 1u << (shift - 1);
    if (rest > midpoint || (rest == midpoint && (half & 1)))
      ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = (uint32_t(e) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fffu;
  // A carry out of the mantissa correctly bumps the exponent (to Inf at most).
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1)))
    ++half;
  return uint16_t(sign | half);
}

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent == 0) {
    if (mantissa == 0)
      bits = sign;
    else {
      // Normalize the subnormal.
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while (!(mantissa & 0x400u));
      bits =
          sign | (uint32_t(127 - 15 - e) << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else {
    bits = sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToBfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN stays a quiet NaN.
    return uint16_t((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

float bfloat16ToFloat(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

} // namespace

namespace dlc::standin::dnn {

size_t elementSize(cudnnDataType_t type) {
  switch (type) {
  case CUDNN_DATA_FLOAT:
  case CUDNN_DATA_INT32:
    return 4;
  case CUDNN_DATA_DOUBLE:
  case CUDNN_DATA_INT64:
    return 8;
  case CUDNN_DATA_HALF:
  case CUDNN_DATA_BFLOAT16:
    return 2;
  case CUDNN_DATA_INT8:
  case CUDNN_DATA_UINT8:
    return 1;
  default:
    return 0;
  }
}

std::vector<int64_t> filterStrides(const cudnnFilterStruct &filter) {
  size_t rank = filter.dims.size();
  std::vector<int64_t> strides(rank);
  if (filter.format == CUDNN_TENSOR_NHWC) {
    // KRSC: C innermost, then the spatial dims, then K.
    int64_t s = filter.dims[1];
    strides[1] = 1;
    for (size_t i = rank; i-- > 2;) {
      strides[i] = s;
      s *= filter.dims[i];
    }
    strides[0] = s;
  } else {
    int64_t s = 1;
    for (size_t i = rank; i-- > 0;) {
      strides[i] = s;
      s *= filter.dims[i];
    }
  }
  return strides;
}

size_t extentBytes(const std::vector<int> &dims,
                   const std::vector<int64_t> &strides, size_t elementBytes) {
  int64_t last = 0;
  for (size_t i = 0; i < dims.size(); ++i)
    last += int64_t(dims[i] - 1) * strides[i];
  return size_t(last + 1) * elementBytes;
}

cudnnStatus_t checkOperand(const char *call, const void *pointer, size_t bytes,
                           const char *operand) {
  if (!pointer)
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  std::string(operand) + " is a null pointer");
  std::string why;
  if (checkDeviceRange(pointer, bytes, operand, &why))
    return CUDNN_STATUS_SUCCESS;
  log(std::string(call) + ": " + why, /*always=*/true);
  return CUDNN_STATUS_EXECUTION_FAILED;
}

cudnnStatus_t reject(cudnnStatus_t status, const char *call,
                     const std::string &why) {
  log(std::string(call) + ": " + cudnnGetErrorString(status) + ": " + why);
  return status;
}

double readScale(const void *scale, cudnnDataType_t dataType) {
  if (dataType == CUDNN_DATA_DOUBLE)
    return *static_cast<const double *>(scale);
  return *static_cast<const float *>(scale);
}

double loadElement(const void *base, int64_t i, cudnnDataType_t type) {
  switch (type) {
  case CUDNN_DATA_FLOAT:
    return static_cast<const float *>(base)[i];
  case CUDNN_DATA_DOUBLE:
    return static_cast<const double *>(base)[i];
  case CUDNN_DATA_HALF:
    return halfToFloat(static_cast<const uint16_t *>(base)[i]);
  case CUDNN_DATA_BFLOAT16:
    return bfloat16ToFloat(static_cast<const uint16_t *>(base)[i]);
  default:
    return 0;
  }
}

void storeElement(void *base, int64_t i, cudnnDataType_t type, double value) {
  switch (type) {
  case CUDNN_DATA_FLOAT:
    static_cast<float *>(base)[i] = float(value);
    break;
  case CUDNN_DATA_DOUBLE:
    static_cast<double *>(base)[i] = value;
    break;
  case CUDNN_DATA_HALF:
    static_cast<uint16_t *>(base)[i] = floatToHalf(float(value));
    break;
  case CUDNN_DATA_BFLOAT16:
    static_cast<uint16_t *>(base)[i] = floatToBfloat16(float(value));
    break;
  default:
    break;
  }
}

} // namespace dlc::standin::dnn

extern "C" {

size_t cudnnGetVersion(void) { return CUDNN_VERSION; }

const char *cudnnGetErrorString(cudnnStatus_t status) {
  // The real library returns the enumerator's name.
  switch (int(status)) {
#define DLC_STATUS_NAME(name)                                                  \
  case name:                                                                   \
    return #name;
    DLC_STATUS_NAME(CUDNN_STATUS_SUCCESS)
    DLC_STATUS_NAME(CUDNN_STATUS_NOT_INITIALIZED)
    DLC_STATUS_NAME(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH)
    DLC_STATUS_NAME(CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH)
    DLC_STATUS_NAME(CUDNN_STATUS_DEPRECATED)
    DLC_STATUS_NAME(CUDNN_STATUS_LICENSE_ERROR)
    DLC_STATUS_NAME(CUDNN_STATUS_RUNTIME_IN_PROGRESS)
    DLC_STATUS_NAME(CUDNN_STATUS_RUNTIME_FP_OVERFLOW)
    DLC_STATUS_NAME(CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED)
    DLC_STATUS_NAME(CUDNN_STATUS_BAD_PARAM)
    DLC_STATUS_NAME(CUDNN_STATUS_INVALID_VALUE)
    DLC_STATUS_NAME(CUDNN_STATUS_BAD_PARAM_NULL_POINTER)
    DLC_STATUS_NAME(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER)
    DLC_STATUS_NAME(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED)
    DLC_STATUS_NAME(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND)
    DLC_STATUS_NAME(CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT)
    DLC_STATUS_NAME(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH)
    DLC_STATUS_NAME(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH)
    DLC_STATUS_NAME(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES)
    DLC_STATUS_NAME(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE)
    DLC_STATUS_NAME(CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH)
    DLC_STATUS_NAME(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE)
    DLC_STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED)
    DLC_STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN)
    DLC_STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_SHAPE)
    DLC_STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE)
    DLC_STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT)
    DLC_STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER)
    DLC_STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART)
    DLC_STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH)
    DLC_STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING)
    DLC_STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE)
    DLC_STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT)
    DLC_STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_PADDING)
    DLC_STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM)
    DLC_STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API)
    DLC_STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE)
    DLC_STATUS_NAME(CUDNN_STATUS_INTERNAL_ERROR)
    DLC_STATUS_NAME(CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED)
    DLC_STATUS_NAME(CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE)
    DLC_STATUS_NAME(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
    DLC_STATUS_NAME(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    DLC_STATUS_NAME(CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM)
    DLC_STATUS_NAME(CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED)
    DLC_STATUS_NAME(CUDNN_STATUS_EXECUTION_FAILED)
    DLC_STATUS_NAME(CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER)
    DLC_STATUS_NAME(CUDNN_STATUS_EXECUTION_FAILED_CUBLAS)
    DLC_STATUS_NAME(CUDNN_STATUS_EXECUTION_FAILED_CUDART)
    DLC_STATUS_NAME(CUDNN_STATUS_EXECUTION_FAILED_CURAND)
#undef DLC_STATUS_NAME
  }
  return "CUDNN_UNKNOWN_STATUS";
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle) {
  if (!handle)
    return reject(CUDNN_STATUS_BAD_PARAM, "cudnnCreate", "handle is null");
  *handle = nullptr;
  // The reference: NOT_INITIALIZED when "CUDA Runtime API initialization
  // failed"; a real cuDNN cannot start without a driver and a context.
  if (!driverInitialized())
    return reject(CUDNN_STATUS_NOT_INITIALIZED, "cudnnCreate",
                  "the CUDA driver is not initialized (call cuInit first)");
  *handle = new (std::nothrow) cudnnContext();
  return *handle ? CUDNN_STATUS_SUCCESS
                 : CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  if (!handle)
    return reject(CUDNN_STATUS_BAD_PARAM, "cudnnDestroy", "handle is null");
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (!handle)
    return reject(CUDNN_STATUS_BAD_PARAM, "cudnnSetStream", "handle is null");
  handle->stream = reinterpret_cast<CUstream>(stream);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t *stream) {
  if (!handle || !stream)
    return reject(CUDNN_STATUS_BAD_PARAM, "cudnnGetStream", "null argument");
  *stream = reinterpret_cast<cudaStream_t>(handle->stream);
  return CUDNN_STATUS_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Tensor descriptors
//===----------------------------------------------------------------------===//

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *desc) {
  if (!desc)
    return reject(CUDNN_STATUS_BAD_PARAM, "cudnnCreateTensorDescriptor",
                  "tensorDesc is null");
  *desc = new (std::nothrow) cudnnTensorStruct();
  return *desc ? CUDNN_STATUS_SUCCESS
               : CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t desc) {
  delete desc; // The real one accepts null.
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t desc,
                                         cudnnTensorFormat_t format,
                                         cudnnDataType_t type, int n, int c,
                                         int h, int w) {
  const char *call = "cudnnSetTensor4dDescriptor";
  int dims[4] = {n, c, h, w}, strides[4];
  for (int d : dims)
    if (d <= 0)
      return reject(CUDNN_STATUS_BAD_PARAM, call,
                    "n, c, h, w = " + std::to_string(n) + ", " +
                        std::to_string(c) + ", " + std::to_string(h) + ", " +
                        std::to_string(w) + " must be positive");
  if (cudnnStatus_t s = packedStrides(format, 4, dims, strides, call))
    return s;
  return setTensor(desc, type, 4, dims, strides, call);
}

cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t desc,
                                           cudnnDataType_t type, int n, int c,
                                           int h, int w, int nStride,
                                           int cStride, int hStride,
                                           int wStride) {
  int dims[4] = {n, c, h, w}, strides[4] = {nStride, cStride, hStride, wStride};
  return setTensor(desc, type, 4, dims, strides,
                   "cudnnSetTensor4dDescriptorEx");
}

cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t desc,
                                         cudnnDataType_t type, int nbDims,
                                         const int dims[],
                                         const int strides[]) {
  return setTensor(desc, type, nbDims, dims, strides,
                   "cudnnSetTensorNdDescriptor");
}

cudnnStatus_t cudnnSetTensorNdDescriptorEx(cudnnTensorDescriptor_t desc,
                                           cudnnTensorFormat_t format,
                                           cudnnDataType_t type, int nbDims,
                                           const int dims[]) {
  const char *call = "cudnnSetTensorNdDescriptorEx";
  if (!dims)
    return reject(CUDNN_STATUS_BAD_PARAM, call, "dimA is null");
  if (nbDims < 3 || nbDims > CUDNN_DIM_MAX)
    return reject(CUDNN_STATUS_NOT_SUPPORTED, call,
                  "nbDims " + std::to_string(nbDims) + " is outside [3, " +
                      std::to_string(CUDNN_DIM_MAX) + "]");
  int strides[CUDNN_DIM_MAX];
  for (int i = 0; i < nbDims; ++i)
    if (dims[i] <= 0)
      return reject(CUDNN_STATUS_BAD_PARAM, call,
                    "dimA[" + std::to_string(i) + "] is not positive");
  if (cudnnStatus_t s = packedStrides(format, nbDims, dims, strides, call))
    return s;
  return setTensor(desc, type, nbDims, dims, strides, call);
}

cudnnStatus_t cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t desc,
                                         cudnnDataType_t *type, int *n, int *c,
                                         int *h, int *w, int *nStride,
                                         int *cStride, int *hStride,
                                         int *wStride) {
  if (!desc || !desc->set || desc->dims.size() != 4 || !type || !n || !c ||
      !h || !w || !nStride || !cStride || !hStride || !wStride)
    return reject(CUDNN_STATUS_BAD_PARAM, "cudnnGetTensor4dDescriptor",
                  "not a 4-d tensor descriptor, or a null output");
  *type = desc->dataType;
  *n = desc->dims[0], *c = desc->dims[1], *h = desc->dims[2],
  *w = desc->dims[3];
  *nStride = desc->strides[0], *cStride = desc->strides[1],
  *hStride = desc->strides[2], *wStride = desc->strides[3];
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t desc,
                                         int nbDimsRequested,
                                         cudnnDataType_t *type, int *nbDims,
                                         int dims[], int strides[]) {
  if (!desc || !desc->set || !type || !nbDims || nbDimsRequested < 0 ||
      (nbDimsRequested > 0 && (!dims || !strides)))
    return reject(CUDNN_STATUS_BAD_PARAM, "cudnnGetTensorNdDescriptor",
                  "descriptor not set, or a null output");
  *type = desc->dataType;
  *nbDims = int(desc->dims.size());
  for (int i = 0; i < nbDimsRequested && i < *nbDims; ++i) {
    dims[i] = desc->dims[i];
    strides[i] = desc->strides[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetTensorSizeInBytes(const cudnnTensorDescriptor_t desc,
                                        size_t *size) {
  if (!desc || !desc->set || !size)
    return reject(CUDNN_STATUS_BAD_PARAM, "cudnnGetTensorSizeInBytes",
                  "descriptor not set, or size is null");
  std::vector<int64_t> strides(desc->strides.begin(), desc->strides.end());
  *size = extentBytes(desc->dims, strides, elementSize(desc->dataType));
  return CUDNN_STATUS_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Filter descriptors
//===----------------------------------------------------------------------===//

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *desc) {
  if (!desc)
    return reject(CUDNN_STATUS_BAD_PARAM, "cudnnCreateFilterDescriptor",
                  "filterDesc is null");
  *desc = new (std::nothrow) cudnnFilterStruct();
  return *desc ? CUDNN_STATUS_SUCCESS
               : CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t desc,
                                         cudnnDataType_t type,
                                         cudnnTensorFormat_t format, int k,
                                         int c, int h, int w) {
  int dims[4] = {k, c, h, w};
  return setFilter(desc, type, format, 4, dims, "cudnnSetFilter4dDescriptor");
}

cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t desc,
                                         cudnnDataType_t type,
                                         cudnnTensorFormat_t format, int nbDims,
                                         const int dims[]) {
  return setFilter(desc, type, format, nbDims, dims,
                   "cudnnSetFilterNdDescriptor");
}

cudnnStatus_t cudnnGetFilter4dDescriptor(const cudnnFilterDescriptor_t desc,
                                         cudnnDataType_t *type,
                                         cudnnTensorFormat_t *format, int *k,
                                         int *c, int *h, int *w) {
  if (!desc || !desc->set || desc->dims.size() != 4 || !type || !format || !k ||
      !c || !h || !w)
    return reject(CUDNN_STATUS_BAD_PARAM, "cudnnGetFilter4dDescriptor",
                  "not a 4-d filter descriptor, or a null output");
  *type = desc->dataType;
  *format = desc->format;
  *k = desc->dims[0], *c = desc->dims[1], *h = desc->dims[2],
  *w = desc->dims[3];
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetFilterNdDescriptor(const cudnnFilterDescriptor_t desc,
                                         int nbDimsRequested,
                                         cudnnDataType_t *type,
                                         cudnnTensorFormat_t *format,
                                         int *nbDims, int dims[]) {
  if (!desc || !desc->set || !type || !format || !nbDims ||
      nbDimsRequested < 0 || (nbDimsRequested > 0 && !dims))
    return reject(CUDNN_STATUS_BAD_PARAM, "cudnnGetFilterNdDescriptor",
                  "descriptor not set, or a null output");
  *type = desc->dataType;
  *format = desc->format;
  *nbDims = int(desc->dims.size());
  for (int i = 0; i < nbDimsRequested && i < *nbDims; ++i)
    dims[i] = desc->dims[i];
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetFilterSizeInBytes(const cudnnFilterDescriptor_t desc,
                                        size_t *size) {
  if (!desc || !desc->set || !size)
    return reject(CUDNN_STATUS_BAD_PARAM, "cudnnGetFilterSizeInBytes",
                  "descriptor not set, or size is null");
  *size = extentBytes(desc->dims, filterStrides(*desc),
                      elementSize(desc->dataType));
  return CUDNN_STATUS_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Convolution descriptors
//===----------------------------------------------------------------------===//

cudnnStatus_t
cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *desc) {
  if (!desc)
    return reject(CUDNN_STATUS_BAD_PARAM, "cudnnCreateConvolutionDescriptor",
                  "convDesc is null");
  *desc = new (std::nothrow) cudnnConvolutionStruct();
  return *desc ? CUDNN_STATUS_SUCCESS
               : CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

cudnnStatus_t
cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t desc,
                                              int padH, int padW, int u, int v,
                                              int dilationH, int dilationW,
                                              cudnnConvolutionMode_t mode,
                                              cudnnDataType_t computeType) {
  int pads[2] = {padH, padW}, strides[2] = {u, v},
      dilations[2] = {dilationH, dilationW};
  return setConvolution(desc, 2, pads, strides, dilations, mode, computeType,
                        "cudnnSetConvolution2dDescriptor");
}

cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t desc,
                                              int arrayLength, const int pads[],
                                              const int strides[],
                                              const int dilations[],
                                              cudnnConvolutionMode_t mode,
                                              cudnnDataType_t computeType) {
  return setConvolution(desc, arrayLength, pads, strides, dilations, mode,
                        computeType, "cudnnSetConvolutionNdDescriptor");
}

cudnnStatus_t cudnnGetConvolution2dDescriptor(
    const cudnnConvolutionDescriptor_t desc, int *padH, int *padW, int *u,
    int *v, int *dilationH, int *dilationW, cudnnConvolutionMode_t *mode,
    cudnnDataType_t *computeType) {
  if (!desc || !desc->set || desc->pads.size() != 2 || !padH || !padW || !u ||
      !v || !dilationH || !dilationW || !mode || !computeType)
    return reject(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolution2dDescriptor",
                  "not a 2-d convolution descriptor, or a null output");
  *padH = desc->pads[0], *padW = desc->pads[1];
  *u = desc->strides[0], *v = desc->strides[1];
  *dilationH = desc->dilations[0], *dilationW = desc->dilations[1];
  *mode = desc->mode;
  *computeType = desc->computeType;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionNdDescriptor(
    const cudnnConvolutionDescriptor_t desc, int arrayLengthRequested,
    int *arrayLength, int pads[], int strides[], int dilations[],
    cudnnConvolutionMode_t *mode, cudnnDataType_t *computeType) {
  if (!desc || !desc->set || !arrayLength || !mode || !computeType ||
      arrayLengthRequested < 0 ||
      (arrayLengthRequested > 0 && (!pads || !strides || !dilations)))
    return reject(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionNdDescriptor",
                  "descriptor not set, or a null output");
  *arrayLength = int(desc->pads.size());
  for (int i = 0; i < arrayLengthRequested && i < *arrayLength; ++i) {
    pads[i] = desc->pads[i];
    strides[i] = desc->strides[i];
    dilations[i] = desc->dilations[i];
  }
  *mode = desc->mode;
  *computeType = desc->computeType;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc,
                                            int groupCount) {
  if (!desc || groupCount < 1)
    return reject(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionGroupCount",
                  "group count " + std::to_string(groupCount) +
                      " is not positive (or convDesc is null)");
  desc->groups = groupCount;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc,
                                            int *groupCount) {
  if (!desc || !groupCount)
    return reject(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionGroupCount",
                  "null argument");
  *groupCount = desc->groups;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t desc,
                                          cudnnMathType_t mathType) {
  if (!desc ||
      (mathType != CUDNN_DEFAULT_MATH && mathType != CUDNN_TENSOR_OP_MATH &&
       mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
       mathType != CUDNN_FMA_MATH))
    return reject(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionMathType",
                  "math type " + std::to_string(int(mathType)) +
                      " is not valid (or convDesc is null)");
  desc->mathType = mathType;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t desc,
                                          cudnnMathType_t *mathType) {
  if (!desc || !mathType)
    return reject(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionMathType",
                  "null argument");
  *mathType = desc->mathType;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t x,
    const cudnnFilterDescriptor_t w, int *n, int *c, int *h, int *wOut) {
  const char *call = "cudnnGetConvolution2dForwardOutputDim";
  if (!n || !c || !h || !wOut)
    return reject(CUDNN_STATUS_BAD_PARAM, call, "a null output");
  if (x && x->set && x->dims.size() != 4)
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "the input has " + std::to_string(x->dims.size()) +
                      " dims, not 4");
  std::vector<int> out;
  if (cudnnStatus_t s = forwardOutputDims(conv, x, w, &out, call))
    return s;
  *n = out[0], *c = out[1], *h = out[2], *wOut = out[3];
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionNdForwardOutputDim(
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t x,
    const cudnnFilterDescriptor_t w, int nbDims, int outDims[]) {
  const char *call = "cudnnGetConvolutionNdForwardOutputDim";
  if (!outDims)
    return reject(CUDNN_STATUS_BAD_PARAM, call, "tensorOuputDimA is null");
  std::vector<int> out;
  if (cudnnStatus_t s = forwardOutputDims(conv, x, w, &out, call))
    return s;
  if (nbDims != int(out.size()))
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "nbDims " + std::to_string(nbDims) +
                      " differs from the input's " +
                      std::to_string(out.size()));
  for (size_t i = 0; i < out.size(); ++i)
    outDims[i] = out[i];
  return CUDNN_STATUS_SUCCESS;
}

//===----------------------------------------------------------------------===//
// cudnnAddTensor: C = alpha * A + beta * C
//===----------------------------------------------------------------------===//

// The reference: "Each dimension of the bias tensor A must match the
// corresponding dimension of the destination tensor C or must be equal to
// 1"; "Up to dimension 5, all tensor formats are supported. Beyond those
// dimensions, this routine is not supported"; BAD_PARAM when "the
// dimensions of the bias tensor refer to an amount of data that is
// incompatible with the output tensor dimensions or the dataType of the two
// tensor descriptors are different".
/// C = alpha * A + beta * C for cudnnAddTensor (|broadcast|: A's dims may
/// be 1) and cudnnTransformTensor (dims equal, any strides on both sides).
static cudnnStatus_t scaleAdd(const char *call, bool broadcast,
                              cudnnHandle_t handle, const void *alpha,
                              const cudnnTensorDescriptor_t aDesc,
                              const void *A, const void *beta,
                              const cudnnTensorDescriptor_t cDesc, void *C) {
  if (!handle || !alpha || !beta || !aDesc || !cDesc || !aDesc->set ||
      !cDesc->set)
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "a null handle, scale or descriptor, or one never set");
  if (aDesc->dataType != cDesc->dataType)
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "A's data type " + std::to_string(aDesc->dataType) +
                      " differs from C's " + std::to_string(cDesc->dataType));
  if (aDesc->dims.size() != cDesc->dims.size())
    return reject(CUDNN_STATUS_BAD_PARAM, call,
                  "A has " + std::to_string(aDesc->dims.size()) +
                      " dims, C has " + std::to_string(cDesc->dims.size()));
  size_t rank = cDesc->dims.size();
  if (rank > 5)
    return reject(CUDNN_STATUS_NOT_SUPPORTED, call,
                  "tensors of rank " + std::to_string(rank) +
                      " (more than 5) are not supported");
  cudnnDataType_t type = cDesc->dataType;
  if (type != CUDNN_DATA_FLOAT && type != CUDNN_DATA_DOUBLE &&
      type != CUDNN_DATA_HALF && type != CUDNN_DATA_BFLOAT16)
    return reject(CUDNN_STATUS_NOT_SUPPORTED, call,
                  "data type " + std::to_string(type) + " is not supported");
  for (size_t i = 0; i < rank; ++i)
    if ((!broadcast || aDesc->dims[i] != 1) &&
        aDesc->dims[i] != cDesc->dims[i])
      return reject(CUDNN_STATUS_BAD_PARAM, call,
                    "A's dim " + std::to_string(i) + " is " +
                        std::to_string(aDesc->dims[i]) + ", C's is " +
                        std::to_string(cDesc->dims[i]) +
                        (broadcast ? " (must be equal or 1)"
                                   : " (must be equal)"));
  std::vector<int64_t> aStrides(aDesc->strides.begin(), aDesc->strides.end());
  std::vector<int64_t> cStrides(cDesc->strides.begin(), cDesc->strides.end());
  size_t bytes = elementSize(type);
  if (cudnnStatus_t s =
          checkOperand(call, A, extentBytes(aDesc->dims, aStrides, bytes), "A"))
    return s;
  if (cudnnStatus_t s =
          checkOperand(call, C, extentBytes(cDesc->dims, cStrides, bytes), "C"))
    return s;
  double a = readScale(alpha, type), b = readScale(beta, type);
  std::vector<int> dims = cDesc->dims;
  // A broadcast dim reads A's element 0 along it.
  for (size_t i = 0; i < rank; ++i)
    if (aDesc->dims[i] == 1)
      aStrides[i] = 0;
  CUresult result =
      enqueue(handle->stream, call, [=](std::string *) -> CUresult {
        int64_t total = 1;
        for (int d : dims)
          total *= d;
        // Rows of the innermost dim, one task each.
        int64_t inner = dims[rank - 1];
        int64_t rows = total / inner;
        parallelFor(rows, [&](int64_t row) {
          int64_t aOffset = 0, cOffset = 0, rest = row;
          for (size_t i = rank - 1; i-- > 0;) {
            int64_t index = rest % dims[i];
            rest /= dims[i];
            aOffset += index * aStrides[i];
            cOffset += index * cStrides[i];
          }
          for (int64_t j = 0; j < inner; ++j) {
            int64_t ci = cOffset + j * cStrides[rank - 1];
            double value =
                a * loadElement(A, aOffset + j * aStrides[rank - 1], type);
            // beta == 0: C is not read, so NaN there does not survive.
            if (b != 0)
              value += b * loadElement(C, ci, type);
            storeElement(C, ci, type, value);
          }
        });
        return CUDA_SUCCESS;
      });
  if (result != CUDA_SUCCESS)
    return reject(CUDNN_STATUS_EXECUTION_FAILED, call,
                  "the stream refused the work (CUresult " +
                      std::to_string(int(result)) + ")");
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void *alpha,
                             const cudnnTensorDescriptor_t aDesc, const void *A,
                             const void *beta,
                             const cudnnTensorDescriptor_t cDesc, void *C) {
  return scaleAdd("cudnnAddTensor", /*broadcast=*/true, handle, alpha, aDesc,
                  A, beta, cDesc, C);
}

// cudnnTransformTensor: y = alpha * x + beta * y between two layouts of the
// same dims; the reference: BAD_PARAM when "the dimensions n, c, h, w or
// the dataType of the two tensor descriptors are different".
cudnnStatus_t cudnnTransformTensor(cudnnHandle_t handle, const void *alpha,
                                   const cudnnTensorDescriptor_t xDesc,
                                   const void *x, const void *beta,
                                   const cudnnTensorDescriptor_t yDesc,
                                   void *y) {
  return scaleAdd("cudnnTransformTensor", /*broadcast=*/false, handle, alpha,
                  xDesc, x, beta, yDesc, y);
}

} // extern "C"
