//===- OpAlternatives.cpp - What to use instead of an unsupported ONNX op -===//

#include "compiler/Import/OpAlternatives.h"
#include "compiler/Import/Importer.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"

using namespace llvm;

namespace {

/// One way to express an op with other ops: |phrase| is shown to the user;
/// |uses| are the ONNX ops it needs (all must be supported to offer it).
struct Alternative {
  StringRef op;
  StringRef phrase;
  ArrayRef<StringRef> uses;
};

// Op lists the table entries refer to.
const StringRef kReduceL2[] = {"ReduceL2", "Div"};
const StringRef kNeg[] = {"Neg", "Softmax"};
const StringRef kClip[] = {"Clip"};

/// Ops with the same function in other terms. Kept to pairs a reader can
/// check from the ONNX operator definitions, and to ops the importer does
/// not map (an op it maps never asks for an alternative).
const Alternative kAlternatives[] = {
    {"GlobalLpPool",
     "ReduceL2 over the spatial axes (p = 2), or LpPool with the whole "
     "spatial window",
     kReduceL2},
    {"Softmin", "Softmax of Neg", kNeg},
    {"Relu6", "Clip with min 0 and max 6", kClip},
};

/// Ops whose output shape depends on the values of their inputs: dlc
/// compiles static shapes, so nothing replaces them inside the model.
const StringRef kDataDependent[] = {
    "NonZero", "Unique", "NonMaxSuppression", "Compress",
    "StringNormalizer", "TfIdfVectorizer", "SequenceConstruct",
    "SequenceInsert", "SequenceEmpty",
    "ConcatFromSequence", "SequenceLength", "SequenceErase", "Optional",
    "OptionalHasElement", "OptionalGetElement"};
const StringRef kRandom[] = {"RandomNormal", "RandomUniform",
                             "RandomNormalLike", "RandomUniformLike",
                             "Bernoulli", "Multinomial"};
const StringRef kQuantized[] = {
    "QuantizeLinear",     "DequantizeLinear", "DynamicQuantizeLinear",
    "QLinearConv",        "QLinearMatMul",    "MatMulInteger",
    "ConvInteger"};

} // namespace

std::string dlc::nearestSupportedAlternative(StringRef domain,
                                             StringRef opType) {
  const dlc::onnx_import::OpRegistry &registry =
      dlc::onnx_import::OpRegistry::get();
  if (!domain.empty() && domain != "ai.onnx") {
    // Registry keys of other domains' ops are "<domain>.<op>".
    std::string imported;
    std::string prefix = domain.str() + ".";
    for (const dlc::onnx_import::OpMapping *m : registry.entries()) {
      StringRef key = m->opType;
      // "ai.onnx.preview.training.Adam" is not an op of "ai.onnx.preview".
      if (key.starts_with(prefix) &&
          !key.drop_front(prefix.size()).contains('.'))
        imported += (imported.empty() ? "" : ", ") +
                    key.drop_front(prefix.size()).str();
    }
    if (!imported.empty())
      return "none: of domain '" + domain.str() + "', dlc imports only " +
             imported;
    return "none: ops of domain '" + domain.str() +
           "' are not supported; export with the default ai.onnx domain "
           "only (no custom or runtime-specific fused ops)";
  }
  for (const Alternative &a : kAlternatives) {
    if (a.op != opType)
      continue;
    if (llvm::all_of(a.uses,
                     [&](StringRef u) { return registry.lookup(u) != nullptr; }))
      return a.phrase.str();
  }
  if (llvm::is_contained(kDataDependent, opType))
    return "none: its output shape depends on the input values, and dlc "
           "compiles static shapes";
  if (llvm::is_contained(kRandom, opType))
    return "none: pass the random tensor as a graph input instead";
  if (llvm::is_contained(kQuantized, opType))
    return "none: quantized ops are not supported; export the float model";
  return "none among the supported ops";
}
