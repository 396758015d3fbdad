//===- KernelDedup.cpp - kernels identical up to their name, once ---------===//
//
// Many launches of a model run the same code on buffers of the same shapes
// (the twelve identical layers of a transformer, DenseNet's repeated dense
// layers): their kernels differ only in their names. Emitting and compiling
// each such kernel once shrinks the host library, the NVRTC work and the
// package; the kernel table keeps one entry per distinct kernel.
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelDedup.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

namespace dlc::codegen::detail {

static bool isIdentChar(char c) { return llvm::isAlnum(c) || c == '_'; }

std::string abstractIdentifier(llvm::StringRef text, llvm::StringRef name,
                               llvm::StringRef placeholder) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (true) {
    size_t at = name.empty() ? llvm::StringRef::npos : text.find(name, pos);
    if (at == llvm::StringRef::npos)
      break;
    size_t end = at + name.size();
    bool whole = (at == 0 || !isIdentChar(text[at - 1])) &&
                 (end == text.size() || !isIdentChar(text[end]));
    out.append(text.data() + pos, (whole ? at : end) - pos);
    if (whole)
      out.append(placeholder.data(), placeholder.size());
    pos = end;
  }
  out.append(text.data() + pos, text.size() - pos);
  return out;
}

std::string kernelContent(const KernelCode &code) {
  std::string facts;
  llvm::raw_string_ostream os(facts);
  os << "threads " << code.numThreads << " block " << code.blockSize
     << " host " << code.hostThreads << " serial "
     << code.serialReductionSteps << " f16 " << code.usesF16 << " bf16 "
     << code.usesBF16 << " cuda threads " << code.cudaThreads << " vector "
     << code.vectorWidth << " cuda loops " << code.cudaLoops << "\n";
  // "@" cannot occur in a C identifier, so the placeholder is unambiguous.
  return facts + abstractIdentifier(wrapCuda(code), code.name, "@kernel") +
         '\0' + abstractIdentifier(wrapHost(code), code.name, "@kernel");
}

void dedupKernels(std::vector<KernelCode> &kernels) {
  llvm::StringMap<size_t> kept; // content -> index in |out|
  std::vector<KernelCode> out;
  out.reserve(kernels.size());
  for (KernelCode &k : kernels) {
    auto [it, inserted] = kept.try_emplace(kernelContent(k), out.size());
    if (inserted) {
      out.push_back(std::move(k));
      continue;
    }
    KernelCode &first = out[it->second];
    first.aliases.push_back(k.name);
    first.aliases.insert(first.aliases.end(), k.aliases.begin(),
                         k.aliases.end());
  }
  kernels = std::move(out);
}

} // namespace dlc::codegen::detail
