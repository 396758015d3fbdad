//===- PlanMemory.cpp - arena offsets for dlexec.alloc buffers
//--------------===//
// Greedy-by-size best-fit placement of activation buffers in one arena per
// step function, and a checker for any memory plan.
#include "compiler/Lowering/Liveness.h"
#include "compiler/Lowering/Passes.h"

#include "mlir/IR/Builders.h"

namespace dlc {
#define GEN_PASS_DEF_PLANMEMORYPASS
#define GEN_PASS_DEF_VERIFYMEMORYPLANPASS
#include "compiler/Lowering/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;

namespace {

int64_t alignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/// The orders placeBuffers tries: by size, by size times lifetime, by
/// lifetime (each largest first, then by first use).
enum class PlacementOrder { Size, Area, Lifetime };

/// Places |lives| in |orderKind|'s order and returns the arena size in
/// bytes. Each buffer goes into the smallest gap (between buffers already
/// placed whose lifetimes overlap its own) that holds it, or above all of
/// them: the greedy-by-size offset calculation of Pisarchyk and Lee 2020
/// ("Efficient Memory Management for Deep Neural Net Inference"; TensorFlow
/// Lite), with the other two orders tried as well.
int64_t placeBuffers(ArrayRef<BufferLife> lives, int64_t alignment,
                     PlacementOrder orderKind,
                     SmallVectorImpl<int64_t> &offsets) {
  size_t n = lives.size();
  offsets.assign(n, -1);
  SmallVector<size_t> order(n);
  for (size_t i = 0; i < n; ++i)
    order[i] = i;
  auto key = [&](size_t i) -> double {
    double length = double(lives[i].last - lives[i].first + 1);
    switch (orderKind) {
    case PlacementOrder::Size:
      return double(lives[i].bytes);
    case PlacementOrder::Area:
      return double(lives[i].bytes) * length;
    case PlacementOrder::Lifetime:
      return length;
    }
    return 0;
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (key(a) != key(b))
      return key(a) > key(b);
    if (lives[a].bytes != lives[b].bytes)
      return lives[a].bytes > lives[b].bytes;
    return lives[a].first < lives[b].first;
  });
  int64_t arena = 0;
  SmallVector<size_t> placed;
  for (size_t i : order) {
    int64_t size = alignUp(std::max<int64_t>(lives[i].bytes, 1), alignment);
    // Byte ranges taken by placed buffers that are live at the same time.
    SmallVector<std::pair<int64_t, int64_t>> taken;
    for (size_t j : placed)
      if (livesOverlap(lives[i], lives[j]))
        taken.push_back(
            {offsets[j],
             offsets[j] +
                 alignUp(std::max<int64_t>(lives[j].bytes, 1), alignment)});
    llvm::sort(taken);
    int64_t best = -1, bestGap = INT64_MAX, cursor = 0;
    for (auto [lo, hi] : taken) {
      if (lo - cursor >= size && lo - cursor < bestGap) {
        best = cursor;
        bestGap = lo - cursor;
      }
      cursor = std::max(cursor, hi);
    }
    if (best < 0)
      best = cursor;
    offsets[i] = best;
    arena = std::max(arena, best + size);
    placed.push_back(i);
  }
  return arena;
}

struct PlanMemoryPass : dlc::impl::PlanMemoryPassBase<PlanMemoryPass> {
  using PlanMemoryPassBase::PlanMemoryPassBase;
  void runOnOperation() override {
    if (alignment <= 0) {
      getOperation().emitError() << "dlexec-plan-memory: alignment must be "
                                    "positive, got "
                                 << alignment;
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<exec::FuncOp>()) {
      SmallVector<BufferLife> lives = computeBufferLives(func);
      // A buffer written in place over another (BufferLife::inPlaceOf) is
      // placed as one group with it: the group lives from its first
      // member's first use to its last member's last.
      SmallVector<int64_t> groupOf = inPlaceGroups(lives);
      SmallVector<BufferLife> groups;
      SmallVector<int64_t> groupIndex(lives.size(), -1);
      for (size_t i = 0; i < lives.size(); ++i) {
        int64_t g = groupOf[i];
        if (groupIndex[g] < 0) {
          groupIndex[g] = static_cast<int64_t>(groups.size());
          groups.push_back(lives[g]);
        }
        BufferLife &gl = groups[groupIndex[g]];
        gl.first = std::min(gl.first, lives[i].first);
        gl.last = std::max(gl.last, lives[i].last);
        gl.bytes = std::max(gl.bytes, lives[i].bytes);
      }
      // The smallest arena of the three orders (the first on a tie).
      SmallVector<int64_t> offsets, tried;
      int64_t arena = -1;
      for (PlacementOrder order : {PlacementOrder::Size, PlacementOrder::Area,
                                   PlacementOrder::Lifetime}) {
        int64_t size = placeBuffers(groups, alignment, order, tried);
        if (arena < 0 || size < arena) {
          arena = size;
          offsets = tried;
        }
      }
      Builder b(func.getContext());
      for (size_t i = 0; i < lives.size(); ++i)
        lives[i].alloc.setOffsetAttr(
            b.getI64IntegerAttr(offsets[groupIndex[groupOf[i]]]));
      func.setArenaBytesAttr(b.getI64IntegerAttr(arena));
    }
  }
};

struct VerifyMemoryPlanPass
    : dlc::impl::VerifyMemoryPlanPassBase<VerifyMemoryPlanPass> {
  using VerifyMemoryPlanPassBase::VerifyMemoryPlanPassBase;
  void runOnOperation() override {
    bool ok = true;
    for (auto func : getOperation().getOps<exec::FuncOp>())
      ok &= succeeded(verifyMemoryPlan(func, alignment));
    if (!ok)
      signalPassFailure();
  }
};

} // namespace

