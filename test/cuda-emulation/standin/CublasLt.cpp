//===- CublasLt.cpp - the stand-in cuBLASLt: handles, descriptors, checks ===//
// cuBLASLt's C API (cublasLt.h of CUDA 13) on the host, for tests without a
// GPU: the descriptors and their attributes, a heuristic that checks the
// problem and returns algorithms with a workspace size and the alignments
// they assume, and cublasLtMatmul, which checks everything again (shapes,
// types, workspace, alignment, every operand's extent against its device
// allocation) and enqueues the GEMM (CublasLtKernel.cpp) on the stream.
//
// Status codes follow cublasLt.h's \retval lists; where the header is
// silent, the choice and its source are stated at the check.
#include "CublasLtKernel.h"
#include "Standin.h"

#include <cublasLt.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <unordered_set>

using namespace dlc::standin;
using dlc::standin::lt::elementSize;
using dlc::standin::lt::MatmulPlan;
using dlc::standin::lt::Operand;

/// The handle: cuBLASLt keeps the device and its properties here; the
/// stand-in has one device and keeps nothing.
struct cublasLtContext {
  int device = 0;
};

namespace {

/// Attribute values by id, each in the low bytes of a uint64_t, with the
/// size the header gives each attribute's type (0: no such attribute).
template <size_t N> struct Attributes {
  uint64_t value[N] = {};
  const size_t *sizes;
  explicit Attributes(const size_t *sizes) : sizes(sizes) {}
  size_t sizeOf(int attr) const {
    return attr >= 0 && size_t(attr) < N ? sizes[attr] : 0;
  }
  template <typename T> T get(int attr) const {
    T t;
    std::memcpy(&t, &value[attr], sizeof t);
    return t;
  }
  template <typename T> void put(int attr, T t) {
    value[attr] = 0;
    std::memcpy(&value[attr], &t, sizeof t);
  }
};

// cublasLtMatrixLayoutAttribute_t: TYPE uint32, ORDER int32, ROWS/COLS
// uint64, LD int64, BATCH_COUNT int32, STRIDED_BATCH_OFFSET int64,
// PLANE_OFFSET int64, BATCH_MODE uint32.
constexpr size_t kLayoutSizes[9] = {4, 4, 8, 8, 8, 4, 8, 8, 4};
// cublasLtMatmulDescAttributes_t (ids 9, 16 and 27..30 do not exist).
constexpr size_t kDescSizes[39] = {4, 4, 4, 4, 4, 4, 4, 4, 8, 0, // 0..9
                                   8, 8, 8, 8, 8, 4, 0, 8, 8, 8, // 10..19
                                   8, 8, 4, 8, 8, 1, 4, 0, 0, 0, // 20..29
                                   0, 4, 4, 4, 4, 4, 8, 4, 8};   // 30..38
// cublasLtMatmulPreferenceAttributes_t: SEARCH_MODE uint32, MAX_WORKSPACE
// uint64, REDUCTION_SCHEME_MASK uint32, MIN_ALIGNMENT_* uint32,
// MAX_WAVES_COUNT float, IMPL_MASK uint64.
constexpr size_t kPrefSizes[13] = {4, 8, 0, 4, 0, 4, 4, 4, 4, 4, 0, 0, 8};

struct Layout {
  Attributes<9> attrs{kLayoutSizes};
};
struct Desc {
  Attributes<39> attrs{kDescSizes};
};
struct Pref {
  Attributes<13> attrs{kPrefSizes};
};

/// Live objects, so that a destroyed or made-up handle is an error with a
/// message instead of a read of freed memory.
std::mutex liveMutex;
std::unordered_set<const void *> &liveObjects() {
  static std::unordered_set<const void *> objects;
  return objects;
}
void addLive(const void *p) {
  std::lock_guard<std::mutex> lock(liveMutex);
  liveObjects().insert(p);
}
bool removeLive(const void *p) {
  std::lock_guard<std::mutex> lock(liveMutex);
  return liveObjects().erase(p) == 1;
}
bool isLive(const void *p) {
  std::lock_guard<std::mutex> lock(liveMutex);
  return p && liveObjects().count(p);
}

cublasStatus_t fail(cublasStatus_t status, const char *function,
                    const std::string &message) {
  log(std::string(function) + ": " + cublasLtGetStatusName(status) + ": " +
          message,
      /*always=*/true);
  return status;
}

template <typename Impl, typename Handle> Impl *impl(Handle h) {
  return isLive(h) ? reinterpret_cast<Impl *>(h) : nullptr;
}

template <size_t N>
cublasStatus_t setAttribute(const char *function, Attributes<N> &attrs,
                            int attr, const void *buf, size_t sizeInBytes) {
  size_t size = attrs.sizeOf(attr);
  if (size == 0)
    return fail(CUBLAS_STATUS_INVALID_VALUE, function,
                "unknown attribute " + std::to_string(attr));
  if (!buf || sizeInBytes != size)
    return fail(CUBLAS_STATUS_INVALID_VALUE, function,
                "attribute " + std::to_string(attr) + " takes " +
                    std::to_string(size) + " bytes, got " +
                    std::to_string(sizeInBytes) +
                    (buf ? "" : " and a null buffer"));
  attrs.value[attr] = 0;
  std::memcpy(&attrs.value[attr], buf, size);
  return CUBLAS_STATUS_SUCCESS;
}

// Per cublasLt.h: sizeInBytes == 0 asks for the size in *sizeWritten;
// otherwise it must match the attribute's size exactly.
template <size_t N>
cublasStatus_t getAttribute(const char *function, const Attributes<N> &attrs,
                            int attr, void *buf, size_t sizeInBytes,
                            size_t *sizeWritten) {
  size_t size = attrs.sizeOf(attr);
  if (size == 0)
    return fail(CUBLAS_STATUS_INVALID_VALUE, function,
                "unknown attribute " + std::to_string(attr));
  if (sizeInBytes == 0) {
    if (!sizeWritten)
      return fail(CUBLAS_STATUS_INVALID_VALUE, function,
                  "sizeInBytes is 0 and sizeWritten is null");
    *sizeWritten = size;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (!buf || sizeInBytes != size)
    return fail(CUBLAS_STATUS_INVALID_VALUE, function,
                "attribute " + std::to_string(attr) + " takes " +
                    std::to_string(size) + " bytes, got " +
                    std::to_string(sizeInBytes));
  std::memcpy(buf, &attrs.value[attr], size);
  if (sizeWritten)
    *sizeWritten = size;
  return CUBLAS_STATUS_SUCCESS;
}

uint32_t alignmentOf(const void *p, uint32_t cap = 256) {
  uint32_t a = cap;
  while (a > 1 && uintptr_t(p) % a != 0)
    a /= 2;
  return a;
}

std::string typeName(int type) {
  switch (type) {
  case CUDA_R_32F:
    return "CUDA_R_32F";
  case CUDA_R_16F:
    return "CUDA_R_16F";
  case CUDA_R_16BF:
    return "CUDA_R_16BF";
  default:
    return "cudaDataType " + std::to_string(type);
  }
}

bool isKnownEpilogue(uint32_t e) {
  switch (e) {
  case CUBLASLT_EPILOGUE_DEFAULT:
  case CUBLASLT_EPILOGUE_RELU:
  case CUBLASLT_EPILOGUE_RELU_AUX:
  case CUBLASLT_EPILOGUE_BIAS:
  case CUBLASLT_EPILOGUE_RELU_BIAS:
  case CUBLASLT_EPILOGUE_RELU_AUX_BIAS:
  case CUBLASLT_EPILOGUE_DRELU:
  case CUBLASLT_EPILOGUE_DRELU_BGRAD:
  case CUBLASLT_EPILOGUE_GELU:
  case CUBLASLT_EPILOGUE_GELU_AUX:
  case CUBLASLT_EPILOGUE_GELU_BIAS:
  case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
  case CUBLASLT_EPILOGUE_DGELU:
  case CUBLASLT_EPILOGUE_DGELU_BGRAD:
  case CUBLASLT_EPILOGUE_BGRADA:
  case CUBLASLT_EPILOGUE_BGRADB:
    return true;
  default:
    return false;
  }
}
bool usesBias(uint32_t e) {
  return (e & CUBLASLT_EPILOGUE_BIAS) || (e & 16) ||
         e == CUBLASLT_EPILOGUE_BGRADA || e == CUBLASLT_EPILOGUE_BGRADB;
}
bool writesBias(uint32_t e) {
  return usesBias(e) && !(e & CUBLASLT_EPILOGUE_BIAS);
}
bool usesAux(uint32_t e) { return (e & 128) != 0; }
bool isReluAux(uint32_t e) { return usesAux(e) && (e & (2 | 8)); }

Operand operandOf(const Layout &l, const void *data) {
  Operand op;
  op.data = data;
  op.type = cudaDataType(l.attrs.get<uint32_t>(CUBLASLT_MATRIX_LAYOUT_TYPE));
  op.order = l.attrs.get<int32_t>(CUBLASLT_MATRIX_LAYOUT_ORDER);
  op.rows = int64_t(l.attrs.get<uint64_t>(CUBLASLT_MATRIX_LAYOUT_ROWS));
  op.cols = int64_t(l.attrs.get<uint64_t>(CUBLASLT_MATRIX_LAYOUT_COLS));
  op.ld = l.attrs.get<int64_t>(CUBLASLT_MATRIX_LAYOUT_LD);
  op.stride = l.attrs.get<int64_t>(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
  return op;
}

/// Elements from the first to one past the last element of all batches.
int64_t spanOf(const Operand &op, int32_t batch) {
  if (op.rows == 0 || op.cols == 0)
    return 0;
  int64_t one = op.order == CUBLASLT_ORDER_ROW
                    ? (op.rows - 1) * op.ld + op.cols
                    : (op.cols - 1) * op.ld + op.rows;
  return one + int64_t(batch - 1) * op.stride;
}

std::string shapeOf(const Operand &op) {
  return std::to_string(op.rows) + " x " + std::to_string(op.cols) +
         (op.order == CUBLASLT_ORDER_ROW ? " (row-major, ld " : " (ld ") +
         std::to_string(op.ld) + ")";
}

/// checkProblem's checks of the matmul descriptor |desc| alone: compute,
/// scale and pointer modes, transposes, fill mode and unsupported
/// attributes.
cublasStatus_t checkDescriptor(const char *fn, const Desc &desc) {
  const auto &d = desc.attrs;
  auto compute =
      cublasComputeType_t(d.get<int32_t>(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE));
  switch (compute) {
  case CUBLAS_COMPUTE_32F:
  case CUBLAS_COMPUTE_32F_PEDANTIC:
  case CUBLAS_COMPUTE_32F_FAST_TF32:
  case CUBLAS_COMPUTE_32F_FAST_16F:
  case CUBLAS_COMPUTE_32F_FAST_16BF:
    break;
  default:
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                "compute type " + std::to_string(compute) +
                    " (the stand-in runs CUBLAS_COMPUTE_32F and its "
                    "_PEDANTIC/_FAST_TF32/_FAST_16F/_FAST_16BF variants)");
  }
  // cuBLAS docs, cublasLtMatmul's type table: every CUBLAS_COMPUTE_32F row
  // has scale type CUDA_R_32F.
  int32_t scale = d.get<int32_t>(CUBLASLT_MATMUL_DESC_SCALE_TYPE);
  if (scale != CUDA_R_32F)
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                "scale type " + typeName(scale) +
                    " with a 32F compute type (needs CUDA_R_32F)");
  int32_t pointerMode = d.get<int32_t>(CUBLASLT_MATMUL_DESC_POINTER_MODE);
  if (pointerMode != CUBLASLT_POINTER_MODE_HOST)
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                "pointer mode " + std::to_string(pointerMode) +
                    " (the stand-in reads alpha and beta from host memory "
                    "only)");
  int32_t opA = d.get<int32_t>(CUBLASLT_MATMUL_DESC_TRANSA);
  int32_t opB = d.get<int32_t>(CUBLASLT_MATMUL_DESC_TRANSB);
  for (auto [name, op] : {std::pair{"TRANSA", opA}, std::pair{"TRANSB", opB}})
    if (op != CUBLAS_OP_N && op != CUBLAS_OP_T)
      return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                  std::string(name) + " = " + std::to_string(op) +
                      " (real types take CUBLAS_OP_N or CUBLAS_OP_T)");
  if (d.get<int32_t>(CUBLASLT_MATMUL_DESC_TRANSC) != CUBLAS_OP_N)
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                "TRANSC must be CUBLAS_OP_N (cublasLt.h)");
  if (d.get<int32_t>(CUBLASLT_MATMUL_DESC_FILL_MODE) != CUBLAS_FILL_MODE_FULL)
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                "fill mode other than CUBLAS_FILL_MODE_FULL");
  // Scaling/amax/fp8 attributes would silently be ignored: refuse them.
  for (int attr : {17, 18, 19, 20, 21, 23, 24, 36, 38})
    if (d.get<uint64_t>(attr) != 0)
      return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                  "matmul descriptor attribute " + std::to_string(attr) +
                      " (scale/amax pointers, emulation) is not supported by "
                      "the stand-in");
  return CUBLAS_STATUS_SUCCESS;
}

