//===- HostDevice.cpp - the host device: dlopen'ed kernels + oneDNN -------===//
// Kernels come from the package's host shared object; GEMM goes to
// dnnl_sgemm and convolutions to oneDNN primitives on plain nchw/oihw
// (goihw with groups) f32 memory, cached by their parameters. f16/bf16
// library calls widen their operands to f32 copies, run the f32 path and
// round the result once (LibraryCalls.h ElementType).
#include "runtime/device/Device.h"
#include "runtime/device/HalfConversions.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unistd.h>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

namespace dlrt {
namespace {

using KernelFn = void (*)(void **);

class HostKernel : public DeviceKernel {
public:
  HostKernel(KernelFn fn, std::shared_ptr<void> library)
      : fn(fn), library(std::move(library)) {}
  KernelFn fn;
  /// Keeps the shared object loaded while any of its kernels lives.
  std::shared_ptr<void> library;
};

using dnnl::memory;
using Tag = memory::format_tag;

/// The oneDNN descriptors of one convolution shape.
struct ConvMemory {
  memory::desc src, weights, bias, dst;
  memory::dims strides, dilates, padL, padR;
};

ConvMemory convMemory(const ConvParams &p, bool withBias) {
  ConvMemory m;
  auto f32 = memory::data_type::f32;
  if (p.spatial == 3) {
    m.src = memory::desc({p.n, p.c, p.d, p.h, p.w}, f32, Tag::ncdhw);
    m.dst = memory::desc({p.n, p.k, p.o, p.p, p.q}, f32, Tag::ncdhw);
    if (p.group == 1)
      m.weights = memory::desc({p.k, p.c, p.t, p.r, p.s}, f32, Tag::oidhw);
    else
      m.weights = memory::desc(
          {p.group, p.k / p.group, p.c / p.group, p.t, p.r, p.s}, f32,
          Tag::goidhw);
    if (withBias)
      m.bias = memory::desc({p.k}, f32, Tag::a);
    m.strides = {p.stride_d, p.stride_h, p.stride_w};
    m.dilates = {p.dilation_d - 1, p.dilation_h - 1, p.dilation_w - 1};
    m.padL = {p.pad_front, p.pad_top, p.pad_left};
    m.padR = {p.pad_back, p.pad_bottom, p.pad_right};
    return m;
  }
  m.src = memory::desc({p.n, p.c, p.h, p.w}, f32, Tag::nchw);
  m.dst = memory::desc({p.n, p.k, p.p, p.q}, f32, Tag::nchw);
  if (p.group == 1)
    m.weights = memory::desc({p.k, p.c, p.r, p.s}, f32, Tag::oihw);
  else
    m.weights = memory::desc({p.group, p.k / p.group, p.c / p.group, p.r, p.s},
                             f32, Tag::goihw);
  if (withBias)
    m.bias = memory::desc({p.k}, f32, Tag::a);
  m.strides = {p.stride_h, p.stride_w};
  // oneDNN counts dilation from 0 (0 = dense).
  m.dilates = {p.dilation_h - 1, p.dilation_w - 1};
  m.padL = {p.pad_top, p.pad_left};
  m.padR = {p.pad_bottom, p.pad_right};
  return m;
}

std::vector<int64_t> convKey(int kind, const ConvParams &p) {
  return {kind,        p.n,          p.c,          p.h,        p.w,
          p.k,         p.r,          p.s,          p.p,        p.q,
          p.stride_h,  p.stride_w,   p.pad_top,    p.pad_left, p.pad_bottom,
          p.pad_right, p.dilation_h, p.dilation_w, p.group,    p.has_bias,
          p.spatial,   p.d,          p.t,          p.o,        p.stride_d,
          p.pad_front, p.pad_back,   p.dilation_d};
}

using dlc::exec::ElementType;

/// An f32 copy of the |count| f16/bf16 elements at |data|; empty for null.
std::vector<float> widen(const void *data, int64_t count, ElementType type) {
  std::vector<float> out;
  if (!data)
    return out;
  out.resize(size_t(count));
  const auto *bits = static_cast<const uint16_t *>(data);
  for (int64_t i = 0; i < count; ++i)
    out[size_t(i)] = type == ElementType::BF16 ? bfloat16BitsToFloat(bits[i])
                                               : halfBitsToFloat(bits[i]);
  return out;
}

/// Rounds |values| once (to nearest even) into f16/bf16 at |data|.
void narrow(const std::vector<float> &values, void *data, ElementType type) {
  auto *bits = static_cast<uint16_t *>(data);
  for (size_t i = 0; i < values.size(); ++i)
    bits[i] = type == ElementType::BF16 ? floatToBFloat16Bits(values[i])
                                        : floatToHalfBits(values[i]);
}

/// OK for the element types the host device runs, else the error naming
/// the supported ones.
Status checkElementType(ElementType type, const char *call) {
  if (type == ElementType::F32 || type == ElementType::F16 ||
      type == ElementType::BF16)
    return Status::OK();
  return Status::error(DLRT_INTERNAL,
                       std::string(call) + ": element type " +
                           dlc::exec::elementTypeName(type) +
                           " is not supported (f32, f16 and bf16 are)");
}

/// Element counts of a convolution's input, filter and output.
int64_t inputCount(const ConvParams &p) { return p.n * p.c * p.d * p.h * p.w; }
int64_t filterCount(const ConvParams &p) {
  return p.k * (p.c / p.group) * p.t * p.r * p.s;
}
int64_t outputCount(const ConvParams &p) { return p.n * p.k * p.o * p.p * p.q; }

/// The dims of a convolution's output, [N, K, P, Q] or [N, K, O, P, Q].
std::vector<int64_t> outputDims(const ConvParams &p) {
  if (p.spatial == 3)
    return {p.n, p.k, p.o, p.p, p.q};
  return {p.n, p.k, p.p, p.q};
}

/// Copies the dense row-major elements of |dims| at |src| to |dst|, where
/// they lie |strides| elements apart (ConvParams::y_strides).
void scatterStrided(const void *src, void *dst, const std::vector<int64_t> &dims,
                    const std::vector<int64_t> &strides, size_t elemBytes) {
  const auto *in = static_cast<const uint8_t *>(src);
  auto *out = static_cast<uint8_t *>(dst);
  const size_t rank = dims.size();
  const int64_t inner = dims[rank - 1], innerStride = strides[rank - 1];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d)
    rows *= dims[d];
  for (int64_t row = 0; row < rows; ++row) {
    int64_t at = 0, rest = row;
    for (size_t d = rank - 1; d-- > 0;) {
      at += (rest % dims[d]) * strides[d];
      rest /= dims[d];
    }
    const uint8_t *from = in + size_t(row * inner) * elemBytes;
    if (innerStride == 1) {
      std::memcpy(out + size_t(at) * elemBytes, from, size_t(inner) * elemBytes);
      continue;
    }
    for (int64_t i = 0; i < inner; ++i)
      std::memcpy(out + size_t(at + i * innerStride) * elemBytes,
                  from + size_t(i) * elemBytes, elemBytes);
  }
}

/// What the host device allocates for a request of |bytes|: a multiple of
/// its 256-byte alignment, at least 256 (0 when that overflows).
size_t roundedSize(size_t bytes) {
  constexpr size_t g = dlc::exec::kAllocationGranularityBytes;
  return ((bytes ? bytes : 1) + g - 1) / g * g;
}

class HostDevice : public Device {
public:
  HostDevice() : engine(dnnl::engine::kind::cpu, 0), stream(engine) {
    // The OpenMP runtime's default team: OMP_NUM_THREADS's first value when
    // set, else one thread per hardware thread.
    unsigned long threads = std::thread::hardware_concurrency();
    if (const char *env = std::getenv("OMP_NUM_THREADS")) {
      char *end = nullptr;
      unsigned long n = std::strtoul(env, &end, 10);
      if (end != env && n > 0 && (*end == '\0' || *end == ','))
        threads = n;
    }
    threads = threads ? threads : 1;
    deviceName = "host (" + std::to_string(threads) +
                 (threads == 1 ? " thread)" : " threads)");
  }