LogicalResult dlc::verifyMemoryPlan(exec::FuncOp func, int64_t alignment) {
  SmallVector<BufferLife> lives = computeBufferLives(func);
  if (lives.empty())
    return success();
  auto arena = func.getArenaBytes();
  if (!arena)
    return func.emitError() << "memory plan: function '" << func.getSymName()
                            << "' has buffers but no arena_bytes";
  bool ok = true;
  for (BufferLife &l : lives) {
    auto off = l.alloc.getOffset();
    if (!off) {
      l.alloc.emitError() << "memory plan: buffer has no offset";
      ok = false;
      continue;
    }
    if (*off < 0 || *off % alignment != 0 || *off + l.bytes > (int64_t)*arena) {
      l.alloc.emitError() << "memory plan: offset " << *off << " (+" << l.bytes
                          << " bytes) is misaligned (alignment " << alignment
                          << ") or outside the arena of " << *arena << " bytes";
      ok = false;
    }
  }
  if (!ok)
    return failure();
  // Buffers of one in-place group may share their bytes: each member is
  // last read by the kernel that writes the next, element by element.
  SmallVector<int64_t> groupOf = inPlaceGroups(lives);
  for (size_t i = 0; i < lives.size(); ++i)
    for (size_t j = i + 1; j < lives.size(); ++j) {
      BufferLife &a = lives[i], &b = lives[j];
      if (!livesOverlap(a, b) || a.bytes == 0 || b.bytes == 0)
        continue;
      int64_t ao = *a.alloc.getOffset(), bo = *b.alloc.getOffset();
      if (groupOf[i] == groupOf[j] && ao == bo &&
          (a.last == b.first || b.last == a.first))
        continue;
      if (ao < bo + b.bytes && bo < ao + a.bytes) {
        InFlightDiagnostic d =
            b.alloc.emitError()
            << "memory plan: buffer at [" << bo << ", " << bo + b.bytes
            << ") live over ops [" << b.first << ", " << b.last
            << "] overlaps a buffer at [" << ao << ", " << ao + a.bytes
            << ") live over ops [" << a.first << ", " << a.last << "]";
        d.attachNote(a.alloc.getLoc()) << "the other buffer";
        ok = false;
      }
    }
  return success(ok);
}