/// checkProblem's checks of each operand alone: its layout's order and
/// batch mode, its type, its size and ld, its batch stride.
cublasStatus_t
checkOperands(const char *fn,
              const std::pair<const char *, const Layout *> (&layouts)[4],
              const std::pair<const char *, const Operand *> (&operands)[4]) {
  for (const auto &[name, l] : layouts) {
    const auto &attrs = l->attrs;
    int32_t order = attrs.get<int32_t>(CUBLASLT_MATRIX_LAYOUT_ORDER);
    if (order != CUBLASLT_ORDER_COL && order != CUBLASLT_ORDER_ROW)
      return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                  std::string(name) + ": order " + std::to_string(order) +
                      " (the stand-in runs CUBLASLT_ORDER_COL and _ROW)");
    if (attrs.get<int64_t>(CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET) != 0 ||
        attrs.get<uint32_t>(CUBLASLT_MATRIX_LAYOUT_BATCH_MODE) !=
            CUBLASLT_BATCH_MODE_STRIDED)
      return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                  std::string(name) +
                      ": planar complex or pointer-array batches");
  }
  for (const auto &[name, op] : operands) {
    if (elementSize(op->type) == 0)
      return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                  std::string(name) + " has type " + typeName(op->type) +
                      " (the stand-in runs CUDA_R_32F, _16F, _16BF)");
    // cublasLt.h: "only values that can be expressed as int32_t are
    // supported" for rows and cols.
    if (op->rows > INT32_MAX || op->cols > INT32_MAX || op->rows < 0 ||
        op->cols < 0)
      return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                  std::string(name) + " is " + std::to_string(op->rows) +
                      " x " + std::to_string(op->cols) +
                      ": rows and cols must fit int32_t");
    // cublasLt.h, CUBLASLT_MATRIX_LAYOUT_LD: "must be large enough so that
    // matrix memory locations are not overlapping (e.g. greater or equal to
    // CUBLASLT_MATRIX_LAYOUT_ROWS in case of CUBLASLT_ORDER_COL)". Layout
    // creation does not check it (its only error is ALLOC_FAILED); an
    // impossible layout is INVALID_VALUE where the problem is checked.
    int64_t minLd = std::max<int64_t>(
        1, op->order == CUBLASLT_ORDER_ROW ? op->cols : op->rows);
    if (op->ld < minLd)
      return fail(
          CUBLAS_STATUS_INVALID_VALUE, fn,
          std::string(name) + " is " + shapeOf(*op) +
              ": ld must be >= " + std::to_string(minLd) +
              (op->order == CUBLASLT_ORDER_ROW ? " (cols)" : " (rows)"));
    if (op->stride < 0)
      return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                  std::string(name) + ": negative batch stride " +
                      std::to_string(op->stride));
  }
  return CUBLAS_STATUS_SUCCESS;
}

