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
const StringRef kResize[] = {"Resize"};
const StringRef kMatMulReshape[] = {"MatMul", "Transpose", "Reshape"};
const StringRef kReshapeTranspose[] = {"Reshape", "Transpose"};
const StringRef kElu[] = {"Elu"};
const StringRef kReduceMax[] = {"ReduceMax"};
const StringRef kReduceL2[] = {"ReduceL2", "Div"};
const StringRef kMvn[] = {"ReduceMean", "Sub", "Mul", "Sqrt", "Div"};
const StringRef kGather[] = {"Gather"};
const StringRef kWhere[] = {"Where"};
const StringRef kNeg[] = {"Neg", "Softmax"};
const StringRef kClip[] = {"Clip"};
const StringRef kArgMax[] = {"ArgMax"};
const StringRef kSigmoidMul[] = {"Sigmoid", "Mul"};
const StringRef kFloorMod[] = {"Floor", "Div", "Mul", "Sub"};

/// Ops with the same function in other terms. Kept to pairs a reader can
/// check from the ONNX operator definitions.
const Alternative kAlternatives[] = {
    {"Upsample", "Resize (Upsample was replaced by Resize in opset 10)",
     kResize},
    {"Einsum", "MatMul with Transpose/Reshape (export the contraction as "
               "matrix products)",
     kMatMulReshape},
    {"DepthToSpace", "Reshape + Transpose + Reshape", kReshapeTranspose},
    {"SpaceToDepth", "Reshape + Transpose + Reshape", kReshapeTranspose},
    {"GlobalMaxPool", "ReduceMax over the spatial axes (keepdims = 1)",
     kReduceMax},
    {"GlobalLpPool", "ReduceL2 over the spatial axes (p = 2)", kReduceL2},
    {"LpNormalization", "ReduceL2 (keepdims = 1) + Div (p = 2)", kReduceL2},
    {"MeanVarianceNormalization",
     "ReduceMean, Sub, Mul, Sqrt and Div (its definition as a function)",
     kMvn},
    {"Softmin", "Softmax of Neg", kNeg},
    {"Hardmax", "ArgMax (the index of the maximum)", kArgMax},
    {"Shrink", "Where with comparisons", kWhere},
    {"Mod", "Floor, Div, Mul and Sub (x - floor(x / y) * y, fmod = 0)",
     kFloorMod},
    {"Relu6", "Clip with min 0 and max 6", kClip},
};

/// Ops whose output shape depends on the values of their inputs: dlc
/// compiles static shapes, so nothing replaces them inside the model.
const StringRef kDataDependent[] = {
    "NonZero", "Unique", "NonMaxSuppression", "Compress", "TopK",
    "StringNormalizer", "TfIdfVectorizer", "SequenceConstruct",
    "SequenceInsert", "SequenceAt", "SequenceEmpty", "SplitToSequence",
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
  if (!domain.empty() && domain != "ai.onnx")
    return "none: ops of domain '" + domain.str() +
           "' are not supported; export with the default ai.onnx domain "
           "only (no custom or runtime-specific fused ops)";
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
