//===- CudnnState.h - the stand-in cuDNN's handles and descriptors -*- C++
//-*-===//
// What Cudnn.cpp (handles, tensor/filter/convolution descriptors,
// cudnnAddTensor) and CudnnConv.cpp (algorithms, workspaces, the three
// convolutions) share. Test-only; never shipped.
#ifndef DLC_TEST_CUDA_STANDIN_CUDNNSTATE_H
#define DLC_TEST_CUDA_STANDIN_CUDNNSTATE_H

#include <cuda.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

/// A cuDNN handle: the stream its work is issued on (nullptr: the legacy
/// default stream).
struct cudnnContext {
  CUstream stream = nullptr;
};

/// A tensor descriptor: dims and strides in elements, outermost (N) first,
/// whatever the format it was set with (NHWC is stored as NCHW dims with
/// NHWC's strides, as cuDNN itself reports it through the getters).
struct cudnnTensorStruct {
  bool set = false;
  cudnnDataType_t dataType = CUDNN_DATA_FLOAT;
  std::vector<int> dims, strides;
};

/// A filter descriptor: dims in the API's logical order (K, C, spatial...)
/// and the physical layout (NCHW: K C spatial packed; NHWC: K spatial C).
struct cudnnFilterStruct {
  bool set = false;
  cudnnDataType_t dataType = CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
  std::vector<int> dims;
};

/// A convolution descriptor: one pad/stride/dilation per spatial dimension.
struct cudnnConvolutionStruct {
  bool set = false;
  std::vector<int> pads, strides, dilations;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cudnnDataType_t computeType = CUDNN_DATA_FLOAT;
  int groups = 1;
  cudnnMathType_t mathType = CUDNN_DEFAULT_MATH;
};

namespace dlc::standin::dnn {

/// Bytes of one element of |type|, 0 for a type the stand-in does not know.
size_t elementSize(cudnnDataType_t type);

/// The element strides of a packed filter in |format|, for its logical dims
/// (K, C, spatial...).
std::vector<int64_t> filterStrides(const cudnnFilterStruct &filter);

/// Bytes from the first to one past the last element a tensor with these
/// dims and strides touches.
size_t extentBytes(const std::vector<int> &dims,
                   const std::vector<int64_t> &strides, size_t elementBytes);

/// Checks that |pointer| is not null and that the |bytes| it addresses lie in
/// one live device allocation. Returns CUDNN_STATUS_SUCCESS, BAD_PARAM for
/// null (as the real one checks its pointer arguments), or EXECUTION_FAILED
/// after a stderr line "<call>: <operand> ..." (a kernel reading outside its
/// allocation would fault on a GPU).
cudnnStatus_t checkOperand(const char *call, const void *pointer, size_t bytes,
                           const char *operand);

/// Writes "dlrt-cuda-standin: <call>: <why>" to stderr when the stand-in is
/// verbose, and returns |status|, so a rejection's reason can be found.
cudnnStatus_t reject(cudnnStatus_t status, const char *call,
                     const std::string &why);

/// Reads a scaling factor (alpha or beta) from host memory: a double for
/// CUDNN_DATA_DOUBLE tensors, a float otherwise (the cuDNN documentation's
/// "Scaling Parameters").
double readScale(const void *scale, cudnnDataType_t dataType);

/// Loads element |i| of the array at |base| of |type| as a double.
double loadElement(const void *base, int64_t i, cudnnDataType_t type);
/// Stores |value| into element |i|, rounding to nearest even for HALF and
/// BFLOAT16 as the GPU's conversions do.
void storeElement(void *base, int64_t i, cudnnDataType_t type, double value);

} // namespace dlc::standin::dnn

#endif