  dlrt_device_kind_t kind() const override { return DLRT_DEVICE_HOST; }
  std::string name() const override { return deviceName; }

  Status allocate(size_t bytes, DeviceBuffer *out) override {
    *out = DeviceBuffer();
    size_t rounded = roundedSize(bytes);
    if (rounded < bytes)
      return Status::error(DLRT_OUT_OF_MEMORY, "cannot allocate " +
                                                   std::to_string(bytes) +
                                                   " bytes of host memory");
    void *p = nullptr;
    if (posix_memalign(&p, 256, rounded) != 0 || !p)
      return Status::error(DLRT_OUT_OF_MEMORY, "cannot allocate " +
                                                   std::to_string(bytes) +
                                                   " bytes of host memory");
    out->data = p;
    out->bytes = bytes;
    std::lock_guard<std::mutex> lock(memoryMutex);
    usage.reservedBytes += int64_t(rounded);
    usage.usedBytes += int64_t(bytes);
    usage.reservedPeakBytes =
        std::max(usage.reservedPeakBytes, usage.reservedBytes);
    usage.usedPeakBytes = std::max(usage.usedPeakBytes, usage.usedBytes);
    return Status::OK();
  }

  void release(DeviceBuffer &buffer) override {
    if (buffer.data) {
      std::lock_guard<std::mutex> lock(memoryMutex);
      usage.reservedBytes -= int64_t(roundedSize(buffer.bytes));
      usage.usedBytes -= int64_t(buffer.bytes);
    }
    std::free(buffer.data);
    buffer = DeviceBuffer();
  }

