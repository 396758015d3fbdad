//===- MultiTensor.cpp - one kernel for many tensors' updates -------------===//
//
// --dlexec-multi-tensor (Passes.td): groups the same-bodied all-parallel
// kernels that write persistent variables (the optimizer updates of a step)
// into dlexec.multi_tensor_kernel launches, as PyTorch's foreach / fused
// optimizers and NVIDIA apex's multi_tensor_apply do.
//
//===----------------------------------------------------------------------===//
#include "compiler/ExecTransforms/Passes.h"

#include "dialects/Exec/Analysis/BufferAccess.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

namespace dlc {
#define GEN_PASS_DEF_MULTITENSORPASS
#include "compiler/ExecTransforms/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;
using dlc::lowering::Access;
using dlc::lowering::accessOf;
using dlc::lowering::isVariable;
using dlc::lowering::rootOf;
using dlc::lowering::stripViews;

namespace {

/// The bytes of |v|'s buffer when it lives in the step's arena (an alloc),
/// else 0.
int64_t arenaBytes(Value v) {
  if (!stripViews(v).getDefiningOp<exec::AllocOp>())
    return 0;
  auto type = cast<MemRefType>(v.getType());
  return type.getNumElements() *
         std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

bool intersects(const llvm::SmallDenseSet<const void *, 8> &a,
                const llvm::DenseSet<const void *> &b) {
  return llvm::any_of(a, [&](const void *x) { return b.contains(x); });
}

/// A candidate kernel's operand roles: which inputs are shared (read at a
/// single element by every tensor) and which per-tensor.
struct Roles {
  SmallVector<unsigned> shared, perTensor;
};

/// The roles of |k| when it is a candidate (Passes.td), else nullopt.
std::optional<Roles> candidateRoles(exec::KernelOp k) {
  if (k.getInit() || k.getOutputs().empty())
    return std::nullopt;
  if (!llvm::all_of(k.getIteratorTypes().getAsValueRange<StringAttr>(),
                    [](StringRef it) { return it == "parallel"; }))
    return std::nullopt;
  bool readsIndex = false;
  k.getBody().walk([&](exec::IndexOp) { readsIndex = true; });
  if (readsIndex)
    return std::nullopt;
  unsigned numLoops = k.getIteratorTypes().size();
  auto shape = cast<MemRefType>(k.getOutputs()[0].getType()).getShape();
  auto maps = k.getIndexingMaps().getAsValueRange<AffineMapAttr>();
  unsigned numInputs = k.getInputs().size();
  Roles roles;
  llvm::SmallDenseSet<const void *, 8> outputRoots;
  for (auto [i, map] : llvm::enumerate(maps)) {
    Value v = k->getOperand(i);
    auto type = cast<MemRefType>(v.getType());
    bool isInput = i < numInputs;
    if (isInput && numLoops > 0 && map.getNumResults() == 0) {
      roles.shared.push_back(i);
      continue;
    }
    // A per-tensor operand: a whole dense buffer read at the element it
    // writes.
    if (!map.isIdentity() || map.getNumDims() != numLoops ||
        type.getShape() != shape || !type.getLayout().isIdentity())
      return std::nullopt;
    Operation *def = stripViews(v).getDefiningOp();
    if (!def ||
        !isa<exec::VariableRefOp, exec::AllocOp, exec::InputOp>(def))
      return std::nullopt;
    if (isInput) {
      roles.perTensor.push_back(i);
    } else if (!isVariable(v) || !outputRoots.insert(rootOf(v)).second) {
      return std::nullopt;
    }
  }
  return roles;
}

/// An arena buffer a group's member reads: its bytes and the position of
/// its last use in the original schedule.
struct HeldBuffer {
  int64_t bytes, lastUse;
};

/// Kernels that may become one multi-tensor kernel, and what they touch.
struct Group {
  SmallVector<exec::KernelOp> members;
  Roles roles;
  llvm::DenseSet<const void *> reads, writes;
  /// The arena buffers the members read, and the position of the last
  /// member (where the group runs).
  SmallVector<HeldBuffer> held;
  int64_t last = 0;
  int64_t pendingBytes = 0;
};

/// Bytes of arena buffers live at each top-level position of |block| (a
/// buffer is live from its alloc to its last use, through views; one passed
/// to dlexec.output to the end), and the last use of each alloc.
struct LiveBytes {
  std::vector<int64_t> bytes;
  llvm::DenseMap<Value, int64_t> lastUse;
};

LiveBytes liveBytes(Block &block, llvm::DenseMap<Operation *, int64_t> &pos) {
  LiveBytes live;
  int64_t n = pos.size();
  std::vector<int64_t> diff(n + 1, 0);
  for (Operation &op : block) {
    auto alloc = dyn_cast<exec::AllocOp>(op);
    if (!alloc)
      continue;
    int64_t first = pos[alloc], last = first;
    SmallVector<Value> work{alloc.getResult()};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      for (Operation *user : v.getUsers()) {
        Operation *top = block.findAncestorOpInBlock(*user);
        if (!top)
          continue;
        last = std::max(last, isa<exec::OutputOp>(top) ? n - 1 : pos[top]);
        // Views of the buffer (reshapes, windows) extend its life.
        for (Value r : user->getResults())
          if (isa<MemRefType>(r.getType()))
            work.push_back(r);
      }
    }
    live.lastUse[alloc.getResult()] = last;
  }
  // The planner lets the output of an all-parallel kernel take the bytes of
  // a same-typed input it reads for the last time (Liveness.h, inPlaceOf):
  // such an input ends one position earlier here, so that the peak this
  // pass keeps to is not above the planner's.
  llvm::DenseMap<Value, int64_t> end = live.lastUse;
  for (Operation &op : block) {
    auto k = dyn_cast<exec::KernelOp>(op);
    if (!k || !llvm::all_of(k.getIteratorTypes().getAsValueRange<StringAttr>(),
                            [](StringRef it) { return it == "parallel"; }))
      continue;
    for (Value out : k.getOutputs()) {
      if (!out.getDefiningOp<exec::AllocOp>())
        continue;
      for (Value in : k.getInputs()) {
        auto it = end.find(in);
        if (in.getDefiningOp<exec::AllocOp>() && it != end.end() &&
            it->second == pos[k] && in.getType() == out.getType() &&
            pos[in.getDefiningOp()] < pos[k]) {
          it->second = pos[k] - 1;
          break;
        }
      }
    }
  }
  for (auto [v, last] : end) {
    int64_t first = pos[v.getDefiningOp()], b = arenaBytes(v);
    if (last < first)
      continue;
    diff[first] += b;
    diff[last + 1] -= b;
  }
  live.bytes.assign(n, 0);
  int64_t run = 0;
  for (int64_t i = 0; i < n; ++i)
    live.bytes[i] = run += diff[i];
  return live;
}

/// Whether |k| (roles |roles|) computes what |g|'s members compute: the same
/// roles, element types and shared operands, and an equivalent body.
bool sameUpdate(Group &g, exec::KernelOp k, const Roles &roles) {
  exec::KernelOp p = g.members.front();
  if (roles.shared != g.roles.shared || roles.perTensor != g.roles.perTensor ||
      p.getInputs().size() != k.getInputs().size() ||
      p.getOutputs().size() != k.getOutputs().size())
    return false;
  for (auto [a, b] : llvm::zip(p->getOperands(), k->getOperands()))
    if (cast<MemRefType>(a.getType()).getElementType() !=
        cast<MemRefType>(b.getType()).getElementType())
      return false;
  for (unsigned s : roles.shared)
    if (rootOf(p.getInputs()[s]) != rootOf(k.getInputs()[s]) ||
        p.getInputs()[s].getType() != k.getInputs()[s].getType())
      return false;
  return OperationEquivalence::isRegionEquivalentTo(
      &p.getBody(), &k.getBody(), OperationEquivalence::IgnoreLocations);
}

/// Replaces |g|'s members (two or more) by one multi-tensor kernel at the
/// last member.
void merge(Group &g) {
  exec::KernelOp first = g.members.front(), last = g.members.back();
  OpBuilder b(last);
  SmallVector<Value> inputs, outputs;
  SmallVector<int64_t> sizes;
  SmallVector<Location> locs;
  for (unsigned s : g.roles.shared)
    inputs.push_back(first.getInputs()[s]);
  for (exec::KernelOp k : g.members) {
    for (unsigned r : g.roles.perTensor)
      inputs.push_back(k.getInputs()[r]);
    llvm::append_range(outputs, k.getOutputs());
    sizes.push_back(cast<MemRefType>(k.getOutputs()[0].getType())
                        .getNumElements());
    locs.push_back(k.getLoc());
  }
  auto m = exec::MultiTensorKernelOp::create(
      b, b.getFusedLoc(locs),
      b.getStringAttr(first.getSymName() + "_multi_tensor"), inputs, outputs,
      b.getDenseI64ArrayAttr(sizes),
      b.getI64IntegerAttr(g.roles.shared.size()));
  // The body: the first member's, its arguments reordered to shared inputs,
  // per-tensor inputs, outputs.
  Block &old = first.getBody().front();
  Block *body = new Block();
  m.getBody().push_back(body);
  IRMapping map;
  auto addArg = [&](unsigned i) {
    map.map(old.getArgument(i),
            body->addArgument(old.getArgument(i).getType(), first.getLoc()));
  };
  for (unsigned s : g.roles.shared)
    addArg(s);
  for (unsigned r : g.roles.perTensor)
    addArg(r);
  for (unsigned o = 0; o < first.getOutputs().size(); ++o)
    addArg(first.getInputs().size() + o);
  OpBuilder kb = OpBuilder::atBlockEnd(body);
  for (Operation &op : old)
    kb.clone(op, map);
  for (exec::KernelOp k : g.members)
    k.erase();
}

struct MultiTensorPass : dlc::impl::MultiTensorPassBase<MultiTensorPass> {
  using MultiTensorPassBase::MultiTensorPassBase;

