//===- PlanStats.cpp - counts and memory over a planned dlexec module ------===//
#include "dialects/Exec/Analysis/PlanStats.h"

#include "dialects/Exec/Analysis/KernelQueries.h"
#include "dialects/Exec/Analysis/Liveness.h"
#include "runtime/schema/LibraryCalls.h"

using namespace mlir;
using namespace dlc;

/// The ops that use buffer |v| or a reshape view of it.
static void collectUsers(Value v, SmallVectorImpl<Operation *> &users) {
  for (Operation *u : v.getUsers()) {
    if (auto r = dyn_cast<exec::ReshapeOp>(u))
      collectUsers(r.getResult(), users);
    else
      users.push_back(u);
  }
}

static Value stripViews(Value v) {
  while (auto r = v.getDefiningOp<exec::ReshapeOp>())
    v = r.getSource();
  return v;
}

/// Counts cast kernels, and those an adjacent elementwise kernel could have
/// absorbed: the cast is the only reader of what an all-parallel kernel
/// writes (that kernel could write the cast type), or every reader of the
/// cast is an all-parallel kernel (each could convert as it reads).
static void countCastKernels(ModuleOp planned, PlanStats &s) {
  auto elementwise = [](Operation *op) {
    auto k = dyn_cast<exec::KernelOp>(op);
    return k && isAllParallel(k);
  };
  planned.walk([&](exec::KernelOp k) {
    if (!isCastKernel(k))
      return;
    ++s.castKernels;
    SmallVector<Operation *> inUsers, outUsers;
    collectUsers(stripViews(k.getInputs()[0]), inUsers);
    collectUsers(stripViews(k.getOutputs()[0]), outUsers);
    bool onlyReaderOfAKernel =
        llvm::any_of(inUsers, [&](Operation *u) {
          return u != k.getOperation() && elementwise(u) &&
                 llvm::is_contained(cast<exec::KernelOp>(u).getOutputs(),
                                    k.getInputs()[0]);
        }) &&
        inUsers.size() == 2;
    bool readersAreKernels = llvm::all_of(outUsers, [&](Operation *u) {
      return u == k.getOperation() || elementwise(u);
    });
    if (onlyReaderOfAKernel || (outUsers.size() > 1 && readersAreKernels))
      ++s.castKernelsNextToElementwise;
  });
}

dlc::PlanStats dlc::computePlanStats(ModuleOp planned) {
  PlanStats s;
  countCastKernels(planned, s);
  int64_t largestCallOutput = 0, largestFallback = 0;
  planned.walk([&](Operation *op) {
    if (isa<exec::KernelOp, exec::MultiTensorKernelOp>(op))
      ++s.kernels;
    else if (isa<exec::BuiltinKernelOp>(op))
      ++s.builtinKernels;
    else if (auto call = dyn_cast<exec::LibraryCallOp>(op)) {
      ++s.libraryCalls;
      FailureOr<exec::LibraryCallParams> p = call.getParams();
      if (succeeded(p))
        largestFallback = std::max(largestFallback,
                                   exec::libraryCallFallbackScratchBytes(*p));
      if (succeeded(p) && exec::libraryCallInfo(p->call).family ==
                              exec::LibraryCallFamily::Gemm) {
        const exec::GemmParams &g = p->gemm;
        bool bias = g.has_c && g.c_is_row_vector && g.beta != 0.0f;
        switch (g.epilogue) {
        case exec::GemmEpilogue::ReluAux:
          ++s.gemmReluAux;
          [[fallthrough]];
        case exec::GemmEpilogue::Relu:
          ++(bias ? s.gemmBiasRelu : s.gemmRelu);
          break;
        case exec::GemmEpilogue::BiasGradA:
        case exec::GemmEpilogue::BiasGradB:
          ++s.gemmBiasGrad;
          break;
        case exec::GemmEpilogue::DRelu:
          ++s.gemmDRelu;
          break;
        case exec::GemmEpilogue::DReluBiasGrad:
          ++s.gemmDReluBiasGrad;
          break;
        case exec::GemmEpilogue::None:
          if (bias)
            ++s.gemmBias;
          break;
        }
      }
      for (Value out : call.getOutputs())
        largestCallOutput = std::max(
            largestCallOutput, bufferBytes(cast<MemRefType>(out.getType())));
    } else if (auto in = dyn_cast<exec::InputOp>(op))
      s.inputBytes += exec::allocationBytes(
          bufferBytes(cast<MemRefType>(in.getBuffer().getType())));
    else if (auto f = dyn_cast<exec::FuncOp>(op))
      s.arenaBytes =
          std::max<int64_t>(s.arenaBytes, f.getArenaBytes().value_or(0));
    else if (auto v = dyn_cast<exec::VariableOp>(op))
      s.persistentBytes +=
          exec::allocationBytes(bufferBytes(cast<MemRefType>(v.getType())));
  });
  int64_t workspace =
      exec::workspaceBytesFor(largestCallOutput, largestFallback);
  s.workspaceBytes = workspace > 0 ? exec::allocationBytes(workspace) : 0;
  if (s.arenaBytes > 0)
    s.arenaBytes = exec::allocationBytes(s.arenaBytes);
  return s;
}