  /// Counted in allocate/release: reserved is what posix_memalign was asked
  /// for (each size rounded up to 256 bytes, 256 for 0), used the sizes the
  /// callers asked for.
  Status memoryUsage(MemoryUsage *out) override {
    std::lock_guard<std::mutex> lock(memoryMutex);
    *out = usage;
    return Status::OK();
  }

  Status copyToDevice(void *dst, const void *src, size_t bytes) override {
    if (bytes)
      std::memmove(dst, src, bytes);
    return Status::OK();
  }
  Status copyToHost(void *dst, const void *src, size_t bytes) override {
    if (bytes)
      std::memmove(dst, src, bytes);
    return Status::OK();
  }
  Status fillZero(void *dst, size_t bytes) override {
    if (bytes)
      std::memset(dst, 0, bytes);
    return Status::OK();
  }
  Status copyOnDevice(void *dst, const void *src, size_t bytes) override {
    if (bytes)
      std::memmove(dst, src, bytes);
    return Status::OK();
  }

  Status loadKernels(const std::vector<uint8_t> &hostLibrary,
                     const std::vector<KernelSpec> &kernels,
                     std::vector<std::unique_ptr<DeviceKernel>> *out) override {
    out->clear();
    if (kernels.empty())
      return Status::OK();
    if (hostLibrary.empty())
      return Status::error(DLRT_INTERNAL,
                           "the package has kernels but no host library; "
                           "recompile it with host kernels");
    std::shared_ptr<void> library;
    Status s = openLibrary(hostLibrary, &library);
    if (!s.ok())
      return s;
    for (const KernelSpec &k : kernels) {
      dlerror();
      void *sym = dlsym(library.get(), k.name.c_str());
      if (!sym) {
        const char *err = dlerror();
        out->clear();
        return Status::error(DLRT_INTERNAL,
                             "the host library has no kernel '" + k.name + "'" +
                                 (err ? std::string(": ") + err : ""));
      }
      out->push_back(std::make_unique<HostKernel>(
          reinterpret_cast<KernelFn>(sym), library));
    }
    return Status::OK();
  }

  Status launch(DeviceKernel &kernel,
                const std::vector<void *> &args) override {
    auto &k = static_cast<HostKernel &>(kernel);
    std::vector<void *> a(args);
    k.fn(a.data());
    return Status::OK();
  }