/// The checks that cublasLtMatmulAlgoGetHeuristic and cublasLtMatmul share.
/// Fills |plan| except the data pointers, alpha and beta. Inconsistent
/// shapes are NOT_SUPPORTED from the heuristic (no algorithm fits the
/// problem) and INVALID_VALUE from the matmul ("parameters are in
/// conflict", cublasLt.h).
cublasStatus_t checkProblem(const char *fn, bool atMatmul, const Desc &desc,
                            const Layout *la, const Layout *lb,
                            const Layout *lc, const Layout *ld,
                            MatmulPlan *plan) {
  const cublasStatus_t conflict =
      atMatmul ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_NOT_SUPPORTED;
  const auto &d = desc.attrs;
  auto compute =
      cublasComputeType_t(d.get<int32_t>(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE));
  int32_t opA = d.get<int32_t>(CUBLASLT_MATMUL_DESC_TRANSA);
  int32_t opB = d.get<int32_t>(CUBLASLT_MATMUL_DESC_TRANSB);
  if (cublasStatus_t status = checkDescriptor(fn, desc);
      status != CUBLAS_STATUS_SUCCESS)
    return status;

  Operand a = operandOf(*la, nullptr), b = operandOf(*lb, nullptr),
          c = operandOf(*lc, nullptr), dd = operandOf(*ld, nullptr);
  const std::pair<const char *, const Operand *> operands[] = {
      {"A", &a}, {"B", &b}, {"C", &c}, {"D", &dd}};
  const std::pair<const char *, const Layout *> layouts[] = {
      {"A", la}, {"B", lb}, {"C", lc}, {"D", ld}};
  if (cublasStatus_t status = checkOperands(fn, layouts, operands);
      status != CUBLAS_STATUS_SUCCESS)
    return status;
  // Type combinations of the cuBLAS docs' table for CUBLAS_COMPUTE_32F:
  // A/B/C/D all 32F, or A/B 16F (16BF) with C/D 16F (16BF) or 32F.
  if (a.type != b.type || c.type != dd.type ||
      (a.type == CUDA_R_32F && c.type != CUDA_R_32F) ||
      (a.type != CUDA_R_32F && c.type != a.type && c.type != CUDA_R_32F))
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                "types A " + typeName(a.type) + ", B " + typeName(b.type) +
                    ", C " + typeName(c.type) + ", D " + typeName(dd.type) +
                    " are not a CUBLAS_COMPUTE_32F combination");

  const bool transA = opA == CUBLAS_OP_T, transB = opB == CUBLAS_OP_T;
  const int64_t m = dd.rows, n = dd.cols;
  const int64_t k = transA ? a.rows : a.cols;
  const int64_t opARows = transA ? a.cols : a.rows;
  const int64_t opBRows = transB ? b.cols : b.rows;
  const int64_t opBCols = transB ? b.rows : b.cols;
  if (opARows != m || opBRows != k || opBCols != n || c.rows != m ||
      c.cols != n) {
    std::ostringstream os;
    os << "op(A) is " << opARows << " x " << k << ", op(B) " << opBRows << " x "
       << opBCols << ", C " << c.rows << " x " << c.cols << ", D " << m << " x "
       << n << ": need op(A) m x k, op(B) k x n, C and D m x n";
    return fail(conflict, fn, os.str());
  }
  // cuBLAS docs, cublasLtMatmul (quoted in pytorch/pytorch#153590): out of
  // place, C and D "must have the same data type, number of rows, number of
  // columns, batch size, and memory order"; only their lds may differ.
  if (c.order != dd.order)
    return fail(conflict, fn,
                std::string("C is ") +
                    (c.order == CUBLASLT_ORDER_ROW ? "row" : "column") +
                    "-major and D " +
                    (dd.order == CUBLASLT_ORDER_ROW ? "row" : "column") +
                    "-major: C and D must have the same memory order");
  int32_t batch = ld->attrs.get<int32_t>(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT);
  for (const auto &[name, l] : layouts) {
    int32_t count = l->attrs.get<int32_t>(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT);
    if (count < 1 || count != batch)
      return fail(conflict, fn,
                  std::string(name) + " has batch count " +
                      std::to_string(count) + ", D " + std::to_string(batch) +
                      " (must be equal and >= 1)");
  }
  // The batches of D are written concurrently; overlapping ones would race.
  if (batch > 1 && m > 0 && n > 0 && dd.stride < spanOf(dd, 1))
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                "D's batch stride " + std::to_string(dd.stride) +
                    " is less than one matrix (" +
                    std::to_string(spanOf(dd, 1)) +
                    " elements): the batches overlap");

  uint32_t epilogue = d.get<uint32_t>(CUBLASLT_MATMUL_DESC_EPILOGUE);
  if (!isKnownEpilogue(epilogue))
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                "epilogue " + std::to_string(epilogue) +
                    " is not a cublasLtEpilogue_t");
  int32_t biasType = d.get<int32_t>(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE);
  if (biasType == -1)
    biasType = dd.type; // cublasLt.h: bias elements have D's type
  int32_t auxType = d.get<int32_t>(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE);
  if (auxType == -1)
    auxType = dd.type;
  // A bias that the epilogue adds may be CUDA_R_32F with a 16-bit D (added
  // in the f32 compute type before D is rounded), and so may BGRADA/BGRADB's
  // bias gradient (the f32 sum stored unrounded); otherwise it has D's
  // type. Real cuBLASLt 13 on an H100 found no algorithm for an f32 bias
  // with a bf16 D (its documented bias types are D's, but for IMMA and FP8
  // kernels), so the callers keep fallbacks, which
  // DLRT_CUDA_STANDIN_LT_NO_EPILOGUE reaches.
  const bool f32BiasOf16BitD =
      biasType == CUDA_R_32F &&
      (dd.type == CUDA_R_16F || dd.type == CUDA_R_16BF) &&
      (!writesBias(epilogue) || epilogue == CUBLASLT_EPILOGUE_BGRADA ||
       epilogue == CUBLASLT_EPILOGUE_BGRADB);
  if (usesBias(epilogue) && biasType != dd.type && !f32BiasOf16BitD)
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                "bias type " + typeName(biasType) + " with D of " +
                    typeName(dd.type) +
                    " (must be D's type, or CUDA_R_32F for a 16-bit D's "
                    "BIAS and BGRADA/BGRADB epilogues)");
  if (usesAux(epilogue) && !isReluAux(epilogue) && auxType != dd.type)
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                "aux type " + typeName(auxType) + " with D of " +
                    typeName(dd.type) + " (must be D's type)");
  int64_t auxLd = d.get<int64_t>(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD);
  int64_t auxStride =
      d.get<int64_t>(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE);
  int64_t biasStride = d.get<int64_t>(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE);
  if (usesAux(epilogue)) {
    // cublasLt.h, EPILOGUE_AUX_LD and _AUX_BATCH_STRIDE: ReLU bit-mask ld
    // divisible by 128, GELU input ld by 8, both no less than D's rows.
    int64_t multiple = isReluAux(epilogue) ? 128 : 8;
    if (auxLd < m || auxLd % multiple != 0 || auxStride % multiple != 0 ||
        auxStride < 0)
      return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                  "epilogue aux ld " + std::to_string(auxLd) +
                      " / batch stride " + std::to_string(auxStride) +
                      ": must be multiples of " + std::to_string(multiple) +
                      " and ld >= D's rows " + std::to_string(m));
    if (batch > 1 && !(epilogue & 8) && !(epilogue & 64) &&
        auxStride < n * auxLd)
      return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                  "epilogue aux batch stride " + std::to_string(auxStride) +
                      " is less than one aux matrix (" +
                      std::to_string(n * auxLd) + "): batches overlap");
  }
  if (writesBias(epilogue) && batch > 1 &&
      biasStride < (epilogue == CUBLASLT_EPILOGUE_BGRADB ? n : m))
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                "bias gradient batch stride " + std::to_string(biasStride) +
                    " is less than its length: batches overlap");

  plan->m = m;
  plan->n = n;
  plan->k = k;
  plan->batch = batch;
  plan->transA = transA;
  plan->transB = transB;
  plan->a = a;
  plan->b = b;
  plan->c = c;
  plan->d = dd;
  plan->computeType = compute;
  plan->epilogue = epilogue;
  plan->bias = d.get<void *>(CUBLASLT_MATMUL_DESC_BIAS_POINTER);
  plan->biasType = cudaDataType(biasType);
  plan->biasStride = biasStride;
  plan->aux = d.get<void *>(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER);
  plan->auxType = cudaDataType(auxType);
  plan->auxLd = auxLd;
  plan->auxStride = auxStride;
  return CUBLAS_STATUS_SUCCESS;
}

