//===- MultiTensorKernel.cpp - dlexec.multi_tensor_kernel bodies ----------===//
//
// One launch over the concatenated element ranges of N tensors (PyTorch's
// foreach / fused optimizers, NVIDIA apex's multi_tensor_apply). The
// per-element code is what the generated-kernel emitter prints for the op's
// body as a flat one-loop kernel (the prototype), so every element is
// computed by the same C expressions as the per-tensor kernels it replaces.
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelCode.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/IRMapping.h"

#include <functional>

using namespace mlir;

namespace dlc::codegen::detail {

namespace {

/// Elements from which a host segment's loop is split over threads (the
/// threshold of the generated kernels' host loops, Emitters.cpp).
constexpr int64_t kHostParallelElements = 16384;

/// The prototype's code: a dlexec.kernel over one flat loop whose operands
/// are the shared inputs (rank 0, read once), the per-tensor inputs and the
/// outputs (rank 1, identity maps), with |op|'s body. Operand j of the
/// prototype is `a<j>` in its code.
FailureOr<KernelCode> prototypeCode(exec::MultiTensorKernelOp op) {
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  Block &body = op.getBody().front();
  unsigned numShared = op.getNumShared(), ins = op.getNumInputRoles(),
           outs = op.getNumOutputRoles();
  // A scratch module holds the prototype and unplanned buffers for its
  // operands; it is destroyed on return.
  OwningOpRef<ModuleOp> scratch = ModuleOp::create(loc);
  OpBuilder b = OpBuilder::atBlockEnd(scratch->getBody());
  SmallVector<Value> inputs, outputs;
  SmallVector<AffineMap> maps;
  AffineMap flat = AffineMap::getMultiDimIdentityMap(1, ctx);
  AffineMap scalar = AffineMap::get(1, 0, {}, ctx);
  for (unsigned a = 0; a < numShared + ins + outs; ++a) {
    Type elem = body.getArgument(a).getType();
    bool shared = a < numShared;
    Value v = exec::AllocOp::create(
        b, loc, shared ? MemRefType::get({}, elem) : MemRefType::get({1}, elem),
        IntegerAttr());
    (a < numShared + ins ? inputs : outputs).push_back(v);
    maps.push_back(shared ? scalar : flat);
  }
  auto proto = exec::KernelOp::create(
      b, loc, b.getStringAttr(op.getSymName()), inputs, outputs,
      b.getAffineMapArrayAttr(maps), b.getStrArrayAttr({"parallel"}),
      ArrayAttr());
  IRMapping mapping;
  op.getBody().cloneInto(&proto.getBody(), mapping);
  FailureOr<KernelCode> code = buildGeneratedKernel(proto);
  if (failed(code))
    return failure();
  if (!code->loopNest || !code->cudaBody.empty() ||
      code->hostLoops.size() != 1 || code->hostLoops[0].var != "i0")
    return op.emitOpError()
           << "codegen: the body's per-element code is not a flat loop body";
  return code;
}

} // namespace

FailureOr<KernelCode> buildMultiTensorKernel(exec::MultiTensorKernelOp op) {
  FailureOr<KernelCode> proto = prototypeCode(op);
  if (failed(proto))
    return failure();
  KernelCode code;
  code.name = sanitizeName(op.getSymName());
  auto operands = op->getOperands();
  for (Value v : operands) {
    Type elem = cast<MemRefType>(v.getType()).getElementType();
    code.paramTypes.push_back(*cStorageType(elem));
    code.usesF16 |= elem.isF16();
    code.usesBF16 |= elem.isBF16();
  }
  code.restrictParam = restrictFlags(op, operands);
  code.helpers = proto->helpers;
  // Shared inputs are operands 0..S-1 of both the prototype and |op|, so
  // the prototype's invariant code (their loads and what depends on them
  // alone) reads them as it is.
  code.invariant = proto->invariant;

  unsigned numShared = op.getNumShared(), ins = op.getNumInputRoles(),
           outs = op.getNumOutputRoles(),
           numInputs = op.getInputs().size();
  // Operand of |op| behind prototype operand numShared + r of tensor t.
  auto operandOf = [&](unsigned t, unsigned r) {
    return r < ins ? numShared + t * ins + r : numInputs + t * outs + (r - ins);
  };
  // The declarations that make tensor t's operands the prototype's
  // `a<numShared + r>`: first copies of the kernel's pointers, then, in an
  // inner block, the prototype names bound to them (shadowing the kernel's
  // parameters of the same names).
  auto bindTensor = [&](unsigned t, const std::string &in) {
    std::string s;
    for (unsigned r = 0; r < ins + outs; ++r) {
      unsigned j = operandOf(t, r);
      s += in + code.paramTypes[j] + "* const dlc_t" + std::to_string(r) +
           " = a" + std::to_string(j) + ";\n";
    }
    s += in + "{\n";
    for (unsigned r = 0; r < ins + outs; ++r)
      s += in + "  " + code.paramTypes[operandOf(t, r)] + "* const a" +
           std::to_string(numShared + r) + " = dlc_t" + std::to_string(r) +
           ";\n";
    return s;
  };

  unsigned numTensors = op.getNumTensors();
  SmallVector<int64_t> start(numTensors + 1, 0);
  for (unsigned t = 0; t < numTensors; ++t)
    start[t + 1] = start[t] + op.getSizes()[t];
  code.numThreads = start[numTensors];

  // CUDA: thread tid finds its tensor by a binary search over the range
  // starts, unrolled into comparisons with constants, and runs the element
  // at tid - start[t] of that tensor.
  std::string body;
  std::function<void(unsigned, unsigned, const std::string &)> search =
      [&](unsigned lo, unsigned hi, const std::string &in) {
        if (hi - lo == 1) {
          body += in + "{\n" + in + "  const long long i0 = tid - " +
                  std::to_string(start[lo]) + "LL;\n" + bindTensor(lo, in + "  ");
          body += proto->loopBody;
          body += in + "  }\n" + in + "}\n";
          return;
        }
        unsigned mid = (lo + hi) / 2;
        body += in + "if (tid < " + std::to_string(start[mid]) + "LL) {\n";
        search(lo, mid, in + "  ");
        body += in + "} else {\n";
        search(mid, hi, in + "  ");
        body += in + "}\n";
      };
  search(0, numTensors, "  ");
  code.body = std::move(body);

  // Host: one loop per tensor, after the invariant code (a loop nest
  // without loops prints `loopBody` once).
  std::string host;
  for (unsigned t = 0; t < numTensors; ++t) {
    int64_t n = op.getSizes()[t];
    host += "  {\n" + bindTensor(t, "    ");
    if (n >= kHostParallelElements)
      host += std::string("#pragma omp parallel for") +
              (proto->innerIndependent ? " simd" : "") + "\n";
    else if (proto->innerIndependent)
      host += "#pragma GCC ivdep\n";
    host += "      for (long long i0 = 0; i0 < " + std::to_string(n) +
            "LL; ++i0) {\n" + proto->loopBody + "      }\n    }\n  }\n";
  }
  code.loopNest = true;
  code.loopBody = std::move(host);
  return code;
}

} // namespace dlc::codegen::detail
