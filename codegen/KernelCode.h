//===- KernelCode.h - kernel bodies shared by both emitters -*- C++ -*-===//
#ifndef DLC_CODEGEN_KERNELCODE_H
#define DLC_CODEGEN_KERNELCODE_H

#include "codegen/Codegen.h"
#include "dialects/Exec/ExecOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace dlc::codegen::detail {

/// One loop of a host loop nest: `for (long long var = 0; var < size; ++var)`.
struct HostLoop {
  std::string var;
  int64_t size;
};

/// A kernel body that both the CUDA and the host wrapper print. The body is C
/// code for one thread: it reads the flat thread index `tid` (a `long long` in
/// [0, numThreads)) and the operand pointers `a0`, `a1`, ... (inputs then
/// outputs), and may use the helpers of the target prelude (DLC_INF_F,
/// dlc_floordiv, ...).
///
/// Generated kernels also carry the same computation as a loop nest for the
/// host: `invariant` (statements that read no loop index, printed once before
/// the loops on the host and before `body` in each CUDA thread), `hostLoops`
/// (the parallel loops, outermost first, in row-major order of `tid`) and
/// `loopBody` (the per-element code inside the innermost loop, reading the
/// loop variables). Built-in kernels leave `hostLoops` empty and the host runs
/// `body` in a flat `tid` loop.
struct KernelCode {
  std::string name;                    // a C identifier
  std::vector<std::string> paramTypes; // C element type per operand
  std::vector<bool> restrictParam;     // false where operands may alias
  std::string body;
  /// File-level C the body needs (helper functions), printed after the
  /// target prelude and before the kernel; guarded against repetition,
  /// since a host source holds every kernel.
  std::string helpers;
  /// File-level CUDA C printed after `helpers` in the CUDA translation unit
  /// only (each kernel is its own unit and module): `__device__` variables a
  /// cooperative body keeps between its blocks, e.g. the loss's per-block
  /// partial sums and the counter that elects the block combining them.
  std::string cudaHelpers;
  int64_t numThreads = 1;
  std::string invariant;
  /// True for generated kernels: the host prints `invariant`, then
  /// `hostLoops` around `loopBody`, instead of a `tid` loop around `body`.
  bool loopNest = false;
  std::vector<HostLoop> hostLoops;
  std::string loopBody;
  /// Iterations of the innermost host loop write distinct output elements
  /// (each output is indexed by that loop directly), so they carry no
  /// dependence in a kernel without races and may be vectorized without
  /// runtime alias checks (in-place operands alias exactly).
  bool innerIndependent = false;
  /// The kernel stores f16 / bf16 elements: the target wrapper adds the
  /// storage types and conversions (halfHelpers) for it.
  bool usesF16 = false, usesBF16 = false;

  /// A cooperative CUDA kernel (threads of a warp or block share a row's work
  /// through shuffles, shared memory and barriers) sets `cudaBody`, which
  /// replaces `body` on CUDA: it runs numThreads threads (a multiple of
  /// blockSize, so every thread of a block reaches its barriers; no thread
  /// returns before the body) in blocks of blockSize, reads `tid`,
  /// `threadIdx` and `blockIdx`, and bounds-checks itself. The host keeps
  /// `body` in a flat loop of hostThreads trips: the same function, with its
  /// sums in another order.
  std::string cudaBody;
  /// A generated elementwise kernel whose `body` holds its own CUDA loops
  /// (set by the emitter when every index fits in 32 bits): the wrapper
  /// declares `dlc_first` (this thread's flat index, unsigned) and
  /// `dlc_stride` (the grid's thread count) and prints `invariant` then
  /// `body`, which walks the iteration space in a grid-stride loop, so any
  /// grid of at least one thread computes every element. Other
  /// non-cooperative kernels get a grid-stride loop over `tid` around `body`
  /// from the wrapper.
  bool cudaLoops = false;
  /// Elements a thread of the CUDA body loads and stores per vector (128 bits
  /// for the widest operand: 4 f32, 8 f16/bf16) when the emitter proved the
  /// operands contiguous and aligned; 0 when the body is scalar.
  int32_t vectorWidth = 0;
  /// Threads the CUDA launch asks for when not numThreads (a vectorized body
  /// needs one per vector); 0: numThreads.
  int64_t cudaThreads = 0;
  int32_t blockSize = 256;
  int64_t hostThreads = 0;
  /// Elements of work in one host iteration of `body` (a kernel whose host
  /// body walks a whole plane sets the plane's size): the flat host loop is
  /// parallel when iterations x grain reach the parallel threshold.
  int64_t hostGrain = 1;
  /// KernelSource::serialReductionSteps.
  int64_t serialReductionSteps = 0;
  /// KernelSource::aliases (set by dedupKernels).
  std::vector<std::string> aliases;
};