// cublasLtMatmulAlgo_t.data of the stand-in's algorithms.
constexpr uint64_t kAlgoMagic = 0x646c634c74416c67ull; // "dlcLtAlg"
enum AlgoWord {
  kMagic = 0,
  kId = 1,
  kWorkspace = 2,
  kAlignAB = 3,   // A | B << 32 (bytes)
  kAlignCD = 4,   // C | D << 32
  kAlignBias = 5, // bias | aux << 32
  kSplitK = 6,
};

/// Bytes of workspace a split-K algorithm uses for |splits| partial sums.
uint64_t splitKWorkspace(const MatmulPlan &p, int64_t splits) {
  uint64_t bytes = uint64_t(p.m) * p.n * p.batch * 4 * uint64_t(splits);
  return (bytes + 255) / 256 * 256;
}

} // namespace

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t *lightHandle) {
  if (!lightHandle)
    return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtCreate",
                "lightHandle is null");
  *lightHandle = nullptr;
  if (!driverInitialized())
    return fail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasLtCreate",
                "cuInit has not been called");
  *lightHandle = new cublasLtContext;
  addLive(*lightHandle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle) {
  if (!removeLive(lightHandle))
    return fail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasLtDestroy",
                "not a live handle");
  delete lightHandle;
  return CUBLAS_STATUS_SUCCESS;
}

