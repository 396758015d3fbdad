//===- KernelDedup.h - kernels identical up to their name, once -*- C++ -*-===//
#ifndef DLC_CODEGEN_KERNELDEDUP_H
#define DLC_CODEGEN_KERNELDEDUP_H

#include "codegen/KernelCode.h"

#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace dlc::codegen::detail {

/// |text| with every occurrence of the C identifier |name| as a whole token
/// (not inside a longer identifier) replaced by |placeholder|.
std::string abstractIdentifier(llvm::StringRef text, llvm::StringRef name,
                               llvm::StringRef placeholder);

/// The printed form of |code| with its name abstracted: its CUDA and host
/// translation units (wrapCuda, wrapHost) with the kernel's name replaced by
/// a placeholder, plus the launch facts they may not print (threads, CUDA
/// threads, block size, host threads, vector width, 2-byte float use). Two kernels with the same printed
/// form compute the same thing on both targets.
std::string kernelContent(const KernelCode &code);

/// Merges the kernels of |kernels| (program order) whose kernelContent is
/// equal: the first of each group stays, in its place and under its own
/// name, and lists the names of the others in its `aliases`; the others are
/// removed. Launches of a removed kernel run the one kept (the package
/// writer maps them by name). The content is compared in full (a string map
/// keyed by it), so a hash collision cannot merge two different kernels.
void dedupKernels(std::vector<KernelCode> &kernels);

} // namespace dlc::codegen::detail

#endif