  void runOnOperation() override {
    if (maxPendingBytes < 0) {
      getOperation().emitError()
          << "dlexec-multi-tensor: max-pending-bytes must not be negative, "
             "got "
          << maxPendingBytes;
      return signalPassFailure();
    }
    getOperation().walk([&](exec::FuncOp f) { runOnBlock(f.getBody().front()); });
  }

  void runOnBlock(Block &block) {
    llvm::DenseMap<Operation *, int64_t> pos;
    SmallVector<Operation *> ops;
    for (Operation &op : block) {
      pos[&op] = ops.size();
      ops.push_back(&op);
    }
    // The live arena bytes of the schedule as it is, and the updates'
    // deferrals added to them: a group takes a member only if keeping its
    // members' gradients live until that member keeps every position at or
    // below the schedule's peak, so deferring updates does not raise the
    // peak memory the planner starts from.
    LiveBytes live = liveBytes(block, pos);
    int64_t peak = 0;
    for (int64_t b : live.bytes)
      peak = std::max(peak, b);
    std::vector<int64_t> extra(ops.size(), 0);
    // The bytes |g|'s held buffers add at positions (g.last, to]: a buffer
    // beyond its own last use. Returns them per position, from g.last + 1.
    auto deferral = [&](Group &g, int64_t to) {
      std::vector<int64_t> add(to - g.last, 0);
      for (const HeldBuffer &h : g.held) {
        int64_t from = std::max(g.last, h.lastUse) + 1;
        if (from <= to)
          add[from - g.last - 1] += h.bytes;
      }
      for (size_t i = 1; i < add.size(); ++i)
        add[i] += add[i - 1];
      return add;
    };

    std::vector<Group> open;
    auto close = [&](size_t i) {
      if (open[i].members.size() > 1)
        merge(open[i]);
      open.erase(open.begin() + i);
    };
    for (Operation *op : ops) {
      int64_t here = pos[op];
      Access access = accessOf(op);
      std::optional<Roles> roles;
      auto k = dyn_cast<exec::KernelOp>(op);
      if (k)
        roles = candidateRoles(k);
      // The group |op| joins, if any, and what moving its members here adds.
      std::optional<size_t> joins;
      std::vector<int64_t> add;
      if (roles)
        for (size_t i = 0; i < open.size() && !joins; ++i) {
          if (!sameUpdate(open[i], k, *roles) ||
              intersects(access.writes, open[i].reads) ||
              intersects(access.writes, open[i].writes) ||
              intersects(access.reads, open[i].writes))
            continue;
          add = deferral(open[i], here);
          bool fits = true;
          for (size_t j = 0; j < add.size() && fits; ++j) {
            int64_t p = open[i].last + 1 + j;
            fits = live.bytes[p] + extra[p] + add[j] <= peak;
          }
          if (fits)
            joins = i;
        }
      // Every other group must not be disturbed by |op| running before its
      // merge point.
      for (size_t i = open.size(); i-- > 0;) {
        if (joins && *joins == i)
          continue;
        if (intersects(access.reads, open[i].writes) ||
            intersects(access.writes, open[i].reads)) {
          close(i);
          if (joins && *joins > i)
            --*joins;
        }
      }
      if (!roles)
        continue;
      if (!joins) {
        open.push_back(Group{{}, *roles, {}, {}, {}, here, 0});
        joins = open.size() - 1;
      } else {
        Group &g = open[*joins];
        for (size_t j = 0; j < add.size(); ++j)
          extra[g.last + 1 + j] += add[j];
      }
      Group &g = open[*joins];
      g.members.push_back(k);
      g.last = here;
      g.reads.insert(access.reads.begin(), access.reads.end());
      g.writes.insert(access.writes.begin(), access.writes.end());
      for (unsigned r : roles->perTensor) {
        Value in = stripViews(k.getInputs()[r]);
        auto it = live.lastUse.find(in);
        if (it == live.lastUse.end())
          continue;
        g.held.push_back({arenaBytes(in), it->second});
        g.pendingBytes += arenaBytes(in);
      }
      if (maxPendingBytes > 0 && g.pendingBytes >= maxPendingBytes)
        close(*joins);
    }
    for (size_t i = open.size(); i-- > 0;)
      close(i);
  }
};

} // namespace