const char *cublasLtGetStatusName(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return "CUBLAS_STATUS_ARCH_MISMATCH";
  case CUBLAS_STATUS_MAPPING_ERROR:
    return "CUBLAS_STATUS_MAPPING_ERROR";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_INTERNAL_ERROR:
    return "CUBLAS_STATUS_INTERNAL_ERROR";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_LICENSE_ERROR:
    return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

const char *cublasLtGetStatusString(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return "success";
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "the library was not initialized";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "the resource allocation failed";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "an invalid numeric value was used as an argument";
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return "an absent device architectural feature is required";
  case CUBLAS_STATUS_MAPPING_ERROR:
    return "an access to GPU memory space failed";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "the GPU program failed to execute";
  case CUBLAS_STATUS_INTERNAL_ERROR:
    return "an internal operation failed";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "the functionality requested is not supported";
  case CUBLAS_STATUS_LICENSE_ERROR:
    return "error detected trying to check the license";
  }
  return "unknown error";
}

size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }

size_t cublasLtGetCudartVersion(void) { return CUDA_VERSION; }

cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int *value) {
  if (!value)
    return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
  case MAJOR_VERSION:
    *value = CUBLAS_VER_MAJOR;
    return CUBLAS_STATUS_SUCCESS;
  case MINOR_VERSION:
    *value = CUBLAS_VER_MINOR;
    return CUBLAS_STATUS_SUCCESS;
  case PATCH_LEVEL:
    *value = CUBLAS_VER_PATCH;
    return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout,
                                          cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  if (!matLayout)
    return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatrixLayoutCreate",
                "matLayout is null");
  auto *l = new Layout;
  l->attrs.put<uint32_t>(CUBLASLT_MATRIX_LAYOUT_TYPE, uint32_t(type));
  l->attrs.put<int32_t>(CUBLASLT_MATRIX_LAYOUT_ORDER, CUBLASLT_ORDER_COL);
  l->attrs.put<uint64_t>(CUBLASLT_MATRIX_LAYOUT_ROWS, rows);
  l->attrs.put<uint64_t>(CUBLASLT_MATRIX_LAYOUT_COLS, cols);
  l->attrs.put<int64_t>(CUBLASLT_MATRIX_LAYOUT_LD, ld);
  l->attrs.put<int32_t>(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 1);
  addLive(l);
  *matLayout = reinterpret_cast<cublasLtMatrixLayout_t>(l);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  if (!matLayout) // destroying NULL is a no-op, as free()
    return CUBLAS_STATUS_SUCCESS;
  if (!removeLive(matLayout))
    return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatrixLayoutDestroy",
                "not a live layout");
  delete reinterpret_cast<Layout *>(matLayout);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                 cublasLtMatrixLayoutAttribute_t attr,
                                 const void *buf, size_t sizeInBytes) {
  Layout *l = impl<Layout>(matLayout);
  if (!l)
    return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatrixLayoutSetAttribute",
                "not a live layout");
  return setAttribute("cublasLtMatrixLayoutSetAttribute", l->attrs, attr, buf,
                      sizeInBytes);
}

