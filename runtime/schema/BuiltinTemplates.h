//===- BuiltinTemplates.h - builtin kernel templates ------------*- C++ -*-===//
//
// The one list of dlexec.builtin_kernel templates: the verifier checks an
// op against its row and family, codegen dispatches on the family, and the
// docs test checks docs/dlexec.md against the names. MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_SCHEMA_BUILTINTEMPLATES_H
#define DLC_RUNTIME_SCHEMA_BUILTINTEMPLATES_H

#include <cstddef>
#include <string>
#include <string_view>

namespace dlc::exec {

/// Templates that share a verifier and a codegen builder.
enum class BuiltinFamily {
  Pool,           // max/average pooling over [N, C, H, W] and its gradient
  Softmax,        // softmax, log_softmax along `axis`
  LayerNorm,      // LayerNorm over the last axis, with its mean and rstd
  CrossEntropy,   // mean softmax cross-entropy and its gradient
  Dropout,        // Philox dropout with a mask
  Gather,         // ONNX Gather and its gradient
  GatherElements, // ONNX GatherElements and its gradient
  Resize,         // ONNX Resize and its gradient
  Attention       // fused attention, its query and key/value gradients
};

/// One row of BuiltinTemplates.def.
struct BuiltinTemplateInfo {
  const char *name;
  BuiltinFamily family;
  /// The gradient form of the family's forward template.
  bool isGradient;
  unsigned numInputs, numOutputs;
  /// Operand roles, e.g. "x, dy -> dx".
  const char *operands;
  /// Attributes, comma-separated ("" for none).
  const char *attributes;
  /// The float data operands may be f16 / bf16: the template loads them
  /// widened to float, computes in float and rounds each stored result once
  /// (or, for the forward gathers, only copies them).
  bool halfFloats;
  /// Codegen writes the (single) output through a strided view of a larger
  /// buffer (a dlexec.subview as the output operand), so the memory planner
  /// may place it in its slot of a concatenation's buffer.
  bool stridedOutput;
};

/// The inputs of |info| that may be left out: those written in brackets in
/// its operand roles ("q, k, v, [mask], [step] -> o, lse" has 2), always the
/// last ones; an op has between numInputs - optionalInputs and numInputs.
inline constexpr unsigned optionalInputs(const BuiltinTemplateInfo &info) {
  unsigned n = 0;
  for (const char *c = info.operands; *c && *c != '-'; ++c)
    n += *c == '[';
  return n;
}

/// Every template.
inline constexpr BuiltinTemplateInfo kBuiltinTemplates[] = {
#define DLC_BUILTIN_TEMPLATE(Name, Family, Grad, Ins, Outs, Operands, Attrs,   \
                             Half, Strided)                                    \
  {Name, BuiltinFamily::Family, Grad, Ins, Outs, Operands, Attrs, Half, Strided},
#include "runtime/schema/BuiltinTemplates.def"
};

/// The row named |name|, or null for an unknown template.
inline const BuiltinTemplateInfo *lookupBuiltinTemplate(std::string_view name) {
  for (const BuiltinTemplateInfo &info : kBuiltinTemplates)
    if (name == info.name)
      return &info;
  return nullptr;
}

/// "max_pool2d, max_pool2d_grad, ..." for messages.
inline std::string builtinTemplateNames() {
  std::string out;
  for (const BuiltinTemplateInfo &info : kBuiltinTemplates)
    out += (out.empty() ? "" : ", ") + std::string(info.name);
  return out;
}

} // namespace dlc::exec

#endif