  Status gemm(const GemmParams &p, const void *a, const void *b, const void *c,
              void *y, void *biasGrad, void *reluMask = nullptr) override {
    using dlc::exec::GemmEpilogue;
    const bool bgrad = dlc::exec::writesBiasGradient(p.epilogue);
    const bool maskOut = dlc::exec::writesReluMask(p.epilogue);
    const bool maskIn = dlc::exec::readsReluMask(p.epilogue);
    if (bgrad && !biasGrad)
      return Status::error(DLRT_INTERNAL,
                           "gemm: the bias-gradient epilogue has no dBias");
    if ((maskOut || maskIn) && !reluMask)
      return Status::error(DLRT_INTERNAL,
                           "gemm: the ReLU-mask epilogue has no Aux");
    // The epilogue after the product (and the ReLU, which gemmF32 applies),
    // on the f32 result: the mask, the masked gradient, the bias gradient.
    auto epilogue = [&](const float *fa, const float *fb, float *fy,
                        float *fg) {
      if (maskOut)
        writeReluMask(p, fy, static_cast<uint32_t *>(reluMask));
      if (maskIn)
        applyReluMask(p, static_cast<const uint32_t *>(reluMask), fy);
      if (p.epilogue == GemmEpilogue::DReluBiasGrad)
        columnSumF32(p, fy, fg);
      else if (bgrad)
        biasGradientF32(p, fa, fb, fg);
    };
    if (p.dtype == ElementType::F32) {
      Status s = gemmF32(p, static_cast<const float *>(a),
                         static_cast<const float *>(b),
                         static_cast<const float *>(c), static_cast<float *>(y));
      if (s.ok())
        epilogue(static_cast<const float *>(a), static_cast<const float *>(b),
                 static_cast<float *>(y), static_cast<float *>(biasGrad));
      return s;
    }
    if (Status s = checkElementType(p.dtype, "gemm"); !s.ok())
      return s;
    const ElementType t = p.dtype;
    std::vector<float> fa = widen(a, p.m * p.k, t), fb = widen(b, p.k * p.n, t);
    // An f32 bias row (f32_bias) is added as it is: one rounding, of Y.
    std::vector<float> fc =
        p.f32_bias && p.has_c ? std::vector<float>(static_cast<const float *>(c),
                                        static_cast<const float *>(c) + p.n)
        : p.has_c  ? widen(c, p.c_is_row_vector ? p.n : p.m * p.n, t)
                   : std::vector<float>();
    // Without C, a nonzero beta accumulates onto the previous Y.
    std::vector<float> fy = !p.has_c && p.beta != 0.0f
                                ? widen(y, p.m * p.n, t)
                                : std::vector<float>(size_t(p.m * p.n));
    Status s = gemmF32(p, fa.data(), fb.data(), p.has_c ? fc.data() : nullptr,
                       fy.data());
    if (!s.ok())
      return s;
    // The mask and the bias gradient from the f32 result (before Y is
    // rounded), as cuBLASLt's epilogue computes them; dBias rounded once.
    std::vector<float> fg(size_t(
        bgrad ? (p.epilogue == GemmEpilogue::BiasGradA ? p.m : p.n) : 0));
    epilogue(fa.data(), fb.data(), fy.data(), fg.data());
    narrow(fy, y, t);
    if (bgrad && p.f32_bias) // an f32 dBias: the f32 sum, unrounded
      std::memcpy(biasGrad, fg.data(), fg.size() * sizeof(float));
    else if (bgrad)
      narrow(fg, biasGrad, t);
    return Status::OK();
  }

  Status convForward(const ConvParams &p, const void *x, const void *w,
                     const void *bias, void *y) override {
    if (p.dtype == ElementType::F32)
      return convForwardF32(
          p, static_cast<const float *>(x), static_cast<const float *>(w),
          static_cast<const float *>(bias), static_cast<float *>(y));
    if (Status s = checkElementType(p.dtype, "convolution forward"); !s.ok())
      return s;
    std::vector<float> fx = widen(x, inputCount(p), p.dtype),
                       fw = widen(w, filterCount(p), p.dtype),
                       fbias = widen(bias, p.k, p.dtype),
                       fy(size_t(outputCount(p)));
    ConvParams dense = p;
    dense.y_strides.clear();
    Status s = convForwardF32(dense, fx.data(), fw.data(),
                              bias ? fbias.data() : nullptr, fy.data());
    if (!s.ok())
      return s;
    if (p.y_strides.empty()) {
      narrow(fy, y, p.dtype);
    } else {
      std::vector<uint16_t> bits(fy.size());
      narrow(fy, bits.data(), p.dtype);
      scatterStrided(bits.data(), y, outputDims(p), p.y_strides, 2);
    }
    return s;
  }

  /// The forward training convolution of |m| with every layout left to
  /// oneDNN (format any): the hint both backward primitives need.
  dnnl::convolution_forward::primitive_desc
  trainingForwardAnyLayout(const ConvMemory &m) {
    return dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(
            dnnl::prop_kind::forward_training,
            dnnl::algorithm::convolution_direct, anyLayout(m.src),
            anyLayout(m.weights), anyLayout(m.dst), m.strides, m.dilates,
            m.padL, m.padR),
        engine);
  }

  Status convBackwardData(const ConvParams &p, const void *dy, const void *w,
                          void *dx) override {
    if (p.dtype == ElementType::F32)
      return convBackwardDataF32(p, static_cast<const float *>(dy),
                                 static_cast<const float *>(w),
                                 static_cast<float *>(dx));
    if (Status s = checkElementType(p.dtype, "convolution backward data");
        !s.ok())
      return s;
    std::vector<float> fdy = widen(dy, outputCount(p), p.dtype),
                       fw = widen(w, filterCount(p), p.dtype),
                       fdx(size_t(inputCount(p)));
    Status s = convBackwardDataF32(p, fdy.data(), fw.data(), fdx.data());
    if (s.ok())
      narrow(fdx, dx, p.dtype);
    return s;
  }