cublasStatus_t cublasLtMatrixLayoutGetAttribute(
    cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr,
    void *buf, size_t sizeInBytes, size_t *sizeWritten) {
  Layout *l = impl<Layout>(matLayout);
  if (!l)
    return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatrixLayoutGetAttribute",
                "not a live layout");
  return getAttribute("cublasLtMatrixLayoutGetAttribute", l->attrs, attr, buf,
                      sizeInBytes, sizeWritten);
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc,
                                        cublasComputeType_t computeType,
                                        cudaDataType_t scaleType) {
  if (!matmulDesc)
    return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulDescCreate",
                "matmulDesc is null");
  auto *desc = new Desc;
  auto &a = desc->attrs;
  a.put<int32_t>(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, computeType);
  a.put<int32_t>(CUBLASLT_MATMUL_DESC_SCALE_TYPE, scaleType);
  a.put<int32_t>(CUBLASLT_MATMUL_DESC_FILL_MODE, CUBLAS_FILL_MODE_FULL);
  a.put<uint32_t>(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_DEFAULT);
  a.put<int32_t>(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, -1);
  a.put<int32_t>(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, -1);
  addLive(desc);
  *matmulDesc = reinterpret_cast<cublasLtMatmulDesc_t>(desc);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  if (!matmulDesc)
    return CUBLAS_STATUS_SUCCESS;
  if (!removeLive(matmulDesc))
    return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulDescDestroy",
                "not a live matmul descriptor");
  delete reinterpret_cast<Desc *>(matmulDesc);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                               cublasLtMatmulDescAttributes_t attr,
                               const void *buf, size_t sizeInBytes) {
  Desc *d = impl<Desc>(matmulDesc);
  if (!d)
    return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulDescSetAttribute",
                "not a live matmul descriptor");
  return setAttribute("cublasLtMatmulDescSetAttribute", d->attrs, attr, buf,
                      sizeInBytes);
}

cublasStatus_t
cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc,
                               cublasLtMatmulDescAttributes_t attr, void *buf,
                               size_t sizeInBytes, size_t *sizeWritten) {
  Desc *d = impl<Desc>(matmulDesc);
  if (!d)
    return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulDescGetAttribute",
                "not a live matmul descriptor");
  return getAttribute("cublasLtMatmulDescGetAttribute", d->attrs, attr, buf,
                      sizeInBytes, sizeWritten);
}

cublasStatus_t
cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
  if (!pref)
    return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulPreferenceCreate",
                "pref is null");
  auto *p = new Pref;
  auto &a = p->attrs;
  a.put<uint32_t>(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                  CUBLASLT_REDUCTION_SCHEME_MASK);
  for (int attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                   CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                   CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                   CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    a.put<uint32_t>(attr, 256); // cublasLt.h: default 256
  a.put<uint64_t>(CUBLASLT_MATMUL_PREF_IMPL_MASK, ~uint64_t(0));
  addLive(p);
  *pref = reinterpret_cast<cublasLtMatmulPreference_t>(p);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  if (!pref)
    return CUBLAS_STATUS_SUCCESS;
  if (!removeLive(pref))
    return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulPreferenceDestroy",
                "not a live preference");
  delete reinterpret_cast<Pref *>(pref);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                     cublasLtMatmulPreferenceAttributes_t attr,
                                     const void *buf, size_t sizeInBytes) {
  Pref *p = impl<Pref>(pref);
  if (!p)
    return fail(CUBLAS_STATUS_INVALID_VALUE,
                "cublasLtMatmulPreferenceSetAttribute",
                "not a live preference");
  return setAttribute("cublasLtMatmulPreferenceSetAttribute", p->attrs, attr,
                      buf, sizeInBytes);
}

