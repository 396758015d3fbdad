//===- RematPersistentKernels.cpp - recompute reads of persistent state ---===//
//
// --dlexec-remat-persistent-kernels (Passes.td): a kernel that reads only
// persistent variables (the low-precision cast of a weight) is recomputed
// right before each later reader, so its result is not kept in the arena
// from the forward pass to the backward pass.
//
//===----------------------------------------------------------------------===//
#include "compiler/ExecTransforms/Passes.h"

#include "dialects/Exec/Analysis/BufferAccess.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

namespace dlc {
#define GEN_PASS_DEF_REMATPERSISTENTKERNELSPASS
#include "compiler/ExecTransforms/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;

namespace {

/// The number of leading operands |op| reads (its inputs) when it is an op
/// that only reads those and writes the rest, else nullopt.
std::optional<unsigned> numInputsOf(Operation *op) {
  if (auto k = dyn_cast<exec::KernelOp>(op))
    return k.getInputs().size();
  if (auto k = dyn_cast<exec::BuiltinKernelOp>(op))
    return k.getInputs().size();
  if (auto c = dyn_cast<exec::LibraryCallOp>(op))
    return c.getInputs().size();
  if (auto m = dyn_cast<exec::MultiTensorKernelOp>(op))
    return m.getInputs().size();
  return std::nullopt;
}

/// Whether |k| is a candidate (Passes.td): all-parallel, one output alloc
/// of a float type narrower than an input that only |k| writes, inputs all persistent variables, and readers that
/// read it only as an input. Its readers, in block order, go to |readers|.
bool isCandidate(exec::KernelOp k, SmallVectorImpl<Operation *> &readers) {
  if (k.getInit() || k.getOutputs().size() != 1 || k.getInputs().empty())
    return false;
  if (!llvm::all_of(k.getIteratorTypes().getAsValueRange<StringAttr>(),
                    [](StringRef it) { return it == "parallel"; }))
    return false;
  if (!llvm::all_of(k.getInputs(), lowering::isVariable))
    return false;
  Value out = k.getOutputs()[0];
  if (!out.getDefiningOp<exec::AllocOp>())
    return false;
  // A low-precision copy: the output is a float narrower than an input.
  auto bitsOf = [](Value v) -> unsigned {
    auto ft = dyn_cast<FloatType>(cast<MemRefType>(v.getType()).getElementType());
    return ft ? ft.getWidth() : 0;
  };
  unsigned outBits = bitsOf(out);
  if (!outBits || llvm::none_of(k.getInputs(), [&](Value in) {
        return bitsOf(in) > outBits;
      }))
    return false;
  llvm::SmallPtrSet<Operation *, 4> seen;
  for (OpOperand &use : out.getUses()) {
    Operation *user = use.getOwner();
    if (user == k.getOperation())
      continue;
    std::optional<unsigned> numInputs = numInputsOf(user);
    if (!numInputs || use.getOperandNumber() >= *numInputs)
      return false; // a view, an output, or a write of the buffer
    if (user->getBlock() != k->getBlock() || user->isBeforeInBlock(k))
      return false;
    if (seen.insert(user).second)
      readers.push_back(user);
  }
  llvm::sort(readers,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return readers.size() >= 2;
}

struct RematPersistentKernelsPass
    : dlc::impl::RematPersistentKernelsPassBase<RematPersistentKernelsPass> {
  void runOnOperation() override {
    getOperation().walk([&](exec::FuncOp func) { runOnBlock(func.getBody().front()); });
  }

  void runOnBlock(Block &block) {
    SmallVector<exec::KernelOp> kernels(block.getOps<exec::KernelOp>());
    for (exec::KernelOp k : kernels) {
      SmallVector<Operation *> readers;
      if (!isCandidate(k, readers))
        continue;
      llvm::SmallDenseSet<const void *, 8> variables;
      for (Value in : k.getInputs())
        variables.insert(lowering::rootOf(in));
      // Walk from the kernel to its last reader; a write of one of its
      // variables ends the readers that may get a copy.
      Operation *op = k->getNextNode();
      unsigned copies = 0;
      for (Operation *reader : ArrayRef(readers).drop_front()) {
        bool written = false;
        for (; op != reader; op = op->getNextNode()) {
          lowering::Access a = lowering::accessOf(op);
          if (llvm::any_of(a.writes, [&](const void *w) {
                return variables.contains(w);
              })) {
            written = true;
            break;
          }
        }
        if (written)
          break;
        OpBuilder b(reader);
        Value out = k.getOutputs()[0];
        Operation *alloc = b.clone(*out.getDefiningOp());
        alloc->removeAttr("offset");
        IRMapping map;
        map.map(out, alloc->getResult(0));
        auto copy = cast<exec::KernelOp>(b.clone(*k, map));
        copy.setSymName((k.getSymName() + "_remat" + Twine(++copies)).str());
        reader->replaceUsesOfWith(out, alloc->getResult(0));
      }
    }
  }
};

} // namespace