  Status convBackwardFilter(const ConvParams &p, const void *x, const void *dy,
                            void *dw) override {
    if (p.dtype == ElementType::F32)
      return convBackwardFilterF32(p, static_cast<const float *>(x),
                                   static_cast<const float *>(dy),
                                   static_cast<float *>(dw));
    if (Status s = checkElementType(p.dtype, "convolution backward filter");
        !s.ok())
      return s;
    std::vector<float> fx = widen(x, inputCount(p), p.dtype),
                       fdy = widen(dy, outputCount(p), p.dtype),
                       fdw(size_t(filterCount(p)));
    Status s = convBackwardFilterF32(p, fx.data(), fdy.data(), fdw.data());
    if (s.ok())
      narrow(fdw, dw, p.dtype);
    return s;
  }

  Status synchronize() override { return Status::OK(); }

private:
  // The f32 library calls (oneDNN).
  Status gemmF32(const GemmParams &p, const float *a, const float *b,
                 const float *c, float *y) {
    float beta = p.beta;
    if (p.has_c) {
      // Y = alpha op(A) op(B) + beta C: put C in Y, then accumulate.
      if (beta == 0.0f) {
        // C is not read (BLAS convention); dnnl_sgemm ignores Y with beta 0.
      } else if (p.c_is_row_vector) {
        for (int64_t i = 0; i < p.m; ++i)
          if (y + i * p.n != c)
            std::memmove(y + i * p.n, c, sizeof(float) * p.n);
      } else if (c != y) {
        std::memmove(y, c, sizeof(float) * p.m * p.n);
      }
    }
    dnnl_status_t st = dnnl_sgemm(
        p.trans_a ? 'T' : 'N', p.trans_b ? 'T' : 'N', p.m, p.n, p.k, p.alpha, a,
        p.trans_a ? p.m : p.k, b, p.trans_b ? p.k : p.n, beta, y, p.n);
    if (st != dnnl_success)
      return Status::error(DLRT_INTERNAL,
                           "dnnl_sgemm failed with status " +
                               std::to_string(static_cast<int>(st)) +
                               " (M=" + std::to_string(p.m) +
                               " N=" + std::to_string(p.n) +
                               " K=" + std::to_string(p.k) + ")");
    if (p.epilogue == dlc::exec::GemmEpilogue::Relu ||
        p.epilogue == dlc::exec::GemmEpilogue::ReluAux) {
      // max(v, 0) as cuBLASLt's RELU epilogue: a NaN gives 0.
      const int64_t count = p.m * p.n;
      for (int64_t i = 0; i < count; ++i)
        y[i] = y[i] > 0.0f ? y[i] : 0.0f;
    }
    return Status::OK();
  }

  /// The ReLU bit-mask of a ReluAux gemm's (already rectified) result |y|
  /// [M, N]: bit j % 32 of word i * W + j / 32 (W = reluMaskWords(N)) is
  /// set where y[i, j] > 0; the bits past N are 0 (LibraryCalls.h
  /// GemmEpilogue).
  static void writeReluMask(const GemmParams &p, const float *y,
                            uint32_t *mask) {
    const int64_t words = dlc::exec::reluMaskWords(p.n);
    for (int64_t i = 0; i < p.m; ++i) {
      uint32_t *row = mask + i * words;
      std::fill(row, row + words, 0u);
      for (int64_t j = 0; j < p.n; ++j)
        if (y[i * p.n + j] > 0.0f)
          row[j / 32] |= 1u << (j % 32);
    }
  }