cublasStatus_t cublasLtMatmulPreferenceGetAttribute(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
    void *buf, size_t sizeInBytes, size_t *sizeWritten) {
  Pref *p = impl<Pref>(pref);
  if (!p)
    return fail(CUBLAS_STATUS_INVALID_VALUE,
                "cublasLtMatmulPreferenceGetAttribute",
                "not a live preference");
  return getAttribute("cublasLtMatmulPreferenceGetAttribute", p->attrs, attr,
                      buf, sizeInBytes, sizeWritten);
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
    cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
    cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
    int *returnAlgoCount) {
  const char *fn = "cublasLtMatmulAlgoGetHeuristic";
  if (!isLive(lightHandle))
    return fail(CUBLAS_STATUS_NOT_INITIALIZED, fn, "not a live handle");
  Desc *desc = impl<Desc>(operationDesc);
  Layout *la = impl<Layout>(Adesc), *lb = impl<Layout>(Bdesc),
         *lc = impl<Layout>(Cdesc), *ld = impl<Layout>(Ddesc);
  Pref *pref = impl<Pref>(preference);
  if (!desc || !la || !lb || !lc || !ld || !pref)
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                "a descriptor, layout or preference is not live");
  if (requestedAlgoCount <= 0 || !heuristicResultsArray || !returnAlgoCount)
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                "requestedAlgoCount " + std::to_string(requestedAlgoCount) +
                    " (must be > 0) or a null result pointer");
  *returnAlgoCount = 0;
  MatmulPlan plan;
  if (cublasStatus_t s =
          checkProblem(fn, /*atMatmul=*/false, *desc, la, lb, lc, ld, &plan);
      s != CUBLAS_STATUS_SUCCESS)
    return s;
  // With DLRT_CUDA_STANDIN_LT_NO_EPILOGUE set, no algorithm supports an
  // epilogue (the answer a real library may give for some problems), so
  // that tests reach the callers' fallbacks.
  if (plan.epilogue != CUBLASLT_EPILOGUE_DEFAULT &&
      std::getenv("DLRT_CUDA_STANDIN_LT_NO_EPILOGUE"))
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                "no algorithm for epilogue " + std::to_string(plan.epilogue) +
                    " (DLRT_CUDA_STANDIN_LT_NO_EPILOGUE is set)");

  // An algorithm assumes each operand is aligned to the preference's
  // minimum, up to the 16 bytes a vectorized load needs; the bias and aux
  // pointers are read from the descriptor (cublasLt.h: the heuristic
  // "depends on its value to determine expected pointer alignment").
  const auto &pa = pref->attrs;
  const std::pair<const char *, int> prefs[] = {
      {"A", CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES},
      {"B", CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES},
      {"C", CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES},
      {"D", CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}};
  const Operand *ops[] = {&plan.a, &plan.b, &plan.c, &plan.d};
  uint64_t align[6], minimal[6];
  for (int i = 0; i < 4; ++i) {
    uint32_t wanted = pa.get<uint32_t>(prefs[i].second);
    uint32_t a = 16;
    while (a > 1 && a > wanted)
      a /= 2;
    uint64_t element = elementSize(ops[i]->type);
    if (a < element)
      return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                  std::string("MIN_ALIGNMENT_") + prefs[i].first + "_BYTES " +
                      std::to_string(wanted) + " is below " + prefs[i].first +
                      "'s element size " + std::to_string(element));
    align[i] = a;
    minimal[i] = element;
  }
  align[4] = minimal[4] = elementSize(plan.biasType);
  if (usesBias(plan.epilogue))
    align[4] = std::max<uint64_t>(alignmentOf(plan.bias, 16), minimal[4]);
  align[5] = minimal[5] =
      isReluAux(plan.epilogue) ? 1 : elementSize(plan.auxType);
  if (usesAux(plan.epilogue))
    align[5] = std::max<uint64_t>(alignmentOf(plan.aux, 16), minimal[5]);

  // Split-K for long reductions: partial sums of D in the workspace, as
  // many splits as the preference's MAX_WORKSPACE_BYTES allows (none when
  // it allows none: cublasLt.h's default is 0 bytes).
  const uint64_t maxWorkspace =
      pa.get<uint64_t>(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
  int64_t splits = 1;
  uint64_t workspace = 0;
  if (plan.k >= 1024 && plan.m * plan.n <= (int64_t(1) << 22)) {
    splits = std::min<int64_t>(8, plan.k / 512);
    while (splits > 1 && splitKWorkspace(plan, splits) > maxWorkspace)
      splits /= 2;
    workspace = splits > 1 ? splitKWorkspace(plan, splits) : 0;
    if (splits < 2)
      splits = 1;
  }
  const int64_t tiles =
      int64_t(plan.batch) * ((plan.m + 63) / 64) * ((plan.n + 63) / 64);
  const int count = std::min(requestedAlgoCount, 3);
  for (int i = 0; i < count; ++i) {
    cublasLtMatmulHeuristicResult_t &r = heuristicResultsArray[i];
    std::memset(&r, 0, sizeof r);
    // 0: split-K where it pays; 1: the same tiles without workspace;
    // 2: one that takes any operand aligned to its element size.
    const uint64_t *al = i == 2 ? minimal : align;
    r.algo.data[kMagic] = kAlgoMagic;
    r.algo.data[kId] = uint64_t(i);
    r.algo.data[kWorkspace] = i == 0 ? workspace : 0;
    r.algo.data[kAlignAB] = al[0] | al[1] << 32;
    r.algo.data[kAlignCD] = al[2] | al[3] << 32;
    r.algo.data[kAlignBias] = al[4] | al[5] << 32;
    r.algo.data[kSplitK] = uint64_t(i == 0 ? splits : 1);
    r.workspaceSize = r.algo.data[kWorkspace];
    r.state = CUBLAS_STATUS_SUCCESS;
    r.wavesCount = float(tiles) / 132.0f; // an H100's SMs
  }
  *returnAlgoCount = count;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
               const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,
               const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,
               const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
               cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo,
               void *workspace, size_t workspaceSizeInBytes,
               cudaStream_t stream) {
  const char *fn = "cublasLtMatmul";
  if (!isLive(lightHandle))
    return fail(CUBLAS_STATUS_NOT_INITIALIZED, fn, "not a live handle");
  Desc *desc = impl<Desc>(computeDesc);
  Layout *la = impl<Layout>(Adesc), *lb = impl<Layout>(Bdesc),
         *lc = impl<Layout>(Cdesc), *ld = impl<Layout>(Ddesc);
  if (!desc || !la || !lb || !lc || !ld)
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                "a descriptor or layout is not live");
  MatmulPlan plan;
  if (cublasStatus_t s =
          checkProblem(fn, /*atMatmul=*/true, *desc, la, lb, lc, ld, &plan);
      s != CUBLAS_STATUS_SUCCESS)
    return s;
  if (!alpha || !beta)
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn, "alpha or beta is null");
  // POINTER_MODE_HOST (checked above): the scalars are read now.
  std::memcpy(&plan.alpha, alpha, sizeof(float));
  std::memcpy(&plan.beta, beta, sizeof(float));
  const bool empty = plan.m == 0 || plan.n == 0;
  const bool readsC = plan.beta != 0.0f;
  if (!empty && (!A || !B || !D || (readsC && !C)))
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                std::string("null operand: A ") + (A ? "set" : "null") +
                    ", B " + (B ? "set" : "null") + ", C " +
                    (C ? "set" : "null") + ", D " + (D ? "set" : "null"));
  plan.a.data = A;
  plan.b.data = B;
  plan.c.data = C;
  plan.d.data = D;

  uint64_t needed = 0, align[6];
  if (algo) {
    if (algo->data[kMagic] != kAlgoMagic)
      return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                  "algo was not returned by cublasLtMatmulAlgoGetHeuristic");
    needed = algo->data[kWorkspace];
    for (int i = 0; i < 3; ++i) {
      align[2 * i] = algo->data[kAlignAB + i] & 0xffffffffu;
      align[2 * i + 1] = algo->data[kAlignAB + i] >> 32;
    }
  } else {
    // cublasLt.h: a NULL algo makes cublasLtMatmul run the heuristic itself
    // with default preferences; it sees the actual pointers.
    const void *pointers[] = {A, B, C ? C : D, D, plan.bias, plan.aux};
    for (int i = 0; i < 6; ++i)
      align[i] = alignmentOf(pointers[i], 16);
  }
  // cublasLt.h: INVALID_VALUE "when workspaceSizeInBytes is less than
  // workspace required by configured algo".
  if (workspaceSizeInBytes < needed)
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                "workspaceSizeInBytes " + std::to_string(workspaceSizeInBytes) +
                    " is less than the algorithm's " + std::to_string(needed));
  std::string why;
  if (needed > 0 && !checkDeviceRange(workspace, needed, "workspace", &why))
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn, why);

  const uint32_t e = plan.epilogue;
  if (usesBias(e) && !plan.bias)
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                "epilogue " + std::to_string(e) +
                    " needs CUBLASLT_MATMUL_DESC_BIAS_POINTER");
  if (usesAux(e) && !plan.aux)
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                "epilogue " + std::to_string(e) +
                    " needs CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER");
  // A kernel that assumes more alignment than a pointer has cannot run it;
  // the real library returns NOT_SUPPORTED here (PyTorch #92201, #97205:
  // "CUBLAS_STATUS_NOT_SUPPORTED when calling cublasLtMatmul" for operands
  // less aligned than the heuristic was told).
  const std::pair<const char *, const void *> aligned[] = {
      {"A", A},
      {"B", B},
      {"C", readsC ? C : nullptr},
      {"D", D},
      {"bias", usesBias(e) ? plan.bias : nullptr},
      {"aux", usesAux(e) ? plan.aux : nullptr}};
  for (int i = 0; i < 6; ++i) {
    uintptr_t address = uintptr_t(aligned[i].second);
    if (address % align[i] != 0)
      return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                  std::string(aligned[i].first) + " at " +
                      std::to_string(address) + " is not " +
                      std::to_string(align[i]) +
                      "-byte aligned as the algorithm assumes (set "
                      "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES)");
  }
  // cuBLAS docs, cublasLtMatmul: in place only with "C == D and Cdesc ==
  // Ddesc" (quoted in pytorch/pytorch#153590).
  if (C && C == D) {
    const Operand &c = plan.c, &d = plan.d;
    if (c.type != d.type || c.order != d.order || c.ld != d.ld ||
        (plan.batch > 1 && c.stride != d.stride))
      return fail(CUBLAS_STATUS_INVALID_VALUE, fn,
                  "C and D are the same memory with different layouts: C " +
                      shapeOf(c) + " stride " + std::to_string(c.stride) +
                      ", D " + shapeOf(d) + " stride " +
                      std::to_string(d.stride));
  }
  if (!empty) {
    const std::pair<const char *, const Operand *> extents[] = {
        {"A", &plan.a},
        {"B", &plan.b},
        {"C", readsC ? &plan.c : nullptr},
        {"D", &plan.d}};
    for (const auto &[name, op] : extents) {
      if (!op || !op->data)
        continue;
      size_t bytes = size_t(spanOf(*op, plan.batch)) * elementSize(op->type);
      if (bytes && !checkDeviceRange(op->data, bytes, name, &why))
        return fail(CUBLAS_STATUS_INVALID_VALUE, fn, why);
    }
    if (usesBias(e)) {
      int64_t length = e == CUBLASLT_EPILOGUE_BGRADB ? plan.n : plan.m;
      size_t bytes = size_t(length + (plan.batch - 1) * plan.biasStride) *
                     elementSize(plan.biasType);
      if (!checkDeviceRange(plan.bias, bytes, "bias", &why))
        return fail(CUBLAS_STATUS_INVALID_VALUE, fn, why);
    }
    if (usesAux(e)) {
      int64_t elements = (plan.batch - 1) * plan.auxStride +
                         (plan.n - 1) * plan.auxLd + plan.m;
      size_t bytes = isReluAux(e)
                         ? size_t(elements + 7) / 8
                         : size_t(elements) * elementSize(plan.auxType);
      if (!checkDeviceRange(plan.aux, bytes, "aux", &why))
        return fail(CUBLAS_STATUS_INVALID_VALUE, fn, why);
    }
  }
  if (empty)
    return CUBLAS_STATUS_SUCCESS;
  CUresult r = enqueue(stream, fn, [plan](std::string *) {
    lt::runMatmul(plan);
    return CUDA_SUCCESS;
  });
  if (r != CUDA_SUCCESS)
    return fail(CUBLAS_STATUS_EXECUTION_FAILED, fn,
                "the stream did not take the work (CUresult " +
                    std::to_string(r) + ")");
  return CUBLAS_STATUS_SUCCESS;
}

} // extern "C"