/// Builds the body of a generated loop-nest kernel.
mlir::FailureOr<KernelCode> buildGeneratedKernel(exec::KernelOp op);
/// Instantiates a built-in kernel template.
mlir::FailureOr<KernelCode> buildBuiltinKernel(exec::BuiltinKernelOp op);
/// The body of a dlexec.multi_tensor_kernel (MultiTensorKernel.cpp): on CUDA
/// one thread per element of the concatenated tensors, which finds its
/// tensor by a binary search over the range starts; on the host one loop per
/// tensor. The per-element code is buildGeneratedKernel's for the op's body.
mlir::FailureOr<KernelCode>
buildMultiTensorKernel(exec::MultiTensorKernelOp op);
/// Every kernel of |module| in program order, one per distinct name.
mlir::FailureOr<std::vector<KernelCode>> collectKernels(mlir::ModuleOp module);

/// The C type of a scalar / memref element type (f32 float, f64 double, i64 and
/// index long long, i32 int, i1 bool), or failure.
mlir::FailureOr<std::string> cScalarType(mlir::Type type);
/// True for the 2-byte float types f16 and bf16, which kernels store as
/// `dlc_f16` / `dlc_bf16` and compute on as `float`, rounding every result
/// once to the element type (round-to-nearest-even).
bool isHalfFloat(mlir::Type type);
/// The C type an operand's elements are stored as: `dlc_f16` / `dlc_bf16` for
/// f16 / bf16, else cScalarType.
mlir::FailureOr<std::string> cStorageType(mlir::Type type);
/// The C type a kernel body computes a value of |type| in: `float` for f16 /
/// bf16, else cScalarType.
mlir::FailureOr<std::string> cValueType(mlir::Type type);
/// C code reading element |ref| of element type |type| as its value type
/// (cValueType): f16 / bf16 widened exactly to float, others as stored.
std::string loadExpr(mlir::Type type, const std::string &ref);
/// C code converting |v|, of the value type of |type|, to its storage type:
/// f16 / bf16 rounded once to nearest even, others as they are.
std::string storeExpr(mlir::Type type, const std::string &v);
/// The storage typedefs and conversions of f16 (|bf16| false) or bf16 for the
/// CUDA (|cuda|) or host prelude: `dlc_<t>_to_f32`, `dlc_f32_to_<t>`,
/// `dlc_f64_to_<t>` (each one rounding to nearest even, bit for bit CUDA's
/// __float2half_rn / __float2bfloat16_rn / __double2half /
/// __double2bfloat16: NaN becomes 0x7fff, overflow inf, subnormals kept) and
/// `dlc_round_<t>` (a float rounded to the type and widened back).
std::string halfHelpers(bool bf16, bool cuda);
/// The byte alignment of the first element of |v| that the runtime
/// guarantees: every buffer it allocates (inputs, persistent variables, the
/// arena, a pipeline's stash and received values) starts 256-byte aligned
/// (CudaDevice::allocate checks it), an arena buffer lies at its planned
/// offset from the arena's start, and a reshape is its source's memory. A
/// pipeline stage binds an input to micro-batch m's slice of the global
/// batch, m times the input's bytes past an allocation
/// (runtime/src/Pipeline.cpp), so an input is only as aligned as its size.
/// 0 where nothing is known (an unplanned alloc). Kernels use 128-bit vector
/// accesses only where this proves them aligned.
int64_t knownAlignment(mlir::Value v);
/// Name of a kernel symbol made into a C identifier (other characters -> '_').
std::string sanitizeName(llvm::StringRef name);
/// Which operands of |op| (inputs then outputs) may alias another operand.
std::vector<bool> restrictFlags(mlir::Operation *op, mlir::ValueRange operands);

/// Compiles |kernel| with NVRTC for |arch| into |cubin|; on failure returns
/// false with the NVRTC log in |error|. Thread-safe.
bool nvrtcCompile(const KernelSource &kernel, llvm::StringRef arch,
                  std::vector<uint8_t> *cubin, std::string *error);

std::string wrapCuda(const KernelCode &code);
/// The start of every host translation unit: headers, macros and the common
/// helpers, plus the f16/bf16 storage helpers (halfHelpers) where one of
/// |kernels| stores such elements (other models' sources stay as they were).
std::string hostPrelude(llvm::ArrayRef<KernelCode> kernels);
std::string wrapHost(const KernelCode &code);

} // namespace dlc::codegen::detail

#endif