  /// DRelu: y[i, j] = +0 where the mask's bit (i, j) is clear.
  static void applyReluMask(const GemmParams &p, const uint32_t *mask,
                            float *y) {
    const int64_t words = dlc::exec::reluMaskWords(p.n);
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j)
        if (!((mask[i * words + j / 32] >> (j % 32)) & 1u))
          y[i * p.n + j] = 0.0f;
  }

  /// DReluBiasGrad's dBias[n] = sum over m of y[m, n], in f64 in order of m
  /// and rounded once, as the host's column-sum reduction kernels sum (so
  /// the fused bias gradient is bit-identical to the unfused one).
  static void columnSumF32(const GemmParams &p, const float *y, float *out) {
    std::vector<double> sum(size_t(p.n), 0.0);
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j)
        sum[size_t(j)] += double(y[i * p.n + j]);
    for (int64_t j = 0; j < p.n; ++j)
      out[j] = float(sum[size_t(j)]);
  }

  /// The bias gradient of a BiasGradA / BiasGradB gemm: dBias[m] = sum over
  /// k of op(A)[m, k], or dBias[n] = sum over k of op(B)[k, n] (row-major A
  /// [M,K] / [K,M] with trans_a, B [K,N] / [N,K] with trans_b), each summed
  /// in f64 in order of k and rounded once to f32, as the host's reduction
  /// kernels sum, so that the fused and the unfused bias gradient are
  /// bit-identical on the host.
  static void biasGradientF32(const GemmParams &p, const float *a,
                              const float *b, float *out) {
    const bool ofA = p.epilogue == dlc::exec::GemmEpilogue::BiasGradA;
    const bool trans = ofA ? p.trans_a : p.trans_b;
    // The operand's rows and columns as stored, and which of them is k.
    const float *x = ofA ? a : b;
    const int64_t length = ofA ? p.m : p.n;
    // op(A) [m,k] is A [M,K] (k along a row) or A^T of [K,M] (k down a
    // column); op(B) [k,n] is B [K,N] (k down a column) or B^T of [N,K].
    const bool kAlongRow = ofA ? !trans : trans;
    if (kAlongRow) {
      for (int64_t i = 0; i < length; ++i) {
        double sum = 0.0;
        for (int64_t q = 0; q < p.k; ++q)
          sum += double(x[i * p.k + q]);
        out[i] = float(sum);
      }
    } else {
      std::vector<double> sums(size_t(length), 0.0);
      for (int64_t q = 0; q < p.k; ++q)
        for (int64_t i = 0; i < length; ++i)
          sums[size_t(i)] += double(x[q * length + i]);
      for (int64_t i = 0; i < length; ++i)
        out[i] = float(sums[size_t(i)]);
    }
  }

  Status convForwardF32(const ConvParams &p, const float *x, const float *w,
                        const float *bias, float *y) {
    try {
      std::lock_guard<std::mutex> lock(mutex);
      bool withBias = p.has_bias && bias;
      ConvParams key = p;
      key.has_bias = withBias;
      // A strided output (ConvParams::y_strides: a channel slice of a
      // concatenation's buffer) is oneDNN's dst memory descriptor with the
      // slot's strides, when oneDNN runs it with the implementation it
      // chooses for the dense output (so results are bit-identical to the
      // dense call's); otherwise the dense result is copied into the slot.
      std::vector<int64_t> k = convKey(0, key);
      k.insert(k.end(), p.y_strides.begin(), p.y_strides.end());
      auto &prim = cache[k];
      ConvMemory m = convMemory(p, withBias);
      const bool strided = !p.y_strides.empty();
      memory::desc stridedDst;
      if (strided)
        stridedDst = memory::desc(outputDims(p), memory::data_type::f32,
                                  p.y_strides);
      auto pdOf = [&](const memory::desc &dst) {
        return dnnl::convolution_forward::primitive_desc(
            dnnl::convolution_forward::desc(
                dnnl::prop_kind::forward_training,
                dnnl::algorithm::convolution_direct, m.src, m.weights,
                withBias ? m.bias : memory::desc(), dst, m.strides, m.dilates,
                m.padL, m.padR),
            engine);
      };
      if (!prim) {
        dnnl::convolution_forward::primitive_desc pd = pdOf(m.dst);
        if (strided) {
          try {
            dnnl::convolution_forward::primitive_desc spd = pdOf(stridedDst);
            if (std::string(spd.impl_info_str()) ==
                std::string(pd.impl_info_str()))
              pd = spd;
            else
              denseDst.insert(k);
          } catch (const dnnl::error &) {
            denseDst.insert(k);
          }
        }
        prim = std::make_unique<dnnl::primitive>(dnnl::convolution_forward(pd));
      }
      const bool viaDense = strided && denseDst.count(k);
      std::vector<float> dense(viaDense ? size_t(outputCount(p)) : 0);
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, memory(m.src, engine, const_cast<float *>(x))},
          {DNNL_ARG_WEIGHTS, memory(m.weights, engine, const_cast<float *>(w))},
          {DNNL_ARG_DST, viaDense  ? memory(m.dst, engine, dense.data())
                         : strided ? memory(stridedDst, engine, y)
                                   : memory(m.dst, engine, y)}};
      if (withBias)
        args[DNNL_ARG_BIAS] = memory(m.bias, engine, const_cast<float *>(bias));
      prim->execute(stream, args);
      stream.wait();
      if (viaDense)
        scatterStrided(dense.data(), y, outputDims(p), p.y_strides,
                       sizeof(float));
    } catch (const dnnl::error &e) {
      return convError("forward", p, e);
    }
    return Status::OK();
  }

  /// A convolution backward primitive on the layouts oneDNN prefers for it
  /// (format `any`: nChw16c-style blocked activations and blocked weights on
  /// AVX-512, where its direct jit_uni / jit_dw / jit_1x1 kernels run; on
  /// dlrt's plain nchw/oihw descriptors it picks im2col + sgemm, `gemm:jit`,
  /// for every convolution), with the reorders from the plain operands and
  /// back and the blocked buffers they go through, made once per shape. This
  /// is what PyTorch's mkldnn_convolution does on plain tensors (ideep:
  /// reorder to the primitive's layout, run, reorder back).
  struct BlockedConv {
    std::unique_ptr<dnnl::primitive> prim;
    /// Per operand (two inputs, then the output): the reorder from (inputs)
    /// or to (output) the plain layout, null where the layouts agree, and
    /// the blocked buffer.
    std::unique_ptr<dnnl::primitive> reorder[3];
    memory buffer[3];
  };

  static memory::desc anyLayout(const memory::desc &d) {
    return memory::desc(d.dims(), memory::data_type::f32, Tag::any);
  }

  /// Fills |bc|'s reorders and buffers for operands with plain descriptors
  /// |plain| and the primitive's |chosen| ones (inputs first, output last).
  void blockedOperands(BlockedConv &bc, const memory::desc (&plain)[3],
                       const memory::desc (&chosen)[3]) {
    for (int i = 0; i < 3; ++i) {
      if (plain[i] == chosen[i])
        continue;
      bc.buffer[i] = memory(chosen[i], engine);
      bc.reorder[i] = std::make_unique<dnnl::primitive>(
          i < 2 ? dnnl::reorder(dnnl::reorder::primitive_desc(
                      engine, plain[i], engine, chosen[i]))
                : dnnl::reorder(dnnl::reorder::primitive_desc(
                      engine, chosen[i], engine, plain[i])));
    }
  }

  /// Runs |bc| on plain operands |in0|, |in1| (read) and |out| (written),
  /// bound to the primitive's arguments |args|.
  void runBlocked(BlockedConv &bc, const memory::desc (&plain)[3],
                  const int (&args)[3], void *in0, void *in1, void *out) {
    void *ptr[3] = {in0, in1, out};
    std::unordered_map<int, memory> bind;
    for (int i = 0; i < 3; ++i) {
      memory user(plain[i], engine, ptr[i]);
      if (!bc.reorder[i]) {
        bind[args[i]] = user;
        continue;
      }
      if (i < 2)
        bc.reorder[i]->execute(stream, {{DNNL_ARG_FROM, user},
                                        {DNNL_ARG_TO, bc.buffer[i]}});
      bind[args[i]] = bc.buffer[i];
    }
    bc.prim->execute(stream, bind);
    if (bc.reorder[2])
      bc.reorder[2]->execute(
          stream, {{DNNL_ARG_FROM, bc.buffer[2]},
                   {DNNL_ARG_TO, memory(plain[2], engine, ptr[2])}});
    stream.wait();
  }

  Status convBackwardDataF32(const ConvParams &p, const float *dy,
                             const float *w, float *dx) {
    try {
      std::lock_guard<std::mutex> lock(mutex);
      BlockedConv &bc = blocked[convKey(1, p)];
      ConvMemory m = convMemory(p, false);
      const memory::desc plain[3] = {m.dst, m.weights, m.src};
      if (!bc.prim) {
        auto hint = trainingForwardAnyLayout(m);
        dnnl::convolution_backward_data::primitive_desc pd(
            dnnl::convolution_backward_data::desc(
                dnnl::algorithm::convolution_direct, anyLayout(m.src),
                anyLayout(m.weights), anyLayout(m.dst), m.strides, m.dilates,
                m.padL, m.padR),
            engine, hint);
        const memory::desc chosen[3] = {pd.diff_dst_desc(), pd.weights_desc(),
                                        pd.diff_src_desc()};
        blockedOperands(bc, plain, chosen);
        bc.prim = std::make_unique<dnnl::primitive>(
            dnnl::convolution_backward_data(pd));
      }
      runBlocked(bc, plain, {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS,
                             DNNL_ARG_DIFF_SRC},
                 const_cast<float *>(dy), const_cast<float *>(w), dx);
    } catch (const dnnl::error &e) {
      return convError("backward data", p, e);
    }
    return Status::OK();
  }

  Status convBackwardFilterF32(const ConvParams &p, const float *x,
                               const float *dy, float *dw) {
    try {
      std::lock_guard<std::mutex> lock(mutex);
      BlockedConv &bc = blocked[convKey(2, p)];
      ConvMemory m = convMemory(p, false);
      const memory::desc plain[3] = {m.src, m.dst, m.weights};
      if (!bc.prim) {
        auto hint = trainingForwardAnyLayout(m);
        dnnl::convolution_backward_weights::primitive_desc pd(
            dnnl::convolution_backward_weights::desc(
                dnnl::algorithm::convolution_direct, anyLayout(m.src),
                anyLayout(m.weights), anyLayout(m.dst), m.strides, m.dilates,
                m.padL, m.padR),
            engine, hint);
        const memory::desc chosen[3] = {pd.src_desc(), pd.diff_dst_desc(),
                                        pd.diff_weights_desc()};
        blockedOperands(bc, plain, chosen);
        bc.prim = std::make_unique<dnnl::primitive>(
            dnnl::convolution_backward_weights(pd));
      }
      runBlocked(bc, plain, {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST,
                             DNNL_ARG_DIFF_WEIGHTS},
                 const_cast<float *>(x), const_cast<float *>(dy), dw);
    } catch (const dnnl::error &e) {
      return convError("backward filter", p, e);
    }
    return Status::OK();
  }

  static Status convError(const char *what, const ConvParams &p,
                          const dnnl::error &e) {
    return Status::error(
        DLRT_INTERNAL,
        std::string("oneDNN convolution ") + what + " failed for input " +
            std::to_string(p.n) + "x" + std::to_string(p.c) + "x" +
            std::to_string(p.h) + "x" + std::to_string(p.w) + ", filter " +
            std::to_string(p.k) + "x" + std::to_string(p.c / p.group) + "x" +
            std::to_string(p.r) + "x" + std::to_string(p.s) + ": " + e.what());
  }

  /// Writes the ELF bytes to a temporary file, dlopens it and unlinks it.
  static Status openLibrary(const std::vector<uint8_t> &bytes,
                            std::shared_ptr<void> *out) {
    const char *tmpdir = std::getenv("TMPDIR");
    std::string path = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") +
                       "/dlrt-kernels-XXXXXX";
    std::vector<char> name(path.begin(), path.end());
    name.push_back('\0');
    int fd = mkstemp(name.data());
    if (fd < 0)
      return Status::error(DLRT_INTERNAL,
                           "cannot create a temporary file for the host "
                           "kernels in '" +
                               path + "': " + std::strerror(errno));
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        int err = errno;
        close(fd);
        unlink(name.data());
        return Status::error(DLRT_INTERNAL,
                             std::string("cannot write the host kernels to '") +
                                 name.data() + "': " + std::strerror(err));
      }
      done += static_cast<size_t>(n);
    }
    close(fd);
    void *handle = dlopen(name.data(), RTLD_NOW | RTLD_LOCAL);
    const char *err = handle ? nullptr : dlerror();
    std::string message = err ? err : "";
    unlink(name.data());
    if (!handle)
      return Status::error(
          DLRT_INTERNAL, "cannot load the package's host kernels: " + message);
    *out = std::shared_ptr<void>(handle, [](void *h) { dlclose(h); });
    return Status::OK();
  }

  dnnl::engine engine;
  dnnl::stream stream;
  std::mutex mutex;
  std::map<std::vector<int64_t>, std::unique_ptr<dnnl::primitive>> cache;
  /// Backward convolutions on oneDNN's preferred layouts, by convKey.
  std::map<std::vector<int64_t>, BlockedConv> blocked;
  /// Strided-output convolutions (cache keys) that oneDNN would run with
  /// another implementation than the dense one: they write a dense
  /// temporary that is then copied into the slot.
  std::set<std::vector<int64_t>> denseDst;
  std::string deviceName;
  std::mutex memoryMutex; // guards usage
  MemoryUsage usage;
};

} // namespace

std::unique_ptr<Device> createHostDevice() {
  return std::make_unique<HostDevice>();
}

} // namespace dlrt
