//===- ONNXImporter.cpp - ONNX protobuf -> dlgraph module
//------------------===//
//
// Reads an ONNX ModelProto with the generated protobuf classes and builds a
// dlgraph module with static shapes: result shapes are computed here, per op,
// following the ONNX operator specifications (opsets 13..17, and older
// opsets where every node's old definition is mapped). Constant shape
// subgraphs (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as PyTorch
// exports `x.view(x.size(0), -1)`) are folded while importing.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/ONNXImporter.h"
#include "compiler/Import/OpAlternatives.h"

#include "dialects/Graph/GraphDialect.h"
#include "dialects/Graph/GraphOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/xxhash.h"

#include "onnx/onnx_pb.h"

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

using namespace mlir;
namespace gr = dlc::graph;

namespace {

constexpr int64_t kMinOpset = 13;
constexpr int64_t kMaxOpset = 17;
/// Tensors the importer accepts have at most 2^40 elements: far beyond any
/// model, and small enough that products of a few such element counts or
/// dims never overflow int64.
constexpr int64_t kMaxElements = int64_t(1) << 40;
/// Constants the importer builds element by element (folded shape
/// computations, masks, EyeLike) have at most 2^26 elements.
constexpr int64_t kMaxFoldElements = int64_t(1) << 26;

/// The element count of |shape|, or -1 when a dim is negative or the count
/// exceeds |limit|.
int64_t boundedNumElements(llvm::ArrayRef<int64_t> shape,
                           int64_t limit = kMaxElements) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > limit / d))
      return -1;
    n *= d;
  }
  return n <= limit ? n : -1;
}

/// Checked int64 arithmetic (llvm/Support/CheckedArithmetic.h) for shape
/// formulas over attribute values that a file may set to anything:
/// |overflowed| records an overflow where plain arithmetic would be
/// undefined behavior (the result is then 0).
struct CheckedMath {
  bool overflowed = false;
  int64_t add(int64_t a, int64_t b) { return take(llvm::checkedAdd(a, b)); }
  int64_t sub(int64_t a, int64_t b) { return take(llvm::checkedSub(a, b)); }
  int64_t mul(int64_t a, int64_t b) { return take(llvm::checkedMul(a, b)); }

private:
  int64_t take(std::optional<int64_t> r) {
    overflowed |= !r;
    return r.value_or(0);
  }
};

/// The tensor element types the importer accepts, for diagnostics.
constexpr const char *kSupportedTypes =
    "float (f32), double (f64), int32, int64, bool";

/// The dlgraph element type of an ONNX TensorProto element type, or null
/// when it is not one of kSupportedTypes.
Type elementTypeFor(Builder &b, int32_t t) {
  switch (t) {
  case onnx::TensorProto_DataType_FLOAT:
    return b.getF32Type();
  case onnx::TensorProto_DataType_DOUBLE:
    return b.getF64Type();
  case onnx::TensorProto_DataType_INT32:
    return b.getI32Type();
  case onnx::TensorProto_DataType_INT64:
    return b.getI64Type();
  case onnx::TensorProto_DataType_BOOL:
    return b.getI1Type();
  default:
    return Type();
  }
}

/// The values of an integer constant, sign-extended to int64.
SmallVector<int64_t> intValues(DenseElementsAttr c) {
  SmallVector<int64_t> v;
  for (const APInt &x : c.getValues<APInt>())
    v.push_back(x.getSExtValue());
  return v;
}

/// An integer constant of |type| (any integer element type) from int64s.
DenseElementsAttr intConstant(RankedTensorType type, ArrayRef<int64_t> v) {
  unsigned w = type.getElementType().getIntOrFloatBitWidth();
  SmallVector<APInt> vals;
  for (int64_t x : v)
    vals.push_back(
        APInt(w, (uint64_t)x, /*isSigned=*/true, /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, vals);
}

/// Renders a shape as "[2, 3, 4]" for diagnostics.
std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

/// The ONNX spelling of a TensorProto element type, for diagnostics.
std::string onnxTypeName(int32_t t) {
  switch (t) {
  case onnx::TensorProto_DataType_UNDEFINED:
    return "undefined";
  case onnx::TensorProto_DataType_FLOAT:
    return "float (f32)";
  case onnx::TensorProto_DataType_FLOAT16:
    return "float16";
  case onnx::TensorProto_DataType_BFLOAT16:
    return "bfloat16";
  case onnx::TensorProto_DataType_DOUBLE:
    return "double";
  default:
    if (onnx::TensorProto_DataType_IsValid(t))
      return onnx::TensorProto_DataType_Name(
          static_cast<onnx::TensorProto_DataType>(t));
    return "unknown type " + std::to_string(t);
  }
}

int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

/// What an ONNX value name stands for while importing. A name can have known
/// contents (`constant`: initializers, Constant nodes, folded shape
/// computations), be an f32 initializer read through a variable (`variable`),
/// and/or have an SSA value (`value`, created on first use for the former two).
struct Slot {
  Value value;
  DenseElementsAttr constant;
  std::string variable;
  LocationAttr loc;

  RankedTensorType type() const {
    if (value)
      return cast<RankedTensorType>(value.getType());
    return cast<RankedTensorType>(constant.getType());
  }
  /// True when the contents are known and may be folded (f32 initializers
  /// are variables: their contents change during training).
  /// Constants above kMaxFoldElements are materialized, never folded.
  bool isFoldable() const {
    return constant && variable.empty() &&
           constant.getNumElements() <= kMaxFoldElements;
  }
};

class Importer {
public:
  Importer(MLIRContext &ctx, StringRef path, const dlc::ImportOptions &options)
      : ctx(&ctx), path(path.str()), options(options), builder(&ctx),
        fileLoc(FileLineColLoc::get(&ctx, path, 0, 0)) {}

  OwningOpRef<ModuleOp> run(const onnx::ModelProto &model);

  /// Support of op |opType| (default domain when |defaultDomain|) at
  /// |opset|: empty when the importer has a handler whose definition at that
  /// opset is mapped, else why not (one sentence, no alternative).
  static std::string unsupportedReason(StringRef opType, bool defaultDomain,
                                       int64_t opset);
  /// The supported op types, sorted, comma-separated.
  static std::string supportedOpList();
  /// The supported op types.
  static const llvm::StringSet<> &supportedOpSet();

private:
  using Handler = LogicalResult (Importer::*)();

  // Diagnostics.
  InFlightDiagnostic modelError() { return emitError(fileLoc); }
  /// An error at the current node, prefixed with "<OpType> node '<name>': ".
  InFlightDiagnostic nodeError() {
    return emitError(nodeLoc)
           << node->op_type() << " node '" << nodeName << "': ";
  }
  Location namedLoc(StringRef name) {
    return NameLoc::get(StringAttr::get(ctx, name), fileLoc);
  }

  // Model-level steps.
  LogicalResult checkOpset(const onnx::ModelProto &model);
  FailureOr<DenseElementsAttr> convertTensor(const onnx::TensorProto &t,
                                             Location loc, StringRef what);
  LogicalResult importInitializers(const onnx::GraphProto &graph);
  LogicalResult importInputs(const onnx::GraphProto &graph,
                             SmallVectorImpl<Type> &types,
                             SmallVectorImpl<std::string> &names);
  LogicalResult importNode(const onnx::NodeProto &n, int index);

  // Attributes of the current node. A wrong attribute type emits an error and
  // sets |attrFailed|; callers check it once after reading all attributes.
  const onnx::AttributeProto *findAttr(StringRef name);
  int64_t attrInt(StringRef name, int64_t def);
  float attrFloat(StringRef name, float def);
  SmallVector<int64_t> attrInts(StringRef name, ArrayRef<int64_t> def);
  std::string attrString(StringRef name, StringRef def);

  // Inputs and outputs of the current node.
  bool hasInput(int i) {
    return i < node->input_size() && !node->input(i).empty();
  }
  Slot *input(int i);
  Value operand(int i, bool requireF32 = true);
  /// Reads input |i| as a constant int64 tensor (shape-like operands).
  FailureOr<SmallVector<int64_t>> constInts(int i, StringRef what);
  LogicalResult define(int out, Value v);
  LogicalResult defineConstant(int out, DenseElementsAttr c);
  LogicalResult defineSlot(int out, const Slot &s);
  /// Fails unless outputs |first|.. of the node are absent or unused.
  LogicalResult requireOnlyLeadingOutputs(int first);
  Value materialize(Slot &s);
  /// Reshapes input 0 to |shape| (folds constants) and defines output 0.
  LogicalResult reshapeTo(ArrayRef<int64_t> shape);

  // Op handlers.
  template <typename OpTy> LogicalResult unary();
  template <typename OpTy> LogicalResult binary();
  /// Max/Min over any number of broadcasting inputs.
  template <typename OpTy> LogicalResult variadic();
  LogicalResult compare();
  /// Not, And, Or, Xor on bool tensors.
  LogicalResult logical();
  LogicalResult where();
  LogicalResult reciprocal();
  LogicalResult absOp();
  /// Elu, Selu, LeakyRelu, Softplus, HardSigmoid, HardSwish, decomposed
  /// into elementwise dlgraph ops.
  LogicalResult activation();
  LogicalResult prelu();
  /// Input |i|, which must have a float element type (f32 or f64).
  Value floatOperand(int i);
  /// A splat dlgraph.constant of |t| (float, integer or bool) holding |v|.
  Value splatOf(RankedTensorType t, double v);
  Value splatLike(Value like, double v);
  LogicalResult foldIntBinary(Slot &l, Slot &r);
  LogicalResult gemm();
  LogicalResult matmul();
  /// IsNaN and IsInf as comparisons (x != x; x == +-inf).
  LogicalResult isNanOrInf();
  /// Mod: dlgraph.fmod (fmod = 1) or dlgraph.mod (fmod = 0, integers).
  LogicalResult modOp();
  /// Hardmax (opset 13, any axis): one-hot of the first maximum, as
  /// arg_max == iota along the axis.
  LogicalResult hardmax();
  LogicalResult conv();
  /// For a 1-D Conv/pool (rank-3 input): rewrites the given 1-D attributes
  /// (kernel_shape, strides, dilations: 1 value; pads: 2) as 2-D ones over
  /// an inserted H axis of size 1.
  LogicalResult liftTo2D(SmallVectorImpl<int64_t> &kernel,
                         SmallVectorImpl<int64_t> &strides,
                         SmallVectorImpl<int64_t> &pads,
                         SmallVectorImpl<int64_t> &dilations);
  /// |v| ([N, C, L]) reshaped to [N, C, 1, L].
  Value insertUnitH(Value v);
  /// ConvTranspose (1-D/2-D/3-D) as dlgraph.conv_backward_data (+ bias add).
  LogicalResult convTranspose();
  LogicalResult batchNorm();
  LogicalResult clip();
  template <typename OpTy> LogicalResult pool();
  LogicalResult globalAveragePool();
  LogicalResult globalMaxPool();
  LogicalResult eyeLike();
  LogicalResult depthSpace();
  LogicalResult flatten();
  LogicalResult reshape();
  template <typename OpTy> LogicalResult softmax();
  LogicalResult constant();
  LogicalResult identity();
  LogicalResult dropout();
  LogicalResult transpose();
  LogicalResult shape();
  LogicalResult gather();
  LogicalResult unsqueeze();
  LogicalResult squeeze();
  LogicalResult concat();
  /// Slice (opset 10+: constant starts/ends/axes/steps inputs; opset 1-9:
  /// attributes), folded on constants, else dlgraph.slice.
  LogicalResult slice();
  /// Split (opset 13+: constant `split` input; 2-12: attribute; equal parts
  /// when absent) as slices.
  LogicalResult split();
  /// Pad (opset 11+: constant pads/constant_value inputs; 2-10: attributes)
  /// in constant, edge and reflect mode: negative pads crop with a slice;
  /// constant mode is dlgraph.pad, edge/reflect are concats of slices.
  LogicalResult pad();
  /// GatherElements as dlgraph.gather_elements.
  LogicalResult gatherElements();
  /// |s| sliced: result[i] = s[starts + steps * i] with result |shape|;
  /// folded when |s| is foldable, |s| itself when the slice is the whole.
  Slot stridedSlice(Slot &s, ArrayRef<int64_t> starts, ArrayRef<int64_t> steps,
                    ArrayRef<int64_t> shape);
  LogicalResult castOp();
  /// ReduceSum/Mean/Max/Min/L1/L2/SumSquare/LogSum/LogSumExp (opsets
  /// 13..17: constant axes), decomposed into dlgraph reductions.
  LogicalResult reduce();
  /// ArgMax/ArgMin (opsets 11..17) on float inputs, as dlgraph.arg_max/min.
  LogicalResult argReduce();
  /// Range with constant start/limit/delta, folded to a constant.
  LogicalResult range();
  /// Resize (opsets 11..17) and Upsample (opset 9) with constant scales or
  /// sizes, modes nearest and linear, as dlgraph.resize.
  LogicalResult resize();
  /// The rank-0 f32 counter that training-mode Dropout seeds its stream
  /// with: variable @__dropout_step, advanced by 1 each time the function
  /// runs (created on first use).
  Value dropoutStep();
  Value dropoutStepValue;
  /// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opsets 13..17),
  /// decomposed into a one-hot select over axis 1 and reductions.
  LogicalResult lossOp();
  /// Expand (constant shape, ONNX bidirectional broadcast) as broadcast_to.
  LogicalResult expand();
  /// Tile (constant repeats) as reshape + broadcast_to + reshape.
  LogicalResult tile();
  /// Trilu (constant k) as a select with a constant [N, M] mask.
  LogicalResult trilu();
  /// Size, folded to an int64 scalar constant.
  LogicalResult sizeOp();
  /// ConstantOfShape (constant shape), folded to a splat constant.
  LogicalResult constantOfShape();
  /// LayerNormalization (opset 17) and InstanceNormalization, decomposed
  /// into reduce_mean, sub, mul, rsqrt and add.
  LogicalResult normalization();
  /// Reduces |x| over |axes| (sorted, distinct, normalized) with the dlgraph
  /// reduction OpTy.
  template <typename OpTy>
  Value reduceOver(Value x, ArrayRef<int64_t> axes, bool keepdims);

  /// What Conv and ConvTranspose read alike: attributes, operands (X, W,
  /// optional B), with a 1-D node lifted to 2-D (is1D) and the number of
  /// spatial axes (2 or 3).
  struct ConvNode {
    std::string autoPad;
    SmallVector<int64_t> kernel, strides, pads, dilations;
    int64_t group = 1;
    Value x, w, bias;
    RankedTensorType xt, wt;
    bool is1D = false;
    size_t spatial = 2;
  };
  /// Fills |c| for the current Conv or ConvTranspose node (|what| names it
  /// in errors).
  LogicalResult readConvNode(StringRef what, ConvNode &c);
  FailureOr<size_t> convSpatialAxes(StringRef what, RankedTensorType xt,
                                    RankedTensorType wt,
                                    SmallVectorImpl<int64_t> &strides,
                                    SmallVectorImpl<int64_t> &dilations,
                                    SmallVectorImpl<int64_t> &pads);
  static const llvm::StringMap<Handler> &handlers();

  MLIRContext *ctx;
  std::string path;
  dlc::ImportOptions options;
  OpBuilder builder;
  Location fileLoc;
  ModuleOp module;
  func::FuncOp func;
  int64_t opset = 0;
  /// The static dim 0 the model was exported with, when --batch-size replaced
  /// it with a different value; -1 otherwise.
  int64_t exportedBatch = -1;

  llvm::StringMap<Slot> slots;
  llvm::StringMap<const onnx::TensorProto *> f32Initializers;
  llvm::StringMap<Value> variableReads;
  llvm::StringSet<> consumed;
  /// How many inputs of non-Identity nodes name each value, looking through
  /// Identity nodes (a node using a value twice counts twice).
  llvm::StringMap<int> useCount;

  const onnx::NodeProto *node = nullptr;
  std::string nodeName;
  Location nodeLoc = UnknownLoc::get(ctx);
  bool attrFailed = false;
};

} // namespace

//===----------------------------------------------------------------------===//
// Model-level steps
//===----------------------------------------------------------------------===//

/// Per op type, the first opset whose definition the importer maps exactly.
/// An older opset is accepted when every node's op has, at that opset, a
/// definition this importer maps exactly: either the op has had its
/// opset-13 definition since then (later versions only added element types
/// such as bfloat16 or int8), or its handler reads the old definition
/// (legacy `broadcast`/`axis` of Add/Sub/Mul/Div/Pow before 7, Softmax and
/// LogSoftmax's 2-D coercion before 13, Clip's attributes before 11,
/// Squeeze/Unsqueeze/ReduceSum `axes` attributes before 13, Dropout and
/// BatchNormalization's `is_test` before 7, `spatial` before 9, PRelu's
/// per-channel slope before 7). The value is the first opset the mapping
/// covers; ops the importer does not know at all are reported by name when
/// their node is imported.
static const llvm::StringMap<int64_t> &mappedSinceTable() {
  static const llvm::StringMap<int64_t> mappedSince = {
      {"Abs", 6},
      {"Add", 6},
      {"And", 7},
      {"AveragePool", 1},
      {"BatchNormalization", 6},
      {"Cast", 6},
      {"CastLike", 15},
      {"Clip", 6},
      {"Concat", 4},
      {"Slice", 1},
      {"Split", 2},
      {"Pad", 2},
      {"GatherElements", 11},
      {"Constant", 1},
      {"ConstantOfShape", 9},
      {"Expand", 8},
      {"InstanceNormalization", 6},
      {"Size", 1},
      {"Softsign", 1},
      {"Tile", 6},
      {"Conv", 1},
      {"ConvTranspose", 1},
      {"Div", 6},
      {"Dropout", 6},
      {"Elu", 6},
      {"Equal", 7},
      {"Erf", 9},
      {"Shrink", 9},
      {"EyeLike", 9},
      {"GlobalMaxPool", 1},
      {"DepthToSpace", 11},
      {"SpaceToDepth", 1},
      {"Sin", 7},
      {"Cos", 7},
      {"Tan", 7},
      {"Asin", 7},
      {"Acos", 7},
      {"Atan", 7},
      {"Sinh", 9},
      {"Cosh", 9},
      {"Asinh", 9},
      {"Acosh", 9},
      {"Atanh", 9},
      {"Exp", 6},
      {"Flatten", 1},
      {"Gather", 1},
      {"Gemm", 6},
      {"GlobalAveragePool", 1},
      {"Greater", 7},
      {"GreaterOrEqual", 12},
      {"HardSigmoid", 6},
      {"HardSwish", 14},
      {"Identity", 1},
      {"LeakyRelu", 6},
      {"Less", 7},
      {"LessOrEqual", 12},
      {"Log", 6},
      {"LogSoftmax", 1},
      {"MatMul", 1},
      {"Ceil", 6},
      {"Floor", 6},
      {"Round", 11},
      {"IsNaN", 9},
      {"IsInf", 10},
      {"Mod", 10},
      {"Hardmax", 13},
      {"Max", 6},
      {"MaxPool", 1},
      {"Mean", 6},
      {"Min", 6},
      {"Mul", 6},
      {"NegativeLogLikelihoodLoss", 12},
      {"Neg", 6},
      {"Not", 1},
      {"Or", 7},
      {"Pow", 1},
      {"PRelu", 6},
      {"Reciprocal", 6},
      {"ReduceL1", 1},
      {"ReduceL2", 1},
      {"ReduceLogSum", 1},
      {"ReduceLogSumExp", 1},
      {"ReduceMax", 1},
      {"ReduceMean", 1},
      {"ReduceMin", 1},
      {"ReduceProd", 1},
      {"ArgMax", 11},
      {"ArgMin", 11},
      {"Range", 11},
      {"Resize", 11},
      {"Upsample", 9},
      {"ReduceSum", 1},
      {"ReduceSumSquare", 1},
      {"Relu", 6},
      {"Reshape", 5},
      {"Selu", 6},
      {"Shape", 1},
      {"Sigmoid", 6},
      {"Sign", 9},
      {"Softmax", 1},
      {"SoftmaxCrossEntropyLoss", 12},
      {"Softplus", 1},
      {"Sqrt", 6},
      {"Squeeze", 1},
      {"Sub", 6},
      {"Sum", 6},
      {"Tanh", 6},
      {"ThresholdedRelu", 10},
      {"Transpose", 1},
      {"Unsqueeze", 1},
      {"Where", 9},
      {"Xor", 7}};
  return mappedSince;
}

LogicalResult Importer::checkOpset(const onnx::ModelProto &model) {
  bool found = false;
  for (const auto &imp : model.opset_import()) {
    if (!imp.domain().empty() && imp.domain() != "ai.onnx")
      continue;
    found = true;
    opset = imp.version();
  }
  if (!found)
    return modelError() << "the model imports no ai.onnx opset; supported "
                           "opsets are "
                        << kMinOpset << " to " << kMaxOpset;
  const llvm::StringMap<int64_t> &mappedSince = mappedSinceTable();
  if (opset > kMaxOpset || opset < 1)
    return modelError() << "ONNX opset " << opset
                        << " is not supported; supported opsets are "
                        << kMinOpset << " to " << kMaxOpset
                        << " (export the model with an opset in that range)";
  if (opset >= kMinOpset)
    return success();
  for (const auto &n : model.graph().node()) {
    bool defaultDomain = n.domain().empty() || n.domain() == "ai.onnx";
    if (!defaultDomain || !handlers().count(n.op_type()))
      continue; // reported as an unsupported op when imported
    auto it = mappedSince.find(n.op_type());
    if (it == mappedSince.end() || it->second > opset) {
      std::string name = n.name().empty() ? n.op_type() : n.name();
      return modelError() << "op '" << n.op_type() << "' (node '" << name
                          << "') at ONNX opset " << opset
                          << " is not supported: its definition at that "
                             "opset is not mapped"
                          << (it == mappedSince.end()
                                  ? std::string()
                                  : " (supported from opset " +
                                        std::to_string(it->second) + ")")
                          << "; supported opsets are " << kMinOpset << " to "
                          << kMaxOpset
                          << " (export the model with an opset in that range)";
    }
  }
  return success();
}

FailureOr<DenseElementsAttr> Importer::convertTensor(const onnx::TensorProto &t,
                                                     Location loc,
                                                     StringRef what) {
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL)
    return emitError(loc) << what << " '" << t.name()
                          << "' stores its data externally, which is not "
                             "supported; save the model with its data inline";
  SmallVector<int64_t> dims;
  for (int64_t d : t.dims()) {
    if (d < 0)
      return emitError(loc)
             << what << " '" << t.name() << "' has a negative dimension " << d;
    dims.push_back(d);
  }
  // Guard the element count before allocating: a damaged file can claim
  // any dims.
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d && n > std::numeric_limits<int64_t>::max() / 8 / d)
      return emitError(loc) << what << " '" << t.name() << "' of shape "
                            << shapeStr(dims) << " is too large";
    n *= d;
  }
  auto sizeError = [&](int64_t got) {
    return emitError(loc) << what << " '" << t.name() << "' of shape "
                          << shapeStr(dims) << " has " << got
                          << " values, expected " << n;
  };
  switch (t.data_type()) {
  case onnx::TensorProto_DataType_FLOAT: {
    if (t.has_raw_data() ? (int64_t)t.raw_data().size() != n * 4
                         : t.float_data_size() != n)
      return sizeError(t.has_raw_data() ? t.raw_data().size() / 4
                                        : t.float_data_size());
    SmallVector<float> data(n);
    if (t.has_raw_data()) {
      if (n)
        std::memcpy(data.data(), t.raw_data().data(), n * 4);
    } else {
      llvm::copy(t.float_data(), data.begin());
    }
    auto type = RankedTensorType::get(dims, builder.getF32Type());
    return DenseElementsAttr::get(type, ArrayRef<float>(data));
  }
  case onnx::TensorProto_DataType_DOUBLE: {
    if (t.has_raw_data() ? (int64_t)t.raw_data().size() != n * 8
                         : t.double_data_size() != n)
      return sizeError(t.has_raw_data() ? t.raw_data().size() / 8
                                        : t.double_data_size());
    SmallVector<double> data(n);
    if (t.has_raw_data()) {
      if (n)
        std::memcpy(data.data(), t.raw_data().data(), n * 8);
    } else {
      llvm::copy(t.double_data(), data.begin());
    }
    auto type = RankedTensorType::get(dims, builder.getF64Type());
    return DenseElementsAttr::get(type, ArrayRef<double>(data));
  }
  case onnx::TensorProto_DataType_INT64:
  case onnx::TensorProto_DataType_INT32: {
    bool is64 = t.data_type() == onnx::TensorProto_DataType_INT64;
    int64_t width = is64 ? 8 : 4;
    int64_t got = t.has_raw_data() ? (int64_t)t.raw_data().size() / width
                  : is64           ? t.int64_data_size()
                                   : t.int32_data_size();
    if (got != n || (t.has_raw_data() && t.raw_data().size() % width))
      return sizeError(got);
    SmallVector<int64_t> data(n);
    if (t.has_raw_data()) {
      for (int64_t i = 0; i < n; ++i) {
        if (is64) {
          std::memcpy(&data[i], t.raw_data().data() + i * 8, 8);
        } else {
          int32_t v;
          std::memcpy(&v, t.raw_data().data() + i * 4, 4);
          data[i] = v;
        }
      }
    } else if (is64) {
      llvm::copy(t.int64_data(), data.begin());
    } else {
      llvm::copy(t.int32_data(), data.begin());
    }
    if (is64)
      return DenseElementsAttr::get(
          RankedTensorType::get(dims, builder.getI64Type()),
          ArrayRef<int64_t>(data));
    SmallVector<int32_t> narrow(data.begin(), data.end());
    return DenseElementsAttr::get(
        RankedTensorType::get(dims, builder.getI32Type()),
        ArrayRef<int32_t>(narrow));
  }
  case onnx::TensorProto_DataType_BOOL: {
    // Flags such as Dropout's training_mode.
    int64_t got =
        t.has_raw_data() ? (int64_t)t.raw_data().size() : t.int32_data_size();
    if (got != n)
      return sizeError(got);
    SmallVector<bool> data(n);
    for (int64_t i = 0; i < n; ++i)
      data[i] = t.has_raw_data() ? t.raw_data()[i] != 0 : t.int32_data(i) != 0;
    auto type = RankedTensorType::get(dims, builder.getI1Type());
    return DenseElementsAttr::get(type, ArrayRef<bool>(data));
  }
  default:
    return emitError(loc) << what << " '" << t.name() << "' has element type "
                          << onnxTypeName(t.data_type())
                          << ", which is not supported; supported: "
                          << kSupportedTypes;
  }
}

LogicalResult Importer::importInitializers(const onnx::GraphProto &graph) {
  for (const auto &t : graph.initializer()) {
    Location loc = namedLoc(t.name());
    if (t.name().empty())
      return emitError(loc) << "an initializer has no name";
    if (slots.count(t.name()))
      return emitError(loc)
             << "initializer '" << t.name() << "' is defined twice";
    FailureOr<DenseElementsAttr> c = convertTensor(t, loc, "initializer");
    if (failed(c))
      return failure();
    Slot s;
    s.constant = *c;
    s.loc = loc;
    if (t.data_type() == onnx::TensorProto_DataType_FLOAT)
      s.variable = t.name();
    slots[t.name()] = s;
  }
  return success();
}

LogicalResult Importer::importInputs(const onnx::GraphProto &graph,
                                     SmallVectorImpl<Type> &types,
                                     SmallVectorImpl<std::string> &names) {
  for (const auto &in : graph.input()) {
    // Older exporters list initializers as inputs too (as defaults).
    if (slots.count(in.name()))
      continue;
    Location loc = namedLoc(in.name());
    if (!in.type().has_tensor_type())
      return emitError(loc) << "graph input '" << in.name()
                            << "' is not a tensor; only tensor inputs are "
                               "supported";
    const auto &tt = in.type().tensor_type();
    Type elemType = elementTypeFor(builder, tt.elem_type());
    if (!elemType)
      return emitError(loc)
             << "graph input '" << in.name() << "' has element type "
             << onnxTypeName(tt.elem_type())
             << ", which is not supported; supported: " << kSupportedTypes;
    if (!tt.has_shape())
      return emitError(loc) << "graph input '" << in.name()
                            << "' has no shape; static shapes are required";
    SmallVector<int64_t> shape;
    for (int i = 0; i < tt.shape().dim_size(); ++i) {
      const auto &d = tt.shape().dim(i);
      bool known = d.has_dim_value() && d.dim_value() >= 0;
      if (i == 0 && options.batchSize > 0) {
        if (known && d.dim_value() != options.batchSize)
          exportedBatch = d.dim_value();
        shape.push_back(options.batchSize);
        continue;
      }
      if (known) {
        shape.push_back(d.dim_value());
        continue;
      }
      std::string sym = d.has_dim_param() ? "'" + d.dim_param() + "'" : "?";
      if (i == 0)
        return emitError(loc) << "graph input '" << in.name()
                              << "' has a symbolic batch dimension " << sym
                              << "; pass a batch size (--batch-size N)";
      return emitError(loc)
             << "graph input '" << in.name() << "' has a symbolic dimension "
             << sym << " at axis " << i
             << "; only dim 0 (the batch) may be symbolic";
    }
    if (boundedNumElements(shape) < 0)
      return emitError(loc) << "graph input '" << in.name() << "' of shape "
                            << shapeStr(shape)
                            << " is too large (at most 2^40 elements)";
    types.push_back(RankedTensorType::get(shape, elemType));
    names.push_back(in.name());
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Attributes, inputs and outputs
//===----------------------------------------------------------------------===//

const onnx::AttributeProto *Importer::findAttr(StringRef name) {
  for (const auto &a : node->attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t Importer::attrInt(StringRef name, int64_t def) {
  const onnx::AttributeProto *a = findAttr(name);
  if (!a)
    return def;
  if (a->type() != onnx::AttributeProto_AttributeType_INT) {
    nodeError() << "attribute '" << name << "' must be an int";
    attrFailed = true;
    return def;
  }
  return a->i();
}

float Importer::attrFloat(StringRef name, float def) {
  const onnx::AttributeProto *a = findAttr(name);
  if (!a)
    return def;
  if (a->type() != onnx::AttributeProto_AttributeType_FLOAT) {
    nodeError() << "attribute '" << name << "' must be a float";
    attrFailed = true;
    return def;
  }
  return a->f();
}

SmallVector<int64_t> Importer::attrInts(StringRef name, ArrayRef<int64_t> def) {
  const onnx::AttributeProto *a = findAttr(name);
  if (!a)
    return SmallVector<int64_t>(def);
  if (a->type() != onnx::AttributeProto_AttributeType_INTS) {
    nodeError() << "attribute '" << name << "' must be a list of ints";
    attrFailed = true;
    return SmallVector<int64_t>(def);
  }
  return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

std::string Importer::attrString(StringRef name, StringRef def) {
  const onnx::AttributeProto *a = findAttr(name);
  if (!a)
    return def.str();
  if (a->type() != onnx::AttributeProto_AttributeType_STRING) {
    nodeError() << "attribute '" << name << "' must be a string";
    attrFailed = true;
    return def.str();
  }
  return a->s();
}

Slot *Importer::input(int i) {
  if (!hasInput(i)) {
    nodeError() << "required input " << i << " is missing";
    return nullptr;
  }
  auto it = slots.find(node->input(i));
  if (it == slots.end()) {
    nodeError() << "input '" << node->input(i)
                << "' is not a graph input, an initializer or an output of "
                   "an earlier node";
    return nullptr;
  }
  return &it->second;
}

Value Importer::materialize(Slot &s) {
  if (s.value)
    return s.value;
  if (!s.variable.empty()) {
    Value &read = variableReads[s.variable];
    if (!read) {
      auto type = cast<RankedTensorType>(s.constant.getType());
      OpBuilder::InsertPoint ip = builder.saveInsertionPoint();
      builder.setInsertionPoint(func);
      gr::VariableOp::create(builder, s.loc, s.variable, type, s.constant,
                             /*trainable=*/false);
      builder.restoreInsertionPoint(ip);
      read = gr::ReadVariableOp::create(builder, s.loc, type, s.variable);
    }
    s.value = read;
    return read;
  }
  s.value = gr::ConstantOp::create(builder, s.loc, s.constant);
  return s.value;
}

Value Importer::operand(int i, bool requireF32) {
  Slot *s = input(i);
  if (!s)
    return {};
  if (requireF32 && !s->type().getElementType().isF32()) {
    nodeError() << "input " << i << " ('" << node->input(i)
                << "') has element type " << s->type().getElementType()
                << ", which is not supported here; supported: f32";
    return {};
  }
  return materialize(*s);
}

FailureOr<SmallVector<int64_t>> Importer::constInts(int i, StringRef what) {
  Slot *s = input(i);
  if (!s)
    return failure();
  Type et = s->type().getElementType();
  if (!s->isFoldable() || !et.isInteger() || et.isInteger(1))
    return nodeError() << what << " (input '" << node->input(i)
                       << "') must be a constant int64 tensor (an "
                          "initializer, a Constant or a foldable shape "
                          "computation)";
  return intValues(s->constant);
}

LogicalResult Importer::defineSlot(int out, const Slot &s) {
  // Every result type passes here: keep element counts (and the arithmetic
  // of later nodes on them) bounded.
  if (boundedNumElements(s.type().getShape()) < 0)
    return nodeError() << "result " << out << " of shape "
                       << shapeStr(s.type().getShape())
                       << " is too large (at most 2^40 elements)";
  if (out >= node->output_size() || node->output(out).empty())
    return success();
  const std::string &name = node->output(out);
  if (slots.count(name))
    return nodeError() << "output '" << name << "' is already defined";
  slots[name] = s;
  return success();
}

LogicalResult Importer::define(int out, Value v) {
  Slot s;
  s.value = v;
  s.loc = nodeLoc;
  return defineSlot(out, s);
}

LogicalResult Importer::defineConstant(int out, DenseElementsAttr c) {
  Slot s;
  s.constant = c;
  s.loc = nodeLoc;
  return defineSlot(out, s);
}

LogicalResult Importer::requireOnlyLeadingOutputs(int first) {
  for (int i = first; i < node->output_size(); ++i) {
    const std::string &name = node->output(i);
    if (!name.empty() && consumed.contains(name))
      return nodeError() << "output " << i << " ('" << name
                         << "') is used, which is not supported; only "
                         << (first == 1 ? "output 0 is"
                                        : "the first outputs are")
                         << " supported";
  }
  return success();
}

LogicalResult Importer::reshapeTo(ArrayRef<int64_t> shape) {
  Slot *s = input(0);
  if (!s)
    return failure();
  RankedTensorType in = s->type();
  if (product(shape) != in.getNumElements())
    return nodeError() << "cannot reshape " << shapeStr(in.getShape()) << " ("
                       << in.getNumElements() << " elements) to "
                       << shapeStr(shape) << " (" << product(shape)
                       << " elements)";
  auto type = RankedTensorType::get(shape, in.getElementType());
  if (s->isFoldable())
    return defineConstant(0, s->constant.reshape(type));
  Value x = materialize(*s);
  return define(0, gr::ReshapeOp::create(builder, nodeLoc, type, x));
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

template <typename OpTy> LogicalResult Importer::unary() {
  Value x = floatOperand(0);
  if (!x)
    return failure();
  return define(0, OpTy::create(builder, nodeLoc, x.getType(), x));
}

Value Importer::floatOperand(int i) {
  Slot *s = input(i);
  if (!s)
    return {};
  if (!isa<FloatType>(s->type().getElementType())) {
    nodeError() << "input " << i << " ('" << node->input(i)
                << "') has element type " << s->type().getElementType()
                << ", which is not supported here; supported: float (f32), "
                   "double (f64)";
    return {};
  }
  return materialize(*s);
}

Value Importer::splatOf(RankedTensorType t, double v) {
  Type et = t.getElementType();
  Attribute a;
  if (isa<FloatType>(et))
    a = DenseElementsAttr::get(t, builder.getFloatAttr(et, v));
  else if (et.isInteger(1))
    a = DenseElementsAttr::get(t, builder.getBoolAttr(v != 0));
  else
    a = DenseElementsAttr::get(t, builder.getIntegerAttr(et, (int64_t)v));
  return gr::ConstantOp::create(builder, nodeLoc, cast<ElementsAttr>(a));
}

Value Importer::splatLike(Value like, double v) {
  return splatOf(cast<RankedTensorType>(like.getType()), v);
}

/// NumPy broadcast of two shapes; fails when a pair of dims is incompatible.
static FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                       ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return failure();
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// Folds Add/Sub/Mul/Div of two int64 constants (shape arithmetic); one side
/// may be a single element.
LogicalResult Importer::foldIntBinary(Slot &l, Slot &r) {
  auto lt = l.type(), rt = r.type();
  auto shape = broadcastShapes(lt.getShape(), rt.getShape());
  if (failed(shape) || (lt.getNumElements() != 1 && rt.getNumElements() != 1 &&
                        lt.getShape() != rt.getShape()))
    return nodeError() << "cannot fold int64 operands of shapes "
                       << shapeStr(lt.getShape()) << " and "
                       << shapeStr(rt.getShape())
                       << "; equal shapes or a single-element operand are "
                          "supported";
  SmallVector<int64_t> a = intValues(l.constant);
  SmallVector<int64_t> b = intValues(r.constant);
  int64_t n = product(*shape);
  SmallVector<int64_t> out(n);
  StringRef op = node->op_type();
  for (int64_t i = 0; i < n; ++i) {
    int64_t x = a[a.size() == 1 ? 0 : i], y = b[b.size() == 1 ? 0 : i];
    // Two's complement wrap-around, as int64 arithmetic runs on every
    // target (and without undefined behavior here).
    uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    if (op == "Add")
      out[i] = static_cast<int64_t>(ux + uy);
    else if (op == "Sub")
      out[i] = static_cast<int64_t>(ux - uy);
    else if (op == "Mul")
      out[i] = static_cast<int64_t>(ux * uy);
    else {
      if (y == 0)
        return nodeError() << "integer division by zero";
      out[i] = y == -1 ? static_cast<int64_t>(0 - ux) : x / y;
    }
  }
  auto type = RankedTensorType::get(*shape, lt.getElementType());
  return defineConstant(0, intConstant(type, out));
}

template <typename OpTy> LogicalResult Importer::binary() {
  Slot *l = input(0), *r = l ? input(1) : nullptr;
  if (!l || !r)
    return failure();
  Slot legacyR;
  if (opset < 7) {
    // Before opset 7, B broadcasts only with broadcast=1, matching A's dims
    // from `axis` (default: A's trailing dims); B gets trailing 1s so that
    // NumPy broadcasting gives the same result.
    int64_t bcast = attrInt("broadcast", 0);
    const onnx::AttributeProto *axisAttr = findAttr("axis");
    int64_t axis = attrInt("axis", 0);
    if (attrFailed)
      return failure();
    ArrayRef<int64_t> ls = l->type().getShape(), rs = r->type().getShape();
    int64_t lr = ls.size(), rr = rs.size();
    if (!bcast && ls != rs)
      return nodeError() << "shapes " << shapeStr(ls) << " and "
                         << shapeStr(rs)
                         << " differ without broadcast=1 (opset " << opset
                         << ")";
    if (bcast && axisAttr) {
      if (axis < 0)
        axis += lr;
      if (axis < 0 || axis + rr > lr)
        return nodeError() << "axis " << attrInt("axis", 0)
                           << " does not place B of shape " << shapeStr(rs)
                           << " inside A of shape " << shapeStr(ls);
      if (axis + rr < lr) {
        SmallVector<int64_t> shape(rs);
        shape.append(lr - axis - rr, 1);
        auto type = RankedTensorType::get(shape, r->type().getElementType());
        legacyR.loc = nodeLoc;
        if (r->isFoldable())
          legacyR.constant = r->constant.reshape(type);
        else
          legacyR.value = gr::ReshapeOp::create(builder, nodeLoc, type,
                                                materialize(*r));
        r = &legacyR;
      }
    }
  }
  Type le = l->type().getElementType(), re = r->type().getElementType();
  bool isPow = std::is_same<OpTy, gr::PowOp>::value;
  StringRef opType = node->op_type();
  bool arith =
      opType == "Add" || opType == "Sub" || opType == "Mul" || opType == "Div";
  if (arith && le == re && le.isInteger() && !le.isInteger(1) &&
      l->isFoldable() && r->isFoldable())
    return foldIntBinary(*l, *r);
  auto numeric = [](Type t) {
    return t.isF32() || t.isF64() || t.isInteger(32) || t.isInteger(64);
  };
  // Pow's exponent may have another numeric type (ONNX T1/T2); it is cast to
  // the base's type.
  if (!numeric(le) || !numeric(re) || (le != re && !isPow))
    return nodeError() << "operands have element types " << le << " and " << re
                       << "; supported: two operands of one type among "
                          "float (f32), double (f64), int32, int64";
  auto shape = broadcastShapes(l->type().getShape(), r->type().getShape());
  if (failed(shape))
    return nodeError() << "shapes " << shapeStr(l->type().getShape()) << " and "
                       << shapeStr(r->type().getShape()) << " do not broadcast";
  Value lv = materialize(*l), rv = materialize(*r);
  if (le != re)
    rv = gr::CastOp::create(builder, nodeLoc,
                            cast<RankedTensorType>(rv.getType()).clone(le), rv);
  auto type = RankedTensorType::get(*shape, le);
  return define(0, OpTy::create(builder, nodeLoc, type, lv, rv));
}

template <typename OpTy> LogicalResult Importer::variadic() {
  if (node->input_size() < 1)
    return nodeError() << "needs at least one input";
  SmallVector<Value> vals;
  Type et;
  for (int i = 0; i < node->input_size(); ++i) {
    Value v = operand(i, /*requireF32=*/false);
    if (!v)
      return failure();
    Type t = cast<RankedTensorType>(v.getType()).getElementType();
    if (!(t.isF32() || t.isF64() || t.isInteger(32) || t.isInteger(64)) ||
        (et && t != et))
      return nodeError() << "input " << i << " has element type " << t
                         << "; supported: inputs of one type among float "
                            "(f32), double (f64), int32, int64";
    et = t;
    vals.push_back(v);
  }
  Value acc = vals[0];
  if (vals.size() == 1)
    return define(0, gr::IdentityOp::create(builder, nodeLoc, acc));
  bool isMean = node->op_type() == "Mean";
  if (isMean && !isa<FloatType>(et))
    return nodeError() << "inputs have element type " << et
                       << "; supported: float (f32), double (f64)";
  for (size_t i = 1; i < vals.size(); ++i) {
    auto at = cast<RankedTensorType>(acc.getType()),
         vt = cast<RankedTensorType>(vals[i].getType());
    auto shape = broadcastShapes(at.getShape(), vt.getShape());
    if (failed(shape))
      return nodeError() << "shapes " << shapeStr(at.getShape()) << " and "
                         << shapeStr(vt.getShape()) << " do not broadcast";
    acc = OpTy::create(builder, nodeLoc, RankedTensorType::get(*shape, et), acc,
                       vals[i]);
  }
  if (isMean)
    acc = gr::DivOp::create(builder, nodeLoc, acc.getType(), acc,
                            splatLike(acc, (double)vals.size()));
  return define(0, acc);
}

/// Folds an elementwise op over integer/bool constants (shape computations
/// such as the Equal/Where pairs PyTorch emits for expand): |fn| maps the
/// inputs' int64 values at one output position to the result. Returns a null
/// attribute when some input is not a foldable integer constant.
static DenseElementsAttr
foldIntElementwise(ArrayRef<Slot *> in, Type resultElem,
                   function_ref<int64_t(ArrayRef<int64_t>)> fn) {
  SmallVector<int64_t> shape;
  for (Slot *s : in) {
    if (!s || !s->isFoldable() || !s->type().getElementType().isInteger())
      return {};
    auto b = broadcastShapes(shape, s->type().getShape());
    if (failed(b))
      return {};
    shape = *b;
  }
  int64_t n = product(shape), rank = shape.size();
  if (n > 4096)
    return {};
  SmallVector<SmallVector<int64_t>> vals;
  for (Slot *s : in)
    vals.push_back(intValues(s->constant));
  SmallVector<int64_t> out(n), idx(rank), args(in.size());
  for (int64_t f = 0; f < n; ++f) {
    int64_t rem = f;
    for (int64_t d = rank - 1; d >= 0; --d) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
    }
    for (size_t k = 0; k < in.size(); ++k) {
      ArrayRef<int64_t> ks = in[k]->type().getShape();
      int64_t off = rank - ks.size(), flat = 0;
      for (size_t d = 0; d < ks.size(); ++d)
        flat = flat * ks[d] + (ks[d] == 1 ? 0 : idx[off + d]);
      args[k] = vals[k][flat];
    }
    out[f] = fn(args);
  }
  return intConstant(RankedTensorType::get(shape, resultElem), out);
}

LogicalResult Importer::compare() {
  StringRef opType = node->op_type();
  StringRef pred = llvm::StringSwitch<StringRef>(opType)
                       .Case("Equal", "eq")
                       .Case("Less", "lt")
                       .Case("LessOrEqual", "le")
                       .Case("Greater", "gt")
                       .Default("ge");
  if (hasInput(0) && hasInput(1)) {
    SmallVector<Slot *> in = {input(0), input(1)};
    if (in[0] && in[1] &&
        in[0]->type().getElementType() == in[1]->type().getElementType() &&
        (pred == "eq" || !in[0]->type().getElementType().isInteger(1))) {
      DenseElementsAttr c = foldIntElementwise(
          in, builder.getI1Type(), [&](ArrayRef<int64_t> a) -> int64_t {
            if (pred == "eq")
              return a[0] == a[1];
            if (pred == "lt")
              return a[0] < a[1];
            if (pred == "le")
              return a[0] <= a[1];
            if (pred == "gt")
              return a[0] > a[1];
            return a[0] >= a[1];
          });
      if (c)
        return defineConstant(0, c);
    }
  }
  Value l = operand(0, false), r = l ? operand(1, false) : Value();
  if (!r)
    return failure();
  auto lt = cast<RankedTensorType>(l.getType()),
       rt = cast<RankedTensorType>(r.getType());
  Type et = lt.getElementType();
  bool ok = et == rt.getElementType() &&
            (et.isF32() || et.isF64() || et.isInteger(32) || et.isInteger(64) ||
             (et.isInteger(1) && pred == "eq"));
  if (!ok)
    return nodeError() << "operands have element types " << et << " and "
                       << rt.getElementType()
                       << "; supported: two operands of one type among float "
                          "(f32), double (f64), int32, int64 (and bool for "
                          "Equal)";
  auto shape = broadcastShapes(lt.getShape(), rt.getShape());
  if (failed(shape))
    return nodeError() << "shapes " << shapeStr(lt.getShape()) << " and "
                       << shapeStr(rt.getShape()) << " do not broadcast";
  auto type = RankedTensorType::get(*shape, builder.getI1Type());
  return define(0, gr::CompareOp::create(builder, nodeLoc, type, pred, l, r));
}

LogicalResult Importer::logical() {
  StringRef opType = node->op_type();
  int n = opType == "Not" ? 1 : 2;
  SmallVector<Value> v;
  for (int i = 0; i < n; ++i) {
    Value x = operand(i, false);
    if (!x)
      return failure();
    if (!cast<RankedTensorType>(x.getType()).getElementType().isInteger(1))
      return nodeError() << "input " << i << " has element type "
                         << cast<RankedTensorType>(x.getType()).getElementType()
                         << "; supported: bool";
    v.push_back(x);
  }
  if (n == 1) {
    // not x == (x == false)
    Value f = splatLike(v[0], 0);
    return define(0, gr::CompareOp::create(builder, nodeLoc, v[0].getType(),
                                           "eq", v[0], f));
  }
  auto lt = cast<RankedTensorType>(v[0].getType()),
       rt = cast<RankedTensorType>(v[1].getType());
  auto shape = broadcastShapes(lt.getShape(), rt.getShape());
  if (failed(shape))
    return nodeError() << "shapes " << shapeStr(lt.getShape()) << " and "
                       << shapeStr(rt.getShape()) << " do not broadcast";
  auto type = RankedTensorType::get(*shape, builder.getI1Type());
  if (opType == "Xor")
    return define(
        0, gr::CompareOp::create(builder, nodeLoc, type, "ne", v[0], v[1]));
  // and: a ? b : false; or: a ? true : b (select broadcasts its operands).
  Value c = splatOf(type, opType == "Or" ? 1 : 0);
  if (opType == "And")
    return define(0,
                  gr::SelectOp::create(builder, nodeLoc, type, v[0], v[1], c));
  return define(0, gr::SelectOp::create(builder, nodeLoc, type, v[0], c, v[1]));
}

LogicalResult Importer::where() {
  if (hasInput(0) && hasInput(1) && hasInput(2)) {
    SmallVector<Slot *> in = {input(0), input(1), input(2)};
    if (in[0] && in[1] && in[2] &&
        in[0]->type().getElementType().isInteger(1) &&
        in[1]->type().getElementType() == in[2]->type().getElementType()) {
      DenseElementsAttr c = foldIntElementwise(
          in, in[1]->type().getElementType(),
          [](ArrayRef<int64_t> a) { return a[0] ? a[1] : a[2]; });
      if (c)
        return defineConstant(0, c);
    }
  }
  Value c = operand(0, false), a = c ? operand(1, false) : Value(),
        bv = a ? operand(2, false) : Value();
  if (!bv)
    return failure();
  auto ct = cast<RankedTensorType>(c.getType()),
       at = cast<RankedTensorType>(a.getType()),
       bt = cast<RankedTensorType>(bv.getType());
  if (!ct.getElementType().isInteger(1))
    return nodeError() << "condition has element type " << ct.getElementType()
                       << "; supported: bool";
  if (at.getElementType() != bt.getElementType())
    return nodeError() << "X and Y have element types " << at.getElementType()
                       << " and " << bt.getElementType()
                       << "; they must be equal";
  auto s1 = broadcastShapes(ct.getShape(), at.getShape());
  auto s2 = succeeded(s1) ? broadcastShapes(*s1, bt.getShape()) : s1;
  if (failed(s2))
    return nodeError() << "shapes " << shapeStr(ct.getShape()) << ", "
                       << shapeStr(at.getShape()) << " and "
                       << shapeStr(bt.getShape()) << " do not broadcast";
  auto type = RankedTensorType::get(*s2, at.getElementType());
  return define(0, gr::SelectOp::create(builder, nodeLoc, type, c, a, bv));
}

LogicalResult Importer::reciprocal() {
  Value x = floatOperand(0);
  if (!x)
    return failure();
  return define(0, gr::DivOp::create(builder, nodeLoc, x.getType(),
                                     splatLike(x, 1.0), x));
}

LogicalResult Importer::absOp() {
  Value x = floatOperand(0);
  if (!x)
    return failure();
  return define(0, gr::AbsOp::create(builder, nodeLoc, x.getType(), x));
}

LogicalResult Importer::activation() {
  StringRef opType = node->op_type();
  float alpha = 0, beta = 0, gamma = 0;
  if (opType == "Elu") {
    alpha = attrFloat("alpha", 1.0f);
  } else if (opType == "LeakyRelu") {
    alpha = attrFloat("alpha", 0.01f);
  } else if (opType == "HardSigmoid") {
    alpha = attrFloat("alpha", 0.2f);
    beta = attrFloat("beta", 0.5f);
  } else if (opType == "ThresholdedRelu") {
    alpha = attrFloat("alpha", 1.0f);
  } else if (opType == "Shrink") {
    alpha = attrFloat("lambd", 0.5f);
    beta = attrFloat("bias", 0.0f);
  } else if (opType == "Selu") {
    alpha = attrFloat("alpha", 1.67326319217681884765625f);
    gamma = attrFloat("gamma", 1.05070102214813232421875f);
  }
  if (attrFailed)
    return failure();
  Value x = floatOperand(0);
  if (!x)
    return failure();
  auto t = cast<RankedTensorType>(x.getType());
  auto mask = t.clone(builder.getI1Type());
  auto c = [&](double v) { return splatLike(x, v); };
  auto mul = [&](Value a, Value b) -> Value {
    return gr::MulOp::create(builder, nodeLoc, t, a, b);
  };
  auto add = [&](Value a, Value b) -> Value {
    return gr::AddOp::create(builder, nodeLoc, t, a, b);
  };
  auto sub = [&](Value a, Value b) -> Value {
    return gr::SubOp::create(builder, nodeLoc, t, a, b);
  };
  auto cmp = [&](StringRef p, Value a, Value b) -> Value {
    return gr::CompareOp::create(builder, nodeLoc, mask, p, a, b);
  };
  auto sel = [&](Value m, Value a, Value b) -> Value {
    return gr::SelectOp::create(builder, nodeLoc, t, m, a, b);
  };
  // alpha * (exp(min(x, 0)) - 1): the min keeps exp finite (and its
  // gradient zero) where the other branch is taken.
  auto expm1Neg = [&](double a) {
    Value m = gr::MinOp::create(builder, nodeLoc, t, x, c(0.0));
    Value e = gr::ExpOp::create(builder, nodeLoc, t, m);
    return mul(sub(e, c(1.0)), c(a));
  };
  auto hardSigmoid = [&](double a, double b) -> Value {
    Value lin = add(mul(x, c(a)), c(b));
    return gr::ClipOp::create(builder, nodeLoc, t, lin,
                              builder.getF32FloatAttr(0.0f),
                              builder.getF32FloatAttr(1.0f));
  };
  Value y;
  if (opType == "Elu") {
    // x > 0 ? x : alpha * (exp(x) - 1)   (torch.nn.functional.elu)
    y = sel(cmp("gt", x, c(0.0)), x, expm1Neg(alpha));
  } else if (opType == "Selu") {
    y = mul(sel(cmp("gt", x, c(0.0)), x, expm1Neg(alpha)), c(gamma));
  } else if (opType == "LeakyRelu") {
    y = sel(cmp("gt", x, c(0.0)), x, mul(x, c(alpha)));
  } else if (opType == "Softplus") {
    // log(1 + exp(x)) = max(x, 0) + log(1 + exp(-|x|)), with both pieces
    // written as selects so that the gradient at 0 is the exact 1/2.
    Value pos = cmp("gt", x, c(0.0));
    Value negAbs = sel(pos, gr::NegOp::create(builder, nodeLoc, t, x), x);
    Value e = gr::ExpOp::create(builder, nodeLoc, t, negAbs);
    Value l = gr::LogOp::create(builder, nodeLoc, t, add(e, c(1.0)));
    y = add(sel(pos, x, c(0.0)), l);
  } else if (opType == "Mish") {
    // x * tanh(softplus(x)), with the stable softplus above.
    Value pos = cmp("gt", x, c(0.0));
    Value negAbs = sel(pos, gr::NegOp::create(builder, nodeLoc, t, x), x);
    Value e = gr::ExpOp::create(builder, nodeLoc, t, negAbs);
    Value l = gr::LogOp::create(builder, nodeLoc, t, add(e, c(1.0)));
    Value sp = add(sel(pos, x, c(0.0)), l);
    y = mul(x, gr::TanhOp::create(builder, nodeLoc, t, sp));
  } else if (opType == "Softsign") {
    // x / (1 + |x|)
    Value a = gr::AbsOp::create(builder, nodeLoc, t, x);
    y = gr::DivOp::create(builder, nodeLoc, t, x, add(a, c(1.0)));
  } else if (opType == "ThresholdedRelu") {
    y = sel(cmp("gt", x, c(alpha)), x, c(0.0));
  } else if (opType == "Sign") {
    y = sel(cmp("gt", x, c(0.0)), c(1.0),
            sel(cmp("lt", x, c(0.0)), c(-1.0), c(0.0)));
  } else if (opType == "HardSigmoid") {
    y = hardSigmoid(alpha, beta);
  } else if (opType == "HardSwish") {
    y = mul(x, hardSigmoid(1.0 / 6.0, 0.5));
  } else if (opType == "Shrink") {
    // x < -lambd ? x + bias : x > lambd ? x - bias : 0
    y = sel(cmp("lt", x, c(-alpha)), add(x, c(beta)),
            sel(cmp("gt", x, c(alpha)), sub(x, c(beta)), c(0.0)));
  } else {
    return nodeError() << "internal error: no decomposition";
  }
  return define(0, y);
}

LogicalResult Importer::prelu() {
  Value x = floatOperand(0), slope = x ? floatOperand(1) : Value();
  if (!slope)
    return failure();
  auto t = cast<RankedTensorType>(x.getType()),
       st = cast<RankedTensorType>(slope.getType());
  if (opset < 7 && st.getRank() == 1 && t.getRank() >= 2 &&
      st.getDimSize(0) == t.getDimSize(1) && st.getDimSize(0) != 1) {
    // PRelu-6: a [C] slope is per channel (axis 1).
    SmallVector<int64_t> shape(t.getRank() - 1, 1);
    shape[0] = st.getDimSize(0);
    st = RankedTensorType::get(shape, st.getElementType());
    slope = gr::ReshapeOp::create(builder, nodeLoc, st, slope);
  }
  auto shape = broadcastShapes(t.getShape(), st.getShape());
  if (st.getElementType() != t.getElementType() || failed(shape) ||
      ArrayRef<int64_t>(*shape) != t.getShape())
    return nodeError() << "slope of type " << st
                       << " does not broadcast to X of type " << t;
  // x > 0 ? x : slope * x   (torch.nn.functional.prelu)
  Value zero = splatLike(x, 0.0);
  Value m = gr::CompareOp::create(builder, nodeLoc,
                                  t.clone(builder.getI1Type()), "gt", x, zero);
  Value sx = gr::MulOp::create(builder, nodeLoc, t, x, slope);
  return define(0, gr::SelectOp::create(builder, nodeLoc, t, m, x, sx));
}

LogicalResult Importer::clip() {
  Slot *xs = input(0);
  if (!xs)
    return failure();
  if (opset < 11) {
    // Clip-6: the bounds are float attributes.
    float lo = attrFloat("min", -FLT_MAX), hi = attrFloat("max", FLT_MAX);
    if (attrFailed)
      return failure();
    if (lo > hi)
      return nodeError() << "min " << lo << " is greater than max " << hi;
    Value x = floatOperand(0);
    if (!x)
      return failure();
    if (cast<RankedTensorType>(x.getType()).getElementType().isF32())
      return define(0, gr::ClipOp::create(builder, nodeLoc, x.getType(), x,
                                          builder.getF32FloatAttr(lo),
                                          builder.getF32FloatAttr(hi)));
    Value y = x;
    if (findAttr("min"))
      y = gr::MaxOp::create(builder, nodeLoc, x.getType(), y,
                            splatOf(RankedTensorType::get(
                                        {}, cast<RankedTensorType>(x.getType())
                                                .getElementType()),
                                    lo));
    if (findAttr("max"))
      y = gr::MinOp::create(builder, nodeLoc, x.getType(), y,
                            splatOf(RankedTensorType::get(
                                        {}, cast<RankedTensorType>(x.getType())
                                                .getElementType()),
                                    hi));
    return define(0, y);
  }
  Type et = xs->type().getElementType();
  bool constBounds = et.isF32();
  for (int i = 1; i <= 2; ++i) {
    if (!hasInput(i))
      continue;
    Slot *s = input(i);
    if (!s)
      return failure();
    constBounds = constBounds && s->constant &&
                  s->type().getNumElements() == 1 &&
                  s->type().getElementType().isF32();
  }
  if (!constBounds) {
    // Bounds computed at run time (or another element type):
    // min(max(x, lo), hi), as torch.clamp.
    if (!(et.isF32() || et.isF64() || et.isInteger(32) || et.isInteger(64)))
      return nodeError() << "input has element type " << et
                         << "; supported: float (f32), double (f64), int32, "
                            "int64";
    Value y = materialize(*xs);
    for (int i = 1; i <= 2; ++i) {
      if (!hasInput(i))
        continue;
      Slot *s = input(i);
      if (s->type().getNumElements() != 1 || s->type().getElementType() != et)
        return nodeError() << (i == 1 ? "min" : "max") << " (input '"
                           << node->input(i) << "') must be a scalar of the "
                           << "input's element type " << et;
      Value bound = materialize(*s);
      if (s->type().getRank() != 0)
        bound = gr::ReshapeOp::create(builder, nodeLoc,
                                      RankedTensorType::get({}, et), bound);
      if (i == 1)
        y = gr::MaxOp::create(builder, nodeLoc, y.getType(), y, bound);
      else
        y = gr::MinOp::create(builder, nodeLoc, y.getType(), y, bound);
    }
    return define(0, y);
  }
  Value x = operand(0);
  if (!x)
    return failure();
  float bounds[2] = {-FLT_MAX, FLT_MAX};
  for (int i = 1; i <= 2; ++i) {
    if (!hasInput(i))
      continue;
    Slot *s = input(i);
    if (!s)
      return failure();
    // f32 initializers are variables, but a Clip bound is read once here.
    if (!s->constant || s->type().getNumElements() != 1 ||
        !s->type().getElementType().isF32())
      return nodeError() << (i == 1 ? "min" : "max") << " (input '"
                         << node->input(i)
                         << "') must be a constant f32 scalar";
    bounds[i - 1] = *s->constant.getValues<float>().begin();
  }
  if (bounds[0] > bounds[1])
    return nodeError() << "min " << bounds[0] << " is greater than max "
                       << bounds[1];
  return define(0, gr::ClipOp::create(builder, nodeLoc, x.getType(), x,
                                      builder.getF32FloatAttr(bounds[0]),
                                      builder.getF32FloatAttr(bounds[1])));
}

//===----------------------------------------------------------------------===//
// Linear algebra and convolution
//===----------------------------------------------------------------------===//

LogicalResult Importer::gemm() {
  float alpha = attrFloat("alpha", 1.0f), beta = attrFloat("beta", 1.0f);
  int64_t transA = attrInt("transA", 0), transB = attrInt("transB", 0);
  if (attrFailed)
    return failure();
  Value a = operand(0), b = a ? operand(1) : Value();
  if (!b)
    return failure();
  Value c;
  if (hasInput(2) && !(c = operand(2)))
    return failure();
  auto at = cast<RankedTensorType>(a.getType()),
       bt = cast<RankedTensorType>(b.getType());
  if (at.getRank() != 2 || bt.getRank() != 2)
    return nodeError() << "A and B must be 2-D, got shapes "
                       << shapeStr(at.getShape()) << " and "
                       << shapeStr(bt.getShape());
  int64_t m = transA ? at.getDimSize(1) : at.getDimSize(0);
  int64_t ka = transA ? at.getDimSize(0) : at.getDimSize(1);
  int64_t kb = transB ? bt.getDimSize(1) : bt.getDimSize(0);
  int64_t n = transB ? bt.getDimSize(0) : bt.getDimSize(1);
  if (ka != kb)
    return nodeError() << "inner dimensions differ: op(A) is [" << m << ", "
                       << ka << "], op(B) is [" << kb << ", " << n << "]";
  if (c) {
    auto ct = cast<RankedTensorType>(c.getType());
    auto bc = broadcastShapes(ct.getShape(), {m, n});
    if (failed(bc) || ArrayRef<int64_t>(*bc) != ArrayRef<int64_t>{m, n})
      return nodeError() << "C of shape " << shapeStr(ct.getShape())
                         << " does not broadcast to [" << m << ", " << n << "]";
  }
  auto type = RankedTensorType::get({m, n}, builder.getF32Type());
  return define(0, gr::GemmOp::create(builder, nodeLoc, type, a, b, c,
                                      builder.getF32FloatAttr(alpha),
                                      builder.getF32FloatAttr(beta),
                                      builder.getBoolAttr(transA != 0),
                                      builder.getBoolAttr(transB != 0)));
}

LogicalResult Importer::matmul() {
  Value a = operand(0), b = a ? operand(1) : Value();
  if (!b)
    return failure();
  auto at = cast<RankedTensorType>(a.getType()),
       bt = cast<RankedTensorType>(b.getType());
  if (at.getRank() < 1 || bt.getRank() < 1)
    return nodeError() << "MatMul operands must have rank >= 1, got shapes "
                       << shapeStr(at.getShape()) << " and "
                       << shapeStr(bt.getShape());
  if (!at.getElementType().isF32() || !bt.getElementType().isF32())
    return nodeError() << "MatMul supports f32 operands, got "
                       << at.getElementType() << " and " << bt.getElementType();
  // numpy.matmul semantics (dlgraph.matmul has them too).
  ArrayRef<int64_t> as = at.getShape(), bs = bt.getShape();
  int64_t ka = as.back(), kb = bs.size() == 1 ? bs[0] : bs[bs.size() - 2];
  if (ka != kb)
    return nodeError() << "contracting dimensions differ: "
                       << shapeStr(as) << " x " << shapeStr(bs);
  ArrayRef<int64_t> aBatch = as.drop_back(std::min<size_t>(as.size(), 2));
  ArrayRef<int64_t> bBatch = bs.drop_back(std::min<size_t>(bs.size(), 2));
  auto shape = broadcastShapes(aBatch, bBatch);
  if (failed(shape))
    return nodeError() << "MatMul batch dimensions do not broadcast: "
                       << shapeStr(as) << " x " << shapeStr(bs);
  if (as.size() >= 2)
    shape->push_back(as[as.size() - 2]);
  if (bs.size() >= 2)
    shape->push_back(bs.back());
  auto type = RankedTensorType::get(*shape, builder.getF32Type());
  return define(0, gr::MatMulOp::create(builder, nodeLoc, type, a, b));
}

LogicalResult Importer::isNanOrInf() {
  Value x = floatOperand(0);
  if (!x)
    return failure();
  auto t = cast<RankedTensorType>(x.getType());
  auto maskType = RankedTensorType::get(t.getShape(), builder.getI1Type());
  auto cmp = [&](StringRef pred, Value l, Value r) -> Value {
    return gr::CompareOp::create(builder, nodeLoc, maskType, pred, l, r);
  };
  if (node->op_type() == "IsNaN")
    return define(0, cmp("ne", x, x)); // unordered: true only for NaN
  int64_t pos = attrInt("detect_positive", 1);
  int64_t neg = attrInt("detect_negative", 1);
  double inf = std::numeric_limits<double>::infinity();
  Value isPos = cmp("eq", x, splatLike(x, inf));
  Value isNeg = cmp("eq", x, splatLike(x, -inf));
  if (pos && neg)
    return define(0, gr::SelectOp::create(builder, nodeLoc, maskType, isPos,
                                          isPos, isNeg));
  if (pos)
    return define(0, isPos);
  if (neg)
    return define(0, isNeg);
  // Neither sign detected: isPos && isNeg, false everywhere.
  return define(0, gr::SelectOp::create(builder, nodeLoc, maskType, isPos,
                                        isNeg, isPos));
}

LogicalResult Importer::modOp() {
  int64_t fmod = attrInt("fmod", 0);
  Slot *l = input(0);
  if (attrFailed || !l)
    return failure();
  if (fmod != 0 && fmod != 1)
    return nodeError() << "attribute fmod = " << fmod << "; supported: 0, 1";
  if (fmod == 0 && isa<FloatType>(l->type().getElementType()))
    return nodeError() << "floating-point Mod needs fmod = 1 (ONNX)";
  return fmod ? binary<gr::FmodOp>() : binary<gr::ModOp>();
}

LogicalResult Importer::hardmax() {
  int64_t axis = attrInt("axis", -1);
  if (attrFailed)
    return failure();
  Value x = floatOperand(0);
  if (!x)
    return failure();
  auto t = cast<RankedTensorType>(x.getType());
  int64_t rank = t.getRank();
  if (rank == 0 || axis < -rank || axis >= rank)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << rank;
  if (axis < 0)
    axis += rank;
  SmallVector<int64_t> idxShape(t.getShape()), iotaShape(rank, 1);
  idxShape[axis] = 1;
  iotaShape[axis] = t.getDimSize(axis);
  auto i64 = builder.getI64Type();
  Value idx = gr::ArgMaxOp::create(
      builder, nodeLoc, RankedTensorType::get(idxShape, i64), x,
      builder.getI64IntegerAttr(axis), builder.getUnitAttr(), UnitAttr());
  if (t.getDimSize(axis) > kMaxFoldElements)
    return nodeError() << "axis " << axis << " of size " << t.getDimSize(axis)
                       << " is too large (at most 2^26)";
  SmallVector<APInt> iota;
  for (int64_t i = 0; i < t.getDimSize(axis); ++i)
    iota.push_back(APInt(64, i));
  auto iotaType = RankedTensorType::get(iotaShape, i64);
  Value positions = gr::ConstantOp::create(
      builder, nodeLoc,
      cast<ElementsAttr>(DenseElementsAttr::get(iotaType, iota)));
  auto maskType = RankedTensorType::get(t.getShape(), builder.getI1Type());
  Value hit = gr::CompareOp::create(builder, nodeLoc, maskType, "eq", idx,
                                    positions);
  return define(0, gr::CastOp::create(builder, nodeLoc, t, hit));
}

LogicalResult Importer::liftTo2D(SmallVectorImpl<int64_t> &kernel,
                                 SmallVectorImpl<int64_t> &strides,
                                 SmallVectorImpl<int64_t> &pads,
                                 SmallVectorImpl<int64_t> &dilations) {
  auto lift = [&](StringRef name, SmallVectorImpl<int64_t> &v,
                  size_t n) -> bool {
    if (!findAttr(name))
      return true;
    if (v.size() != n)
      return false;
    SmallVector<int64_t> old(v.begin(), v.end());
    v.clear();
    if (n == 1)
      v.append({name == "pads" ? 0 : 1, old[0]});
    else
      v.append({0, old[0], 0, old[1]});
    return true;
  };
  if (!lift("kernel_shape", kernel, 1) || !lift("strides", strides, 1) ||
      !lift("dilations", dilations, 1) || !lift("pads", pads, 2))
    return nodeError() << "a 1-D (rank-3 input) " << node->op_type()
                       << " needs 1 value in kernel_shape, strides and "
                          "dilations and 2 in pads";
  return success();
}

Value Importer::insertUnitH(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(t.getShape());
  shape.insert(shape.begin() + 2, 1);
  return gr::ReshapeOp::create(builder, nodeLoc, t.clone(shape), v);
}

/// Pads [begin..., end...] for ONNX auto_pad SAME_UPPER/SAME_LOWER over the
/// spatial sizes |in|: the output size is ceil(in / stride), the total padding
/// max(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - in), and an odd
/// total puts the extra element at the end (UPPER) or the beginning (LOWER).
/// |kernel|, |strides| and |dilations| have in.size() entries.
static SmallVector<int64_t> samePads(ArrayRef<int64_t> in,
                                     ArrayRef<int64_t> kernel,
                                     ArrayRef<int64_t> strides,
                                     ArrayRef<int64_t> dilations, bool lower) {
  size_t n = in.size();
  SmallVector<int64_t> pads(2 * n, 0);
  for (size_t i = 0; i < n; ++i) {
    int64_t s = std::max<int64_t>(strides[i], 1);
    int64_t out = (in[i] + s - 1) / s;
    int64_t total = std::max<int64_t>(
        0, (out - 1) * s + (kernel[i] - 1) * dilations[i] + 1 - in[i]);
    pads[i] = lower ? total - total / 2 : total / 2;
    pads[i + n] = total - pads[i];
  }
  return pads;
}

/// For Conv and ConvTranspose after a 1-D input was lifted to 2-D: checks
/// that input and weight are both rank 4 or both rank 5, and for rank 5
/// widens the 2-D defaults of the attributes the node does not set to three
/// spatial axes. Returns the number of spatial axes (2 or 3).
FailureOr<size_t> Importer::convSpatialAxes(StringRef what,
                                            RankedTensorType xt,
                                            RankedTensorType wt,
                                            SmallVectorImpl<int64_t> &strides,
                                            SmallVectorImpl<int64_t> &dilations,
                                            SmallVectorImpl<int64_t> &pads) {
  bool is3D = xt.getRank() == 5 && wt.getRank() == 5;
  if ((xt.getRank() != 4 || wt.getRank() != 4) && !is3D)
    return nodeError() << "only 1-D, 2-D and 3-D " << what
                       << " (rank-3/4/5 input and weight) is supported, got "
                          "input "
                       << shapeStr(xt.getShape()) << " and weight "
                       << shapeStr(wt.getShape());
  if (!is3D)
    return 2;
  if (!findAttr("strides"))
    strides.assign({1, 1, 1});
  if (!findAttr("dilations"))
    dilations.assign({1, 1, 1});
  if (!findAttr("pads"))
    pads.assign({0, 0, 0, 0, 0, 0});
  return 3;
}

LogicalResult Importer::readConvNode(StringRef what, ConvNode &c) {
  c.autoPad = attrString("auto_pad", "NOTSET");
  c.kernel = attrInts("kernel_shape", {});
  c.strides = attrInts("strides", {1, 1});
  c.pads = attrInts("pads", {0, 0, 0, 0});
  c.dilations = attrInts("dilations", {1, 1});
  c.group = attrInt("group", 1);
  if (attrFailed)
    return failure();
  c.x = operand(0);
  c.w = c.x ? operand(1) : Value();
  if (!c.w)
    return failure();
  if (hasInput(2) && !(c.bias = operand(2)))
    return failure();
  c.xt = cast<RankedTensorType>(c.x.getType());
  c.wt = cast<RankedTensorType>(c.w.getType());
  // A 1-D convolution is a 2-D one over an inserted H axis of size 1.
  c.is1D = c.xt.getRank() == 3 && c.wt.getRank() == 3;
  if (c.is1D) {
    if (failed(liftTo2D(c.kernel, c.strides, c.pads, c.dilations)))
      return failure();
    c.x = insertUnitH(c.x);
    c.w = insertUnitH(c.w);
    c.xt = cast<RankedTensorType>(c.x.getType());
    c.wt = cast<RankedTensorType>(c.w.getType());
  }
  FailureOr<size_t> spatial =
      convSpatialAxes(what, c.xt, c.wt, c.strides, c.dilations, c.pads);
  if (failed(spatial))
    return failure();
  c.spatial = *spatial;
  return success();
}

LogicalResult Importer::conv() {
  ConvNode cn;
  if (failed(readConvNode("convolution", cn)))
    return failure();
  std::string &autoPad = cn.autoPad;
  SmallVector<int64_t> &kernel = cn.kernel, &strides = cn.strides,
                       &pads = cn.pads, &dilations = cn.dilations;
  int64_t group = cn.group;
  Value x = cn.x, w = cn.w, bias = cn.bias;
  RankedTensorType xt = cn.xt, wt = cn.wt;
  bool is1D = cn.is1D;
  size_t sp = cn.spatial;
  if (autoPad == "VALID")
    pads.assign(2 * sp, 0);
  else if ((autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") &&
           strides.size() == sp && dilations.size() == sp)
    pads = samePads(xt.getShape().drop_front(2), wt.getShape().drop_front(2),
                    strides, dilations, autoPad == "SAME_LOWER");
  else if (autoPad != "NOTSET" && autoPad != "SAME_UPPER" &&
           autoPad != "SAME_LOWER")
    return nodeError() << "attribute auto_pad = '" << autoPad
                       << "' is not supported; supported: NOTSET (explicit "
                          "pads), VALID, SAME_UPPER, SAME_LOWER";
  if (strides.size() != sp || dilations.size() != sp || pads.size() != 2 * sp)
    return nodeError() << "expects " << sp << " strides, " << sp
                       << " dilations and " << 2 * sp << " pads, got "
                       << strides.size() << ", " << dilations.size() << " and "
                       << pads.size();
  if (!kernel.empty() &&
      ArrayRef<int64_t>(kernel) != wt.getShape().drop_front(2))
    return nodeError() << "attribute kernel_shape " << shapeStr(kernel)
                       << " does not match the weight's spatial dims "
                       << shapeStr(wt.getShape().drop_front(2));
  if (llvm::any_of(strides, [](int64_t s) { return s < 1; }) ||
      llvm::any_of(dilations, [](int64_t d) { return d < 1; }) ||
      llvm::any_of(pads, [](int64_t p) { return p < 0; }))
    return nodeError() << "strides and dilations must be >= 1 and pads >= 0";
  int64_t c = xt.getDimSize(1), o = wt.getDimSize(0);
  if (group < 1 || c % group || o % group || wt.getDimSize(1) * group != c)
    return nodeError() << "weight " << shapeStr(wt.getShape()) << " with group "
                       << group << " does not fit " << c << " input channels";
  if (bias) {
    auto bt = cast<RankedTensorType>(bias.getType());
    if (bt.getRank() != 1 || bt.getDimSize(0) != o)
      return nodeError() << "bias has shape " << shapeStr(bt.getShape())
                         << ", expected [" << o << "]";
  }
  SmallVector<int64_t> shape = {xt.getDimSize(0), o};
  for (size_t i = 0; i < sp; ++i) {
    CheckedMath m;
    int64_t eff = m.add(m.mul(dilations[i], wt.getDimSize(2 + i) - 1), 1);
    int64_t span = m.sub(
        m.add(m.add(xt.getDimSize(2 + i), pads[i]), pads[i + sp]), eff);
    if (m.overflowed)
      return nodeError() << "dilations or pads overflow int64 along spatial "
                            "axis "
                         << i;
    if (span < 0)
      return nodeError() << "the kernel (" << eff
                         << " with dilation) is larger than the padded input "
                            "along spatial axis "
                         << i;
    shape.push_back(span / strides[i] + 1);
  }
  auto type = RankedTensorType::get(shape, builder.getF32Type());
  Value y = gr::ConvOp::create(builder, nodeLoc, type, x, w, bias,
                               builder.getDenseI64ArrayAttr(strides),
                               builder.getDenseI64ArrayAttr(pads),
                               builder.getDenseI64ArrayAttr(dilations),
                               builder.getI64IntegerAttr(group));
  if (is1D)
    y = gr::ReshapeOp::create(
        builder, nodeLoc,
        RankedTensorType::get({shape[0], shape[1], shape[3]},
                              builder.getF32Type()),
        y);
  return define(0, y);
}

// ConvTranspose is the adjoint of a convolution: y = conv_backward_data(x, w)
// where w [C_in, C_out/group, kH, kW] is the filter of the convolution that
// maps y's shape back to x's. Its output size per spatial axis is
// stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pads, and the
// extra output_padding rows at the end get no contribution (only the bias).
LogicalResult Importer::convTranspose() {
  SmallVector<int64_t> outPad = attrInts("output_padding", {0, 0});
  SmallVector<int64_t> outShape = attrInts("output_shape", {});
  if (attrFailed)
    return failure();
  ConvNode cn;
  if (failed(readConvNode("ConvTranspose", cn)))
    return failure();
  std::string &autoPad = cn.autoPad;
  SmallVector<int64_t> &kernel = cn.kernel, &strides = cn.strides,
                       &pads = cn.pads, &dilations = cn.dilations;
  int64_t group = cn.group;
  Value x = cn.x, w = cn.w, bias = cn.bias;
  RankedTensorType xt = cn.xt, wt = cn.wt;
  bool is1D = cn.is1D;
  size_t sp = cn.spatial;
  if (is1D) {
    if (findAttr("output_padding")) {
      if (outPad.size() != 1)
        return nodeError() << "a 1-D ConvTranspose needs 1 output_padding";
      outPad = {0, outPad[0]};
    }
    if (!outShape.empty()) {
      // output_shape may list the whole output shape or its spatial part.
      if (outShape.size() == 3)
        outShape.erase(outShape.begin(), outShape.begin() + 2);
      if (outShape.size() != 1)
        return nodeError() << "a 1-D ConvTranspose needs 1 output_shape value";
      outShape = {1, outShape[0]};
    }
  }
  if (sp == 3 && !findAttr("output_padding"))
    outPad = {0, 0, 0};
  if (outShape.size() == sp + 2)
    outShape.erase(outShape.begin(), outShape.begin() + 2);
  if (strides.size() != sp || dilations.size() != sp ||
      pads.size() != 2 * sp || outPad.size() != sp ||
      (!outShape.empty() && outShape.size() != sp))
    return nodeError() << "expects " << sp
                       << " strides, dilations, output_padding and "
                          "output_shape values and "
                       << 2 * sp << " pads, got "
                       << strides.size() << ", " << dilations.size() << ", "
                       << outPad.size() << ", " << outShape.size() << " and "
                       << pads.size();
  if (!kernel.empty() &&
      ArrayRef<int64_t>(kernel) != wt.getShape().drop_front(2))
    return nodeError() << "attribute kernel_shape " << shapeStr(kernel)
                       << " does not match the weight's spatial dims "
                       << shapeStr(wt.getShape().drop_front(2));
  if (llvm::any_of(strides, [](int64_t s) { return s < 1; }) ||
      llvm::any_of(dilations, [](int64_t d) { return d < 1; }) ||
      llvm::any_of(pads, [](int64_t p) { return p < 0; }) ||
      llvm::any_of(outPad, [](int64_t p) { return p < 0; }))
    return nodeError() << "strides and dilations must be >= 1, pads and "
                          "output_padding >= 0";
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER")
    return nodeError() << "attribute auto_pad = '" << autoPad
                       << "' is not supported; supported: NOTSET (explicit "
                          "pads), VALID, SAME_UPPER, SAME_LOWER";
  int64_t cIn = xt.getDimSize(1);
  if (group < 1 || wt.getDimSize(0) != cIn || cIn % group)
    return nodeError() << "weight " << shapeStr(wt.getShape()) << " with group "
                       << group << " does not fit " << cIn
                       << " input channels (expected [C_in, C_out/group, "
                          "kH, kW])";
  int64_t cOut = wt.getDimSize(1) * group;
  if (bias) {
    auto bt = cast<RankedTensorType>(bias.getType());
    if (bt.getRank() != 1 || bt.getDimSize(0) != cOut)
      return nodeError() << "bias has shape " << shapeStr(bt.getShape())
                         << ", expected [" << cOut << "]";
  }
  SmallVector<int64_t> shape = {xt.getDimSize(0), cOut};
  for (size_t i = 0; i < sp; ++i) {
    int64_t in = xt.getDimSize(2 + i), s = strides[i];
    CheckedMath m;
    int64_t eff = m.add(m.mul(dilations[i], wt.getDimSize(2 + i) - 1), 1);
    int64_t full = m.add(m.add(m.mul(s, in - 1), outPad[i]), eff);
    int64_t out;
    if (!outShape.empty() || autoPad == "SAME_UPPER" ||
        autoPad == "SAME_LOWER") {
      // ONNX: the pads come from the requested output size; an odd total
      // puts the extra element at the end for SAME_UPPER, at the beginning
      // otherwise. A negative total leaves extra rows at the end.
      out = outShape.empty() ? m.mul(in, s) : outShape[i];
      int64_t total = std::max<int64_t>(0, m.sub(full, out));
      pads[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[i + sp] = total - pads[i];
    } else {
      if (autoPad == "VALID")
        pads[i] = pads[i + sp] = 0;
      out = m.sub(m.sub(full, pads[i]), pads[i + sp]);
    }
    // The convolution that y's shape maps back to x's must give exactly
    // |in| outputs (rows past its last window only take the bias).
    int64_t span = m.sub(m.add(m.add(out, pads[i]), pads[i + sp]), eff);
    if (m.overflowed)
      return nodeError() << "strides, dilations, pads or output sizes "
                            "overflow int64 along spatial axis "
                         << i;
    if (out < 1 || span < 0 || span / s + 1 != in)
      return nodeError() << "output size " << out << " along spatial axis "
                         << i << " is not reachable from input size " << in
                         << " (stride " << s << ", kernel extent " << eff
                         << ", pads " << pads[i] << "/" << pads[i + sp]
                         << "); output_padding must be smaller than the "
                            "stride";
    shape.push_back(out);
  }
  auto type = RankedTensorType::get(shape, builder.getF32Type());
  Value y = gr::ConvBackwardDataOp::create(
      builder, nodeLoc, type, x, w, builder.getDenseI64ArrayAttr(strides),
      builder.getDenseI64ArrayAttr(pads),
      builder.getDenseI64ArrayAttr(dilations), builder.getI64IntegerAttr(group));
  if (bias) {
    SmallVector<int64_t> bshape(sp + 1, 1);
    bshape[0] = cOut;
    Value b = gr::ReshapeOp::create(
        builder, nodeLoc, RankedTensorType::get(bshape, builder.getF32Type()),
        bias);
    y = gr::AddOp::create(builder, nodeLoc, type, y, b);
  }
  if (is1D)
    y = gr::ReshapeOp::create(
        builder, nodeLoc,
        RankedTensorType::get({shape[0], shape[1], shape[3]},
                              builder.getF32Type()),
        y);
  return define(0, y);
}

//===----------------------------------------------------------------------===//
// Normalization, pooling, softmax
//===----------------------------------------------------------------------===//

LogicalResult Importer::batchNorm() {
  float epsilon = attrFloat("epsilon", 1e-5f);
  float momentum = attrFloat("momentum", 0.9f);
  int64_t trainingMode = attrInt("training_mode", 0);
  // Before opset 7, is_test = 0 asks for batch statistics, as
  // training_mode = 1 does from opset 14.
  if (opset < 7)
    trainingMode = attrInt("is_test", 0) ? 0 : 1;
  // Before opset 9, spatial = 0 (per-activation statistics) existed.
  int64_t spatial = opset < 9 ? attrInt("spatial", 1) : 1;
  if (attrFailed)
    return failure();
  if (spatial != 1)
    return nodeError() << "attribute spatial = " << spatial
                       << " is not supported; supported: 1 (opset " << opset
                       << ")";
  if (trainingMode != 0 && trainingMode != 1)
    return nodeError() << "attribute training_mode = " << trainingMode
                       << " is not supported; supported: 0, 1";
  // training_mode=1 still maps to batch_norm (the training pass switches it
  // to batch statistics); the running-statistics outputs must be unused.
  if (failed(requireOnlyLeadingOutputs(1)))
    return failure();
  SmallVector<Value> ops;
  for (int i = 0; i < 5; ++i) {
    Slot *s = input(i);
    if (!s)
      return failure();
    // Running statistics are state that training overwrites, so they must
    // not share a variable with anything else. Exporters deduplicate
    // initializers by value (PyTorch in eval mode turns a fresh BatchNorm's
    // running_mean/running_var into its bias/weight: all zeros/ones), so a
    // shared statistic gets a private copy, named like PyTorch's buffers.
    if (i >= 3 && !s->variable.empty() && useCount[s->variable] > 1) {
      Slot copy;
      copy.constant = s->constant;
      copy.loc = nodeLoc;
      std::string base = nodeName + (i == 3 ? ".running_mean" : ".running_var");
      copy.variable = base;
      for (int k = 1;
           slots.count(copy.variable) || variableReads.count(copy.variable) ||
           copy.variable == "main";
           ++k)
        copy.variable = base + "_" + std::to_string(k);
      ops.push_back(materialize(copy));
      continue;
    }
    Value v = operand(i);
    if (!v)
      return failure();
    ops.push_back(v);
  }
  auto xt = cast<RankedTensorType>(ops[0].getType());
  if (xt.getRank() < 2)
    return nodeError() << "input must have rank >= 2 (N, C, ...), got "
                       << shapeStr(xt.getShape());
  for (int i = 1; i < 5; ++i) {
    auto t = cast<RankedTensorType>(ops[i].getType());
    if (t.getRank() != 1 || t.getDimSize(0) != xt.getDimSize(1))
      return nodeError() << "input " << i << " ('" << node->input(i)
                         << "') has shape " << shapeStr(t.getShape())
                         << ", expected [" << xt.getDimSize(1) << "]";
  }
  auto op = gr::BatchNormOp::create(
      builder, nodeLoc, xt, ops[0], ops[1], ops[2], ops[3], ops[4],
      builder.getF32FloatAttr(epsilon), builder.getF32FloatAttr(momentum));
  return define(0, op);
}

template <typename OpTy> LogicalResult Importer::pool() {
  bool isMax = std::is_same<OpTy, gr::MaxPoolOp>::value;
  std::string autoPad = attrString("auto_pad", "NOTSET");
  SmallVector<int64_t> kernel = attrInts("kernel_shape", {});
  SmallVector<int64_t> strides = attrInts("strides", {1, 1});
  SmallVector<int64_t> pads = attrInts("pads", {0, 0, 0, 0});
  SmallVector<int64_t> dilations = {1, 1};
  int64_t ceilMode = attrInt("ceil_mode", 0);
  int64_t countIncludePad = 0;
  if (isMax) {
    dilations = attrInts("dilations", {1, 1});
    if (int64_t order = attrInt("storage_order", 0))
      return nodeError() << "attribute storage_order = " << order
                         << " is not supported; supported: 0 (row major)";
    if (failed(requireOnlyLeadingOutputs(1)))
      return failure();
  } else {
    countIncludePad = attrInt("count_include_pad", 0);
  }
  if (attrFailed)
    return failure();
  Value x = operand(0);
  if (!x)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  // 1-D pooling is 2-D pooling over an inserted H axis of size 1.
  bool is1D = xt.getRank() == 3;
  if (is1D) {
    if (failed(liftTo2D(kernel, strides, pads, dilations)))
      return failure();
    x = insertUnitH(x);
    xt = cast<RankedTensorType>(x.getType());
  }
  bool is3D = xt.getRank() == 5;
  if (xt.getRank() != 4 && !is3D)
    return nodeError() << "only 1-D, 2-D and 3-D pooling over NCL/NCHW/NCDHW "
                          "input is supported, got "
                       << shapeStr(xt.getShape());
  // Number of spatial axes (the 2-D defaults above are widened for 3-D).
  size_t sp = is3D ? 3 : 2;
  if (is3D) {
    if (!findAttr("strides"))
      strides = {1, 1, 1};
    if (!findAttr("pads"))
      pads = {0, 0, 0, 0, 0, 0};
    if (!isMax || !findAttr("dilations"))
      dilations = {1, 1, 1};
  }
  if (autoPad == "VALID")
    pads.assign(2 * sp, 0);
  else if ((autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") &&
           kernel.size() == sp && strides.size() == sp &&
           dilations.size() == sp)
    pads = samePads(xt.getShape().drop_front(2), kernel, strides, dilations,
                    autoPad == "SAME_LOWER");
  else if (autoPad != "NOTSET" && autoPad != "SAME_UPPER" &&
           autoPad != "SAME_LOWER")
    return nodeError() << "attribute auto_pad = '" << autoPad
                       << "' is not supported; supported: NOTSET (explicit "
                          "pads), VALID, SAME_UPPER, SAME_LOWER";
  if (kernel.size() != sp || strides.size() != sp || pads.size() != 2 * sp ||
      dilations.size() != sp)
    return nodeError() << "expects " << sp << " kernel dims, " << sp
                       << " strides, " << sp << " dilations and " << 2 * sp
                       << " pads, got " << kernel.size() << ", "
                       << strides.size() << ", " << dilations.size() << " and "
                       << pads.size();
  if (llvm::any_of(kernel, [](int64_t k) { return k < 1; }) ||
      llvm::any_of(strides, [](int64_t s) { return s < 1; }) ||
      llvm::any_of(dilations, [](int64_t d) { return d < 1; }) ||
      llvm::any_of(pads, [](int64_t p) { return p < 0; }))
    return nodeError() << "kernel_shape, strides and dilations must be >= 1 "
                          "and pads >= 0";
  if (ceilMode != 0 && ceilMode != 1)
    return nodeError() << "attribute ceil_mode = " << ceilMode
                       << " is not supported; supported: 0, 1";
  SmallVector<int64_t> shape = {xt.getDimSize(0), xt.getDimSize(1)};
  for (size_t i = 0; i < sp; ++i) {
    int64_t in = xt.getDimSize(2 + i);
    CheckedMath m;
    int64_t eff = m.add(m.mul(dilations[i], kernel[i] - 1), 1);
    int64_t span = m.sub(m.add(m.add(in, pads[i]), pads[i + sp]), eff);
    int64_t s = strides[i];
    // Also the ceil-mode terms below: span + s - 1, (out - 1) * s.
    m.add(span, s - 1);
    m.mul(span / s + 1, s);
    m.add(in, pads[i]);
    if (m.overflowed)
      return nodeError() << "kernel_shape, dilations, strides or pads "
                            "overflow int64 along spatial axis "
                         << i;
    if (span < 0)
      return nodeError() << "the kernel (" << eff
                         << ") is larger than the padded input along spatial "
                            "axis "
                         << i;
    int64_t out = (ceilMode ? (span + s - 1) / s : span / s) + 1;
    // With ceil_mode, the last window must start inside the input or the
    // left padding (PyTorch and ONNX Runtime drop it otherwise).
    if (ceilMode && (out - 1) * s >= in + pads[i])
      --out;
    shape.push_back(out);
  }
  auto f32 = builder.getF32Type();
  auto pool2D = [&](Value in, ArrayRef<int64_t> outShape,
                    ArrayRef<int64_t> k, ArrayRef<int64_t> st,
                    ArrayRef<int64_t> pd, ArrayRef<int64_t> dl) -> Value {
    return OpTy::create(
        builder, nodeLoc, RankedTensorType::get(outShape, f32), in,
        builder.getDenseI64ArrayAttr(k), builder.getDenseI64ArrayAttr(st),
        builder.getDenseI64ArrayAttr(pd), builder.getDenseI64ArrayAttr(dl),
        ceilMode ? builder.getUnitAttr() : UnitAttr(),
        countIncludePad ? builder.getUnitAttr() : UnitAttr());
  };
  if (is3D) {
    // 3-D pooling is separable: the window is a box and the per-axis output
    // sizes are independent, so max (first maximum in D, H, W scan order)
    // and average (the divisor, clipped to the padded or the real input, is
    // a product of per-axis counts) are a 2-D pool over (H, W) of
    // [N, C*D, H, W] followed by one over (D, 1) of [N*C, 1, D, OH*OW].
    // Gradients follow from the 2-D pools'.
    int64_t n = shape[0], c = shape[1], d = xt.getDimSize(2);
    int64_t od = shape[2], oh = shape[3], ow = shape[4];
    Value hw = gr::ReshapeOp::create(
        builder, nodeLoc,
        RankedTensorType::get({n, c * d, xt.getDimSize(3), xt.getDimSize(4)},
                              f32),
        x);
    hw = pool2D(hw, {n, c * d, oh, ow}, {kernel[1], kernel[2]},
                {strides[1], strides[2]}, {pads[1], pads[2], pads[4], pads[5]},
                {dilations[1], dilations[2]});
    Value dv = gr::ReshapeOp::create(
        builder, nodeLoc, RankedTensorType::get({n * c, 1, d, oh * ow}, f32),
        hw);
    dv = pool2D(dv, {n * c, 1, od, oh * ow}, {kernel[0], 1}, {strides[0], 1},
                {pads[0], 0, pads[3], 0}, {dilations[0], 1});
    return define(0, gr::ReshapeOp::create(
                         builder, nodeLoc, RankedTensorType::get(shape, f32),
                         dv));
  }
  Value op = pool2D(x, shape, kernel, strides, pads, dilations);
  if (is1D)
    return define(0, gr::ReshapeOp::create(
                         builder, nodeLoc,
                         RankedTensorType::get({shape[0], shape[1], shape[3]},
                                               f32),
                         op));
  return define(0, op);
}

LogicalResult Importer::globalAveragePool() {
  Value x = operand(0);
  if (!x)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  if (xt.getRank() < 3)
    return nodeError() << "input must have rank >= 3 (N, C, spatial...), got "
                       << shapeStr(xt.getShape());
  SmallVector<int64_t> shape(xt.getShape());
  for (int64_t i = 2; i < xt.getRank(); ++i)
    shape[i] = 1;
  auto type = RankedTensorType::get(shape, builder.getF32Type());
  return define(0, gr::GlobalAveragePoolOp::create(builder, nodeLoc, type, x));
}

LogicalResult Importer::globalMaxPool() {
  Value x = floatOperand(0);
  if (!x)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  if (xt.getRank() < 3)
    return nodeError() << "input must have rank >= 3 (N, C, spatial...), got "
                       << shapeStr(xt.getShape());
  SmallVector<int64_t> axes;
  for (int64_t i = 2; i < xt.getRank(); ++i)
    axes.push_back(i);
  return define(0, reduceOver<gr::ReduceMaxOp>(x, axes, /*keepdims=*/true));
}

/// DepthToSpace (modes DCR, CRD) and SpaceToDepth on [N, C, H, W], as
/// reshape -> transpose -> reshape (the ONNX operator definitions).
LogicalResult Importer::depthSpace() {
  bool toSpace = node->op_type() == "DepthToSpace";
  int64_t b = attrInt("blocksize", 0);
  std::string mode = toSpace ? attrString("mode", "DCR") : "DCR";
  if (attrFailed)
    return failure();
  Value x = operand(0);
  if (!x)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  if (xt.getRank() != 4)
    return nodeError() << "input must have rank 4 (N, C, H, W), got "
                       << shapeStr(xt.getShape());
  if (b < 1 || b > (int64_t(1) << 20))
    return nodeError() << "attribute blocksize = " << b
                       << " is not supported; it must be in 1..2^20";
  if (mode != "DCR" && mode != "CRD")
    return nodeError() << "attribute mode = '" << mode
                       << "' is not supported; supported: DCR, CRD";
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1), h = xt.getDimSize(2),
          w = xt.getDimSize(3);
  SmallVector<int64_t> split, perm, out;
  if (toSpace) {
    if (c % (b * b))
      return nodeError() << "channels " << c
                         << " are not divisible by blocksize^2 = " << b * b;
    if (mode == "DCR") {
      split = {n, b, b, c / (b * b), h, w};
      perm = {0, 3, 4, 1, 5, 2};
    } else {
      split = {n, c / (b * b), b, b, h, w};
      perm = {0, 1, 4, 2, 5, 3};
    }
    out = {n, c / (b * b), h * b, w * b};
  } else {
    if (h % b || w % b)
      return nodeError() << "spatial size [" << h << ", " << w
                         << "] is not divisible by blocksize " << b;
    split = {n, c, h / b, b, w / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    out = {n, c * b * b, h / b, w / b};
  }
  Type et = xt.getElementType();
  Value r = gr::ReshapeOp::create(builder, nodeLoc,
                                  RankedTensorType::get(split, et), x);
  SmallVector<int64_t> permuted;
  for (int64_t p : perm)
    permuted.push_back(split[p]);
  Value t = gr::TransposeOp::create(builder, nodeLoc,
                                    RankedTensorType::get(permuted, et), r,
                                    builder.getDenseI64ArrayAttr(perm));
  return define(0, gr::ReshapeOp::create(builder, nodeLoc,
                                         RankedTensorType::get(out, et), t));
}

template <typename OpTy> LogicalResult Importer::softmax() {
  bool coerce2D = opset < 13;
  int64_t axis = attrInt("axis", coerce2D ? 1 : -1);
  if (attrFailed)
    return failure();
  Value x = floatOperand(0);
  if (!x)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank();
  if (axis < -rank || axis >= rank)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << rank;
  if (axis < 0)
    axis += rank;
  if (coerce2D && axis != rank - 1) {
    // Before opset 13 the input is coerced to 2-D [prod(dims[:axis]),
    // prod(dims[axis:])] and normalized over its second dim.
    ArrayRef<int64_t> shape = xt.getShape();
    auto flat = RankedTensorType::get(
        {product(shape.take_front(axis)), product(shape.drop_front(axis))},
        xt.getElementType());
    Value f = gr::ReshapeOp::create(builder, nodeLoc, flat, x);
    Value y = OpTy::create(builder, nodeLoc, flat, f,
                           builder.getI64IntegerAttr(1));
    return define(0, gr::ReshapeOp::create(builder, nodeLoc, xt, y));
  }
  return define(0, OpTy::create(builder, nodeLoc, x.getType(), x,
                                builder.getI64IntegerAttr(axis)));
}

//===----------------------------------------------------------------------===//
// Shape ops and constants
//===----------------------------------------------------------------------===//

LogicalResult Importer::flatten() {
  int64_t axis = attrInt("axis", 1);
  if (attrFailed)
    return failure();
  Slot *s = input(0);
  if (!s)
    return failure();
  ArrayRef<int64_t> in = s->type().getShape();
  int64_t rank = in.size();
  if (axis < -rank || axis > rank)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << rank;
  if (axis < 0)
    axis += rank;
  return reshapeTo(
      {product(in.take_front(axis)), product(in.drop_front(axis))});
}

LogicalResult Importer::reshape() {
  int64_t allowZero = attrInt("allowzero", 0);
  if (attrFailed)
    return failure();
  Slot *s = input(0);
  if (!s)
    return failure();
  auto target = constInts(1, "the shape");
  if (failed(target))
    return failure();
  ArrayRef<int64_t> in = s->type().getShape();
  // A model exported with a static batch B0 bakes B0 into view-style
  // reshapes (`x.view(B0, -1)` constant-folds to [B0, -1]). When --batch-size
  // changed the batch and the input is still batch-major, dim 0 of the target
  // is that batch.
  if (exportedBatch > 0 && !target->empty() && (*target)[0] == exportedBatch &&
      !in.empty() && in[0] == options.batchSize) {
    emitWarning(nodeLoc) << node->op_type() << " node '" << nodeName
                         << "': the target shape " << shapeStr(*target)
                         << " starts with the exported batch size "
                         << exportedBatch << "; using the batch size "
                         << options.batchSize << " instead";
    (*target)[0] = options.batchSize;
  }
  SmallVector<int64_t> shape;
  int inferAt = -1;
  for (size_t i = 0; i < target->size(); ++i) {
    int64_t d = (*target)[i];
    if (d == 0 && allowZero) {
      return nodeError() << "attribute allowzero = 1 with a 0 in the shape is "
                            "not supported; supported: allowzero = 0";
    } else if (d == 0) {
      if (i >= in.size())
        return nodeError() << "shape " << shapeStr(*target) << " copies dim "
                           << i << " (a 0) of a rank-" << in.size() << " input";
      shape.push_back(in[i]);
    } else if (d == -1) {
      if (inferAt >= 0)
        return nodeError() << "shape " << shapeStr(*target)
                           << " has more than one -1";
      inferAt = i;
      shape.push_back(1);
    } else if (d < -1) {
      return nodeError() << "shape " << shapeStr(*target)
                         << " has an invalid dimension " << d;
    } else {
      shape.push_back(d);
    }
  }
  int64_t total = product(in), known = product(shape);
  if (inferAt >= 0) {
    if (known == 0 || total % known)
      return nodeError() << "cannot infer the -1 in " << shapeStr(*target)
                         << " for an input of shape " << shapeStr(in);
    shape[inferAt] = total / known;
  }
  return reshapeTo(shape);
}

LogicalResult Importer::constant() {
  for (const auto &a : node->attribute()) {
    const std::string &name = a.name();
    Type f32 = builder.getF32Type(), i64 = builder.getI64Type();
    DenseElementsAttr c;
    if (name == "value" &&
        a.type() == onnx::AttributeProto_AttributeType_TENSOR) {
      FailureOr<DenseElementsAttr> t =
          convertTensor(a.t(), nodeLoc, "Constant value");
      if (failed(t))
        return failure();
      c = *t;
    } else if (name == "value_float" &&
               a.type() == onnx::AttributeProto_AttributeType_FLOAT) {
      c = DenseElementsAttr::get(RankedTensorType::get({}, f32), a.f());
    } else if (name == "value_floats" &&
               a.type() == onnx::AttributeProto_AttributeType_FLOATS) {
      SmallVector<float> v(a.floats().begin(), a.floats().end());
      c = DenseElementsAttr::get(
          RankedTensorType::get({(int64_t)v.size()}, f32), ArrayRef<float>(v));
    } else if (name == "value_int" &&
               a.type() == onnx::AttributeProto_AttributeType_INT) {
      c = DenseElementsAttr::get(RankedTensorType::get({}, i64),
                                 static_cast<int64_t>(a.i()));
    } else if (name == "value_ints" &&
               a.type() == onnx::AttributeProto_AttributeType_INTS) {
      SmallVector<int64_t> v(a.ints().begin(), a.ints().end());
      c = DenseElementsAttr::get(
          RankedTensorType::get({(int64_t)v.size()}, i64),
          ArrayRef<int64_t>(v));
    } else {
      return nodeError() << "attribute '" << name
                         << "' is not supported; supported: value (tensor), "
                            "value_float, value_floats, value_int, value_ints";
    }
    return defineConstant(0, c);
  }
  return nodeError() << "has no value attribute";
}

LogicalResult Importer::identity() {
  Slot *s = input(0);
  if (!s)
    return failure();
  if (!s->value) {
    // Alias constants and variables; they materialize where used.
    Slot alias = *s;
    return defineSlot(0, alias);
  }
  return define(0, gr::IdentityOp::create(builder, nodeLoc, s->value));
}

LogicalResult Importer::dropout() {
  // Output 1, the mask, is bool from opset 10 and has the input's type
  // before (Dropout-7).
  bool training = false;
  float ratio = 0.5f;
  if (opset < 7) {
    // Dropout-6 drops unless is_test = 1 (or ratio = 0).
    int64_t isTest = attrInt("is_test", 0);
    ratio = attrFloat("ratio", 0.5f);
    if (attrFailed)
      return failure();
    if (!isTest && ratio != 0.0f)
      return nodeError() << "attribute is_test = 0 with ratio " << ratio
                         << " (training-mode dropout, opset " << opset
                         << ") is not supported; export with opset >= 12, "
                            "where training_mode is an input";
  } else if (opset < 12) {
    ratio = attrFloat("ratio", 0.5f);
    if (attrFailed)
      return failure();
  } else {
    if (hasInput(2)) {
      Slot *t = input(2);
      if (!t)
        return failure();
      if (!t->isFoldable() || t->type().getNumElements() != 1)
        return nodeError() << "training_mode (input '" << node->input(2)
                           << "') must be a constant (an initializer or a "
                              "Constant); a runtime flag is not supported";
      training = !t->constant.getSplatValue<APInt>().isZero();
    }
    if (hasInput(1)) {
      Slot *r = input(1);
      if (!r)
        return failure();
      if (!r->isFoldable() || r->type().getNumElements() != 1 ||
          !isa<FloatType>(r->type().getElementType())) {
        if (training)
          return nodeError() << "ratio (input '" << node->input(1)
                             << "') must be a constant float scalar";
      } else {
        ratio = (float)(*r->constant.getValues<APFloat>().begin())
                    .convertToDouble();
      }
    }
  }
  if (training && !(ratio >= 0.0f && ratio < 1.0f))
    return nodeError() << "ratio " << ratio
                       << " is out of range; supported: [0, 1)";
  int64_t seedAttr = attrInt("seed", -1);
  if (attrFailed)
    return failure();
  Slot *xs = input(0);
  if (!xs)
    return failure();
  RankedTensorType xt = xs->type();
  bool wantMask = node->output_size() > 1 && !node->output(1).empty();
  auto maskType = RankedTensorType::get(
      xt.getShape(), opset < 10 ? xt.getElementType() : builder.getI1Type());
  if (!training || ratio == 0.0f) {
    // Inference, or nothing dropped: the identity, and a mask of ones.
    if (wantMask) {
      Attribute one =
          opset < 10 ? (Attribute)builder.getFloatAttr(xt.getElementType(), 1.0)
                     : (Attribute)builder.getBoolAttr(true);
      if (opset < 10 && !isa<FloatType>(xt.getElementType()))
        return nodeError() << "a Dropout-7 mask of element type "
                           << xt.getElementType() << " is not supported";
      if (failed(defineConstant(1, DenseElementsAttr::get(maskType, one))))
        return failure();
    }
    return identity();
  }
  Value x = operand(0);
  if (!x)
    return failure();
  // Without a seed attribute, a hash of the node's first output name, so
  // that every Dropout of a model has its own stream and compiles repeat.
  uint64_t seed = seedAttr >= 0 ? (uint64_t)seedAttr
                                : (uint64_t)llvm::xxh3_64bits(node->output(0));
  auto dropout = gr::DropoutOp::create(
      builder, nodeLoc, xt, RankedTensorType::get(xt.getShape(),
                                                  builder.getI1Type()),
      x, dropoutStep(), builder.getF32FloatAttr(ratio),
      builder.getI64IntegerAttr((int64_t)seed));
  if (wantMask && failed(define(1, dropout.getMask())))
    return failure();
  return define(0, dropout.getResult());
}

Value Importer::dropoutStep() {
  if (dropoutStepValue)
    return dropoutStepValue;
  StringRef name = "__dropout_step";
  auto type = RankedTensorType::get({}, builder.getF32Type());
  OpBuilder::InsertPoint ip = builder.saveInsertionPoint();
  builder.setInsertionPoint(func);
  gr::VariableOp::create(builder, fileLoc, name, type, ElementsAttr(),
                         /*trainable=*/false);
  builder.restoreInsertionPoint(ip);
  // Reads see the value from before the call; the write takes effect when
  // the function returns, so every call (every training step) draws anew.
  Value read = gr::ReadVariableOp::create(builder, fileLoc, type, name);
  Value next = gr::AddOp::create(
      builder, fileLoc, type, read,
      gr::ConstantOp::create(builder, fileLoc,
                             cast<ElementsAttr>(DenseElementsAttr::get(
                                 type, builder.getF32FloatAttr(1.0f)))));
  gr::WriteVariableOp::create(builder, fileLoc, name, next);
  dropoutStepValue = read;
  return read;
}

LogicalResult Importer::argReduce() {
  int64_t axis = attrInt("axis", 0);
  int64_t keepdims = attrInt("keepdims", 1);
  int64_t last = attrInt("select_last_index", 0);
  if (attrFailed)
    return failure();
  Value x = floatOperand(0);
  if (!x)
    return failure();
  auto t = cast<RankedTensorType>(x.getType());
  int64_t rank = t.getRank();
  if (axis < -rank || axis >= rank || rank == 0)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << rank;
  if (axis < 0)
    axis += rank;
  if ((keepdims != 0 && keepdims != 1) || (last != 0 && last != 1))
    return nodeError() << "keepdims and select_last_index must be 0 or 1";
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != axis)
      shape.push_back(t.getDimSize(i));
    else if (keepdims)
      shape.push_back(1);
  }
  auto rt = RankedTensorType::get(shape, builder.getI64Type());
  UnitAttr keep = keepdims ? builder.getUnitAttr() : UnitAttr();
  UnitAttr sel = last ? builder.getUnitAttr() : UnitAttr();
  Value y;
  if (node->op_type() == "ArgMax")
    y = gr::ArgMaxOp::create(builder, nodeLoc, rt, x,
                             builder.getI64IntegerAttr(axis), keep, sel);
  else
    y = gr::ArgMinOp::create(builder, nodeLoc, rt, x,
                             builder.getI64IntegerAttr(axis), keep, sel);
  return define(0, y);
}

LogicalResult Importer::resize() {
  bool upsample = node->op_type() == "Upsample";
  std::string mode = attrString("mode", "nearest");
  std::string coord = upsample ? "asymmetric"
                               : attrString("coordinate_transformation_mode",
                                            "half_pixel");
  std::string nearest =
      upsample ? "floor" : attrString("nearest_mode", "round_prefer_floor");
  if (attrFailed)
    return failure();
  if (mode == "bilinear" && upsample)
    mode = "linear"; // Upsample-7's spelling
  if (mode != "nearest" && mode != "linear")
    return nodeError() << "mode '" << mode
                       << "' is not supported; supported: nearest, linear";
  if (!llvm::is_contained({"half_pixel", "pytorch_half_pixel", "align_corners",
                           "asymmetric", "tf_half_pixel_for_nn"},
                          coord))
    return nodeError() << "coordinate_transformation_mode '" << coord
                       << "' is not supported; supported: half_pixel, "
                          "pytorch_half_pixel, align_corners, asymmetric, "
                          "tf_half_pixel_for_nn";
  if (!llvm::is_contained(
          {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"},
          nearest))
    return nodeError() << "nearest_mode '" << nearest << "' is not supported";
  Value x = floatOperand(0);
  if (!x)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank();
  // Scales: input 1 (Upsample) or 2 (Resize); sizes: Resize input 3. An
  // absent input or an empty tensor means "not given".
  auto given = [&](int i) {
    if (!hasInput(i))
      return false;
    Slot *sl = input(i);
    return sl && sl->type().getNumElements() > 0;
  };
  int scalesIdx = upsample ? 1 : 2;
  SmallVector<double> scales;
  SmallVector<int64_t> shape;
  if (!upsample && given(3)) {
    auto sz = constInts(3, "sizes");
    if (failed(sz))
      return failure();
    if ((int64_t)sz->size() != rank)
      return nodeError() << "sizes has " << sz->size() << " values for rank "
                         << rank;
    for (int64_t d = 0; d < rank; ++d) {
      if ((*sz)[d] <= 0)
        return nodeError() << "sizes must be positive, got "
                           << shapeStr(*sz);
      shape.push_back((*sz)[d]);
      scales.push_back((double)(*sz)[d] / (double)xt.getDimSize(d));
    }
  } else if (given(scalesIdx)) {
    Slot *sl = input(scalesIdx);
    // An f32 initializer counts: scales are no operand of the resize, so
    // training never updates them.
    if (!sl->constant || !isa<FloatType>(sl->type().getElementType()))
      return nodeError() << "scales (input '" << node->input(scalesIdx)
                         << "') must be a constant float tensor (an "
                            "initializer or a Constant); runtime scales "
                            "give no static output shape";
    for (const APFloat &v : sl->constant.getValues<APFloat>())
      scales.push_back(v.convertToDouble());
    if ((int64_t)scales.size() != rank)
      return nodeError() << "scales has " << scales.size()
                         << " values for rank " << rank;
    for (int64_t d = 0; d < rank; ++d) {
      // ONNX: floor(input_dimension * scale); the scale as given (f32).
      double n = std::floor((double)xt.getDimSize(d) * (double)(float)scales[d]);
      if (!(scales[d] > 0) || n < 1)
        return nodeError() << "scale " << scales[d] << " on axis " << d
                           << " is not supported (the output would be empty "
                              "or the scale is not positive)";
      if (!(n <= (double)kMaxElements))
        return nodeError() << "scale " << scales[d] << " on axis " << d
                           << " gives a dimension over 2^40";
      shape.push_back((int64_t)n);
    }
  } else {
    return nodeError() << "needs constant scales or sizes";
  }
  auto rt = RankedTensorType::get(shape, xt.getElementType());
  return define(0, gr::ResizeOp::create(
                       builder, nodeLoc, rt, x, builder.getStringAttr(mode),
                       builder.getStringAttr(coord),
                       builder.getStringAttr(nearest),
                       builder.getDenseF64ArrayAttr(scales)));
}

LogicalResult Importer::range() {
  Slot *in[3];
  for (int i = 0; i < 3; ++i) {
    in[i] = input(i);
    if (!in[i])
      return failure();
    if (!in[i]->isFoldable() || in[i]->type().getNumElements() != 1)
      return nodeError() << "input " << i << " ('" << node->input(i)
                         << "') must be a constant scalar (an initializer, "
                            "a Constant or a foldable shape computation); "
                            "Range with runtime bounds has no static shape";
  }
  Type et = in[0]->type().getElementType();
  if (in[1]->type().getElementType() != et ||
      in[2]->type().getElementType() != et)
    return nodeError() << "start, limit and delta must have one element type";
  bool isFloat = isa<FloatType>(et);
  if (!isFloat && (!et.isInteger() || et.isInteger(1)))
    return nodeError() << "element type " << et
                       << " is not supported; supported: f32, f64, i32, i64";
  auto scalar = [&](int i) -> double {
    DenseElementsAttr c = in[i]->constant;
    if (isFloat)
      return (*c.getValues<APFloat>().begin()).convertToDouble();
    return (double)(*c.getValues<APInt>().begin()).getSExtValue();
  };
  double start = scalar(0), limit = scalar(1), delta = scalar(2);
  if (delta == 0)
    return nodeError() << "delta is 0";
  // ONNX: number_of_elements = max(ceil((limit - start) / delta), 0).
  double count = std::max(std::ceil((limit - start) / delta), 0.0);
  if (!(count <= (double)(1 << 26)))
    return nodeError() << "Range of " << count << " elements is too large "
                       << "to fold (at most 2^26)";
  int64_t n = (int64_t)count;
  auto type = RankedTensorType::get({n}, et);
  if (isFloat) {
    SmallVector<APFloat> vals;
    auto ft = cast<FloatType>(et);
    for (int64_t i = 0; i < n; ++i) {
      // start + i * delta in double, rounded once to the element type.
      bool lost;
      APFloat v(start + (double)i * delta);
      v.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      vals.push_back(v);
    }
    return defineConstant(0, DenseElementsAttr::get(type, vals));
  }
  SmallVector<int64_t> vals;
  // The exact int64 operands (a double may not round-trip them).
  auto intScalar = [&](int i) {
    return (*in[i]->constant.getValues<APInt>().begin()).getSExtValue();
  };
  int64_t s0 = intScalar(0), d = intScalar(2);
  for (int64_t i = 0; i < n; ++i) // wraps like int64 arithmetic on targets
    vals.push_back(static_cast<int64_t>(static_cast<uint64_t>(s0) +
                                        static_cast<uint64_t>(i) *
                                            static_cast<uint64_t>(d)));
  return defineConstant(0, intConstant(type, vals));
}

LogicalResult Importer::transpose() {
  // Constants (PyTorch's F.pad exports its pads through a Transpose of an
  // int64 constant) are folded; data must be f32.
  Slot *src = input(0);
  if (!src)
    return failure();
  Value x = src->isFoldable() ? Value() : operand(0);
  if (!src->isFoldable() && !x)
    return failure();
  RankedTensorType xt = src->type();
  int64_t rank = xt.getRank();
  SmallVector<int64_t> def;
  for (int64_t i = rank - 1; i >= 0; --i)
    def.push_back(i);
  SmallVector<int64_t> perm = attrInts("perm", def);
  if (attrFailed)
    return failure();
  SmallVector<bool> seen(rank, false);
  if ((int64_t)perm.size() != rank)
    return nodeError() << "perm " << shapeStr(perm) << " has " << perm.size()
                       << " entries for an input of rank " << rank;
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return nodeError() << "perm " << shapeStr(perm)
                         << " is not a permutation of 0.." << rank - 1;
    seen[p] = true;
    shape.push_back(xt.getDimSize(p));
  }
  auto type = RankedTensorType::get(shape, xt.getElementType());
  if (src->isFoldable()) {
    SmallVector<Attribute> vals(src->constant.getValues<Attribute>()), out;
    SmallVector<int64_t> idx(rank, 0), strides(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * xt.getDimSize(d + 1);
    for (int64_t i = 0, n = type.getNumElements(); i < n; ++i) {
      int64_t lin = 0;
      for (int64_t d = 0; d < rank; ++d)
        lin += idx[d] * strides[perm[d]];
      out.push_back(vals[lin]);
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++idx[d] < shape[d])
          break;
        idx[d] = 0;
      }
    }
    return defineConstant(0, DenseElementsAttr::get(type, out));
  }
  return define(0, gr::TransposeOp::create(builder, nodeLoc, type, x,
                                           builder.getDenseI64ArrayAttr(perm)));
}

LogicalResult Importer::shape() {
  Slot *s = input(0);
  if (!s)
    return failure();
  ArrayRef<int64_t> in = s->type().getShape();
  int64_t rank = in.size();
  int64_t start = attrInt("start", 0), end = attrInt("end", rank);
  if (attrFailed)
    return failure();
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  SmallVector<int64_t> dims;
  for (int64_t i = start; i < end; ++i)
    dims.push_back(in[i]);
  auto type =
      RankedTensorType::get({(int64_t)dims.size()}, builder.getI64Type());
  return defineConstant(0,
                        DenseElementsAttr::get(type, ArrayRef<int64_t>(dims)));
}

LogicalResult Importer::gather() {
  int64_t axis = attrInt("axis", 0);
  if (attrFailed)
    return failure();
  Slot *data = input(0);
  if (!data)
    return failure();
  Slot *idxSlot = input(1);
  if (!idxSlot)
    return failure();
  if (!data->isFoldable() || !idxSlot->isFoldable()) {
    // Data (an embedding table, activations): dlgraph.gather.
    RankedTensorType dt = data->type(), it = idxSlot->type();
    int64_t rank = dt.getRank();
    if (!it.getElementType().isInteger(64) &&
        !it.getElementType().isInteger(32))
      return nodeError() << "indices (input '" << node->input(1)
                         << "') have element type " << it.getElementType()
                         << "; supported: int32, int64";
    if (rank == 0 || axis < -rank || axis >= rank)
      return nodeError() << "axis " << axis << " is out of range for rank "
                         << rank;
    if (axis < 0)
      axis += rank;
    SmallVector<int64_t> shape(dt.getShape().take_front(axis));
    llvm::append_range(shape, it.getShape());
    llvm::append_range(shape, dt.getShape().drop_front(axis + 1));
    Value x = materialize(*data), idx = materialize(*idxSlot);
    auto type = RankedTensorType::get(shape, dt.getElementType());
    return define(0, gr::GatherOp::create(builder, nodeLoc, type, x, idx,
                                          builder.getI64IntegerAttr(axis)));
  }
  auto indices = constInts(1, "indices");
  if (failed(indices))
    return failure();
  RankedTensorType dt = data->type();
  int64_t rank = dt.getRank();
  if (axis < -rank || axis >= rank)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << rank;
  if (axis < 0)
    axis += rank;
  ArrayRef<int64_t> ds = dt.getShape();
  int64_t outer = product(ds.take_front(axis)), dim = ds[axis],
          inner = product(ds.drop_front(axis + 1));
  SmallVector<Attribute> in(data->constant.getValues<Attribute>());
  SmallVector<Attribute> out;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t idx : *indices) {
      int64_t i = idx < 0 ? idx + dim : idx;
      if (i < 0 || i >= dim)
        return nodeError() << "index " << idx << " is out of range for axis "
                           << axis << " of size " << dim;
      for (int64_t k = 0; k < inner; ++k)
        out.push_back(in[(o * dim + i) * inner + k]);
    }
  }
  SmallVector<int64_t> shape(ds.take_front(axis));
  llvm::append_range(shape, input(1)->type().getShape());
  llvm::append_range(shape, ds.drop_front(axis + 1));
  auto type = RankedTensorType::get(shape, dt.getElementType());
  return defineConstant(0, DenseElementsAttr::get(type, out));
}

LogicalResult Importer::unsqueeze() {
  Slot *s = input(0);
  if (!s)
    return failure();
  // Before opset 13 the axes are an attribute.
  FailureOr<SmallVector<int64_t>> axes =
      opset < 13 ? FailureOr<SmallVector<int64_t>>(attrInts("axes", {}))
                 : constInts(1, "axes");
  if (failed(axes) || attrFailed)
    return failure();
  if (opset < 13 && !findAttr("axes"))
    return nodeError() << "attribute 'axes' is required (opset " << opset
                       << ")";
  ArrayRef<int64_t> in = s->type().getShape();
  int64_t rank = in.size() + axes->size();
  SmallVector<bool> isNew(rank, false);
  for (int64_t a : *axes) {
    int64_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank || isNew[n])
      return nodeError() << "axes " << shapeStr(*axes)
                         << " are out of range or repeated for output rank "
                         << rank;
    isNew[n] = true;
  }
  SmallVector<int64_t> shape;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    shape.push_back(isNew[i] ? 1 : in[next++]);
  return reshapeTo(shape);
}

LogicalResult Importer::squeeze() {
  Slot *s = input(0);
  if (!s)
    return failure();
  ArrayRef<int64_t> in = s->type().getShape();
  int64_t rank = in.size();
  SmallVector<bool> drop(rank, false);
  bool attrAxes = opset < 13 && findAttr("axes");
  if (hasInput(1) || attrAxes) {
    // Before opset 13 the axes are an attribute.
    FailureOr<SmallVector<int64_t>> axes =
        attrAxes ? FailureOr<SmallVector<int64_t>>(attrInts("axes", {}))
                 : constInts(1, "axes");
    if (failed(axes) || attrFailed)
      return failure();
    for (int64_t a : *axes) {
      int64_t n = a < 0 ? a + rank : a;
      if (n < 0 || n >= rank || in[n] != 1)
        return nodeError() << "axis " << a << " is out of range or not of "
                           << "size 1 in " << shapeStr(in);
      drop[n] = true;
    }
  } else {
    for (int64_t i = 0; i < rank; ++i)
      drop[i] = in[i] == 1;
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i)
    if (!drop[i])
      shape.push_back(in[i]);
  return reshapeTo(shape);
}

LogicalResult Importer::concat() {
  if (!findAttr("axis"))
    return nodeError() << "attribute 'axis' is required";
  int64_t axis = attrInt("axis", 0);
  if (attrFailed)
    return failure();
  SmallVector<Slot *> ins;
  bool allFoldable = true;
  for (int i = 0; i < node->input_size(); ++i) {
    Slot *s = input(i);
    if (!s)
      return failure();
    allFoldable &= s->isFoldable();
    ins.push_back(s);
  }
  if (ins.empty())
    return nodeError() << "has no inputs";
  RankedTensorType t0 = ins[0]->type();
  int64_t rank = t0.getRank();
  if (axis < -rank || axis >= rank)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << rank;
  if (axis < 0)
    axis += rank;
  SmallVector<int64_t> shape(t0.getShape());
  shape[axis] = 0;
  for (Slot *s : ins) {
    RankedTensorType t = s->type();
    bool ok = t.getRank() == rank && t.getElementType() == t0.getElementType();
    for (int64_t i = 0; ok && i < rank; ++i)
      ok = i == axis || t.getDimSize(i) == t0.getDimSize(i);
    if (!ok)
      return nodeError() << "inputs of types " << t0 << " and " << t
                         << " cannot be concatenated along axis " << axis;
    shape[axis] += t.getDimSize(axis);
  }
  if (!allFoldable) {
    // Data: dlgraph.concat of the inputs that are not empty along the axis.
    SmallVector<Value> vals;
    for (Slot *s : ins)
      if (s->type().getDimSize(axis) != 0 || ins.size() == 1)
        vals.push_back(materialize(*s));
    if (vals.empty())
      vals.push_back(materialize(*ins[0]));
    if (vals.size() == 1 && vals[0].getType() == RankedTensorType::get(
                                                     shape, t0.getElementType()))
      return define(0, vals[0]);
    auto type = RankedTensorType::get(shape, t0.getElementType());
    return define(0, gr::ConcatOp::create(builder, nodeLoc, type, vals,
                                          builder.getI64IntegerAttr(axis)));
  }
  int64_t outer = product(ArrayRef<int64_t>(shape).take_front(axis));
  SmallVector<Attribute> out;
  SmallVector<SmallVector<Attribute>> vals;
  for (Slot *s : ins)
    vals.emplace_back(s->constant.getValues<Attribute>());
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t k = 0; k < ins.size(); ++k) {
      int64_t chunk =
          ins[k]->type().getNumElements() / std::max<int64_t>(outer, 1);
      for (int64_t j = 0; j < chunk; ++j)
        out.push_back(vals[k][o * chunk + j]);
    }
  }
  auto type = RankedTensorType::get(shape, t0.getElementType());
  return defineConstant(0, DenseElementsAttr::get(type, out));
}

Slot Importer::stridedSlice(Slot &s, ArrayRef<int64_t> starts,
                            ArrayRef<int64_t> steps, ArrayRef<int64_t> shape) {
  RankedTensorType in = s.type();
  auto type = RankedTensorType::get(shape, in.getElementType());
  bool whole = in.getShape() == shape;
  for (size_t d = 0; whole && d < starts.size(); ++d)
    whole = shape[d] <= 1 || (starts[d] == 0 && steps[d] == 1);
  if (whole)
    return s;
  Slot out;
  out.loc = nodeLoc;
  if (s.isFoldable()) {
    SmallVector<Attribute> vals(s.constant.getValues<Attribute>());
    SmallVector<Attribute> res;
    int64_t n = product(shape), rank = shape.size();
    SmallVector<int64_t> idx(rank, 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t lin = 0;
      for (int64_t d = 0; d < rank; ++d)
        lin = lin * in.getDimSize(d) + starts[d] + steps[d] * idx[d];
      res.push_back(vals[lin]);
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++idx[d] < shape[d])
          break;
        idx[d] = 0;
      }
    }
    out.constant = DenseElementsAttr::get(type, res);
    return out;
  }
  SmallVector<int64_t> st(starts);
  for (size_t d = 0; d < st.size(); ++d)
    if (shape[d] == 0)
      st[d] = 0;
  out.value = gr::SliceOp::create(builder, nodeLoc, type, materialize(s), st,
                                  steps);
  return out;
}

LogicalResult Importer::slice() {
  Slot *s = input(0);
  if (!s)
    return failure();
  RankedTensorType in = s->type();
  int64_t rank = in.getRank();
  SmallVector<int64_t> starts, ends, axes, steps;
  if (opset < 10) {
    if (!findAttr("starts") || !findAttr("ends"))
      return nodeError() << "attributes 'starts' and 'ends' are required "
                            "(opset "
                         << opset << ")";
    starts = attrInts("starts", {});
    ends = attrInts("ends", {});
    axes = attrInts("axes", {});
    if (attrFailed)
      return failure();
  } else {
    auto st = constInts(1, "starts");
    if (failed(st))
      return failure();
    auto en = constInts(2, "ends");
    if (failed(en))
      return failure();
    starts = *st;
    ends = *en;
    if (hasInput(3)) {
      auto ax = constInts(3, "axes");
      if (failed(ax))
        return failure();
      axes = *ax;
    }
    if (hasInput(4)) {
      auto sp = constInts(4, "steps");
      if (failed(sp))
        return failure();
      steps = *sp;
    }
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return nodeError() << "starts, ends, axes and steps have "
                       << starts.size() << ", " << ends.size() << ", "
                       << axes.size() << " and " << steps.size()
                       << " values; they must have the same count";
  SmallVector<int64_t> outStart(rank, 0), outStep(rank, 1),
      shape(in.getShape());
  SmallVector<bool> seen(rank, false);
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t a = axes[k];
    if (a < -rank || a >= rank || seen[a < 0 ? a + rank : a])
      return nodeError() << "axes " << shapeStr(axes)
                         << " are out of range or repeated for rank " << rank;
    if (a < 0)
      a += rank;
    seen[a] = true;
    int64_t dim = in.getDimSize(a), step = steps[k];
    if (step == 0)
      return nodeError() << "step of axis " << a << " is 0";
    // ONNX Slice: negative starts/ends count from the end, then clamp to
    // [0, dim] ([0, dim - 1] and [-1, dim - 1] for negative steps).
    int64_t b = starts[k], e = ends[k];
    if (b < 0)
      b = b < -dim ? 0 : b + dim;
    if (e < 0)
      e = e < -dim ? -1 : e + dim;
    int64_t n;
    if (step > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      n = e > b ? (e - b + step - 1) / step : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      n = b > e ? (b - e + (-step) - 1) / (-step) : 0;
    }
    outStart[a] = n ? b : 0;
    outStep[a] = step;
    shape[a] = n;
  }
  return defineSlot(0, stridedSlice(*s, outStart, outStep, shape));
}

LogicalResult Importer::split() {
  int64_t axis = attrInt("axis", 0);
  SmallVector<int64_t> sizes;
  bool haveSizes = false;
  if (opset < 13 && findAttr("split")) {
    sizes = attrInts("split", {});
    haveSizes = true;
  }
  if (attrFailed)
    return failure();
  Slot *s = input(0);
  if (!s)
    return failure();
  if (opset >= 13 && hasInput(1)) {
    auto sp = constInts(1, "split");
    if (failed(sp))
      return failure();
    sizes = *sp;
    haveSizes = true;
  }
  RankedTensorType in = s->type();
  int64_t rank = in.getRank();
  if (axis < -rank || axis >= rank)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << rank;
  if (axis < 0)
    axis += rank;
  int64_t dim = in.getDimSize(axis), outs = node->output_size();
  if (!haveSizes) {
    if (outs == 0 || dim % outs)
      return nodeError() << "cannot split axis " << axis << " of size " << dim
                         << " into " << outs << " equal parts";
    sizes.assign(outs, dim / outs);
  }
  int64_t total = 0;
  for (int64_t v : sizes) {
    if (v < 0)
      return nodeError() << "split sizes " << shapeStr(sizes)
                         << " must not be negative";
    if (__builtin_add_overflow(total, v, &total))
      return nodeError() << "split sizes " << shapeStr(sizes)
                         << " overflow int64";
  }
  if ((int64_t)sizes.size() != outs || total != dim)
    return nodeError() << "split sizes " << shapeStr(sizes) << " must have "
                       << outs << " entries (one per output) adding up to "
                       << dim;
  int64_t offset = 0;
  for (int64_t o = 0; o < outs; ++o) {
    SmallVector<int64_t> starts(rank, 0), steps(rank, 1),
        shape(in.getShape());
    starts[axis] = sizes[o] ? offset : 0;
    shape[axis] = sizes[o];
    if (failed(defineSlot(o, stridedSlice(*s, starts, steps, shape))))
      return failure();
    offset += sizes[o];
  }
  return success();
}

LogicalResult Importer::pad() {
  std::string mode = attrString("mode", "constant");
  SmallVector<int64_t> pads;
  double value = 0;
  if (opset < 11) {
    if (!findAttr("pads"))
      return nodeError() << "attribute 'pads' is required (opset " << opset
                         << ")";
    pads = attrInts("pads", {});
    value = attrFloat("value", 0.0f);
  }
  if (attrFailed)
    return failure();
  if (mode != "constant" && mode != "edge" && mode != "reflect")
    return nodeError() << "mode '" << mode
                       << "' is not supported; supported: constant, edge, "
                          "reflect";
  Slot *s = input(0);
  if (!s)
    return failure();
  if (opset >= 11) {
    auto p = constInts(1, "pads");
    if (failed(p))
      return failure();
    pads = *p;
    if (hasInput(2)) {
      Slot *c = input(2);
      if (!c)
        return failure();
      if (!c->isFoldable() || c->type().getNumElements() != 1)
        return nodeError() << "constant_value (input '" << node->input(2)
                           << "') must be a constant scalar";
      if (isa<FloatType>(c->type().getElementType()))
        value = (*c->constant.getValues<APFloat>().begin()).convertToDouble();
      else
        value = (double)(*c->constant.getValues<APInt>().begin())
                    .getSExtValue();
    }
  }
  RankedTensorType in = s->type();
  int64_t rank = in.getRank();
  if ((int64_t)pads.size() != 2 * rank)
    return nodeError() << "pads " << shapeStr(pads) << " must have " << 2 * rank
                       << " values (begin and end per axis) for rank " << rank;
  if (llvm::any_of(pads, [](int64_t p) {
        return p < -kMaxElements || p > kMaxElements;
      }))
    return nodeError() << "pads " << shapeStr(pads)
                       << " are too large (at most 2^40 in magnitude)";
  // Negative pads crop: a slice first.
  SmallVector<int64_t> starts(rank, 0), steps(rank, 1), shape(in.getShape());
  for (int64_t d = 0; d < rank; ++d) {
    int64_t b = std::min<int64_t>(pads[d], 0),
            e = std::min<int64_t>(pads[d + rank], 0);
    shape[d] = in.getDimSize(d) + b + e;
    if (shape[d] < 0)
      return nodeError() << "pads " << shapeStr(pads)
                         << " remove more than the " << in.getDimSize(d)
                         << " elements of axis " << d;
    starts[d] = shape[d] ? -b : 0;
  }
  Slot cropped = stridedSlice(*s, starts, steps, shape);
  bool anyPad = llvm::any_of(pads, [](int64_t p) { return p > 0; });
  if (!anyPad)
    return defineSlot(0, cropped);
  Value x = materialize(cropped);
  Type et = in.getElementType();
  if (mode == "constant") {
    SmallVector<int64_t> at(rank), outShape(rank);
    for (int64_t d = 0; d < rank; ++d) {
      at[d] = std::max<int64_t>(pads[d], 0);
      outShape[d] = shape[d] + at[d] + std::max<int64_t>(pads[d + rank], 0);
    }
    auto type = RankedTensorType::get(outShape, et);
    if (llvm::any_of(shape, [](int64_t n) { return n == 0; }))
      return define(0, splatOf(type, value));
    return define(0, gr::PadOp::create(
                         builder, nodeLoc, type, x,
                         builder.getDenseI64ArrayAttr(at),
                         builder.getDenseI64ArrayAttr(steps),
                         builder.getF64FloatAttr(value)));
  }
  // edge / reflect: per axis, concat [head, x, tail] of slices of x.
  for (int64_t d = 0; d < rank; ++d) {
    int64_t b = std::max<int64_t>(pads[d], 0),
            e = std::max<int64_t>(pads[d + rank], 0);
    if (!b && !e)
      continue;
    auto xt = cast<RankedTensorType>(x.getType());
    int64_t n = xt.getDimSize(d);
    if (mode == "edge" ? n < 1 : (n < 2 || b > n - 1 || e > n - 1))
      return nodeError() << "axis " << d << " of size " << n
                         << " cannot be padded by " << b << " and " << e
                         << " in " << mode << " mode"
                         << (mode == "reflect" ? " (pads must be < size)" : "");
    auto part = [&](int64_t start, int64_t step, int64_t count) -> Value {
      SmallVector<int64_t> st(rank, 0), sp(rank, 1), sh(xt.getShape());
      if (mode == "edge") {
        st[d] = start;
        sh[d] = 1;
      } else {
        st[d] = start;
        sp[d] = step;
        sh[d] = count;
      }
      Value v = gr::SliceOp::create(builder, nodeLoc,
                                    RankedTensorType::get(sh, et), x, st, sp);
      if (mode == "edge" && count != 1) {
        sh[d] = count;
        v = gr::BroadcastToOp::create(builder, nodeLoc,
                                      RankedTensorType::get(sh, et), v);
      }
      return v;
    };
    SmallVector<Value> parts;
    if (b)
      parts.push_back(mode == "edge" ? part(0, 1, b) : part(b, -1, b));
    parts.push_back(x);
    if (e)
      parts.push_back(mode == "edge" ? part(n - 1, 1, e) : part(n - 2, -1, e));
    SmallVector<int64_t> sh(xt.getShape());
    sh[d] = n + b + e;
    x = gr::ConcatOp::create(builder, nodeLoc, RankedTensorType::get(sh, et),
                             parts, builder.getI64IntegerAttr(d));
  }
  return define(0, x);
}

LogicalResult Importer::gatherElements() {
  int64_t axis = attrInt("axis", 0);
  if (attrFailed)
    return failure();
  Slot *data = input(0), *idx = data ? input(1) : nullptr;
  if (!data || !idx)
    return failure();
  RankedTensorType dt = data->type(), it = idx->type();
  int64_t rank = dt.getRank();
  if (!it.getElementType().isInteger(64) && !it.getElementType().isInteger(32))
    return nodeError() << "indices have element type " << it.getElementType()
                       << "; supported: int32, int64";
  if (rank == 0 || axis < -rank || axis >= rank || it.getRank() != rank)
    return nodeError() << "axis " << axis << " and indices "
                       << shapeStr(it.getShape()) << " do not fit data "
                       << shapeStr(dt.getShape());
  if (axis < 0)
    axis += rank;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && it.getDimSize(d) > dt.getDimSize(d))
      return nodeError() << "indices " << shapeStr(it.getShape())
                         << " exceed data " << shapeStr(dt.getShape())
                         << " outside axis " << axis;
  auto type = RankedTensorType::get(it.getShape(), dt.getElementType());
  return define(0, gr::GatherElementsOp::create(
                       builder, nodeLoc, type, materialize(*data),
                       materialize(*idx), builder.getI64IntegerAttr(axis)));
}

LogicalResult Importer::castOp() {
  int64_t to = attrInt("to", 0);
  if (attrFailed)
    return failure();
  Slot *s = input(0);
  if (!s)
    return failure();
  Type toType;
  if (node->op_type() == "CastLike") {
    Slot *like = input(1);
    if (!like)
      return failure();
    toType = like->type().getElementType();
  } else {
    toType = elementTypeFor(builder, to);
    if (!toType)
      return nodeError() << "cast to " << onnxTypeName(to)
                         << " is not supported; supported: " << kSupportedTypes;
  }
  Type from = s->type().getElementType();
  if (from == toType)
    return identity();
  auto type = s->type().clone(toType);
  if (!s->isFoldable()) {
    Value x = materialize(*s);
    return define(0, gr::CastOp::create(builder, nodeLoc, type, x));
  }
  // Fold constant casts (shape computations) with ONNX Cast semantics:
  // float -> int truncates toward zero, anything -> bool is "!= 0".
  DenseElementsAttr c = s->constant;
  bool fromFloat = isa<FloatType>(from);
  SmallVector<double> fv;
  SmallVector<int64_t> iv;
  if (fromFloat) {
    for (APFloat v : c.getValues<APFloat>())
      fv.push_back(v.convertToDouble());
  } else if (from.isInteger(1)) {
    for (const APInt &v : c.getValues<APInt>())
      iv.push_back(v.isZero() ? 0 : 1);
  } else {
    iv = intValues(c);
  }
  if (isa<FloatType>(toType)) {
    SmallVector<APFloat> out;
    for (size_t i = 0; i < std::max(fv.size(), iv.size()); ++i) {
      double d = fromFloat ? fv[i] : (double)iv[i];
      out.push_back(toType.isF32() ? APFloat((float)d) : APFloat(d));
    }
    return defineConstant(0, DenseElementsAttr::get(type, out));
  }
  SmallVector<int64_t> out;
  for (size_t i = 0; i < std::max(fv.size(), iv.size()); ++i) {
    if (toType.isInteger(1))
      out.push_back(fromFloat ? fv[i] != 0 : iv[i] != 0);
    else
      out.push_back(fromFloat ? (int64_t)std::trunc(fv[i]) : iv[i]);
  }
  if (toType.isInteger(1)) {
    SmallVector<bool> bv(out.begin(), out.end());
    return defineConstant(0, DenseElementsAttr::get(type, ArrayRef<bool>(bv)));
  }
  return defineConstant(0, intConstant(type, out));
}

//===----------------------------------------------------------------------===//
// Reductions and losses
//===----------------------------------------------------------------------===//

template <typename OpTy>
Value Importer::reduceOver(Value x, ArrayRef<int64_t> axes, bool keepdims) {
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < t.getRank(); ++i) {
    if (!llvm::is_contained(axes, i))
      shape.push_back(t.getDimSize(i));
    else if (keepdims)
      shape.push_back(1);
  }
  return OpTy::create(builder, nodeLoc,
                      RankedTensorType::get(shape, t.getElementType()), x,
                      builder.getDenseI64ArrayAttr(axes),
                      keepdims ? builder.getUnitAttr() : UnitAttr());
}

LogicalResult Importer::reduce() {
  StringRef op = node->op_type();
  int64_t keepdims = attrInt("keepdims", 1);
  int64_t noop = 0;
  SmallVector<int64_t> axes;
  if (op == "ReduceSum" && opset >= 13) {
    // ReduceSum-13 takes the axes as an optional input.
    noop = attrInt("noop_with_empty_axes", 0);
    if (findAttr("axes"))
      return nodeError() << "attribute 'axes' is not part of ReduceSum since "
                            "opset 13; pass the axes as input 1";
    if (hasInput(1)) {
      auto a = constInts(1, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
  } else {
    // The other reductions take axes as an input only from opset 18.
    if (hasInput(1))
      return nodeError() << "axes given as an input (opset 18) are not "
                            "supported; supported opsets are "
                         << kMinOpset << " to " << kMaxOpset
                         << " (the 'axes' attribute)";
    axes = attrInts("axes", {});
  }
  if (attrFailed)
    return failure();
  if (keepdims != 0 && keepdims != 1)
    return nodeError() << "attribute keepdims = " << keepdims
                       << " is not supported; supported: 0, 1";
  Value x = floatOperand(0);
  if (!x)
    return failure();
  auto t = cast<RankedTensorType>(x.getType());
  int64_t rank = t.getRank();
  if (axes.empty()) {
    if (noop)
      return define(0, gr::IdentityOp::create(builder, nodeLoc, x));
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  SmallVector<bool> seen(rank, false);
  for (int64_t &a : axes) {
    int64_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank || seen[n])
      return nodeError() << "axes " << shapeStr(axes)
                         << " are out of range or repeated for rank " << rank;
    seen[n] = true;
    a = n;
  }
  llvm::sort(axes);
  bool keep = keepdims != 0;
  auto elementwise = [&](auto tag, Value a) -> Value {
    using Op = decltype(tag);
    return Op::create(builder, nodeLoc, a.getType(), a);
  };
  auto square = [&](Value a) -> Value {
    return gr::MulOp::create(builder, nodeLoc, a.getType(), a, a);
  };
  Value y;
  if (op == "ReduceSum") {
    y = reduceOver<gr::ReduceSumOp>(x, axes, keep);
  } else if (op == "ReduceMean") {
    y = reduceOver<gr::ReduceMeanOp>(x, axes, keep);
  } else if (op == "ReduceMax") {
    y = reduceOver<gr::ReduceMaxOp>(x, axes, keep);
  } else if (op == "ReduceProd") {
    y = reduceOver<gr::ReduceProdOp>(x, axes, keep);
  } else if (op == "ReduceMin") {
    // min(x) = -max(-x), exact in floating point.
    Value m = reduceOver<gr::ReduceMaxOp>(elementwise(gr::NegOp(), x), axes,
                                          keep);
    y = elementwise(gr::NegOp(), m);
  } else if (op == "ReduceL1") {
    y = reduceOver<gr::ReduceSumOp>(elementwise(gr::AbsOp(), x), axes, keep);
  } else if (op == "ReduceL2") {
    y = elementwise(gr::SqrtOp(),
                    reduceOver<gr::ReduceSumOp>(square(x), axes, keep));
  } else if (op == "ReduceSumSquare") {
    y = reduceOver<gr::ReduceSumOp>(square(x), axes, keep);
  } else if (op == "ReduceLogSum") {
    y = elementwise(gr::LogOp(), reduceOver<gr::ReduceSumOp>(x, axes, keep));
  } else if (op == "ReduceLogSumExp") {
    // Stable: m + log(sum(exp(x - m))) with m = max(x) over the axes.
    Value m = reduceOver<gr::ReduceMaxOp>(x, axes, /*keepdims=*/true);
    Value d = gr::SubOp::create(builder, nodeLoc, t, x, m);
    Value s = reduceOver<gr::ReduceSumOp>(elementwise(gr::ExpOp(), d), axes,
                                          /*keepdims=*/true);
    y = gr::AddOp::create(builder, nodeLoc, m.getType(),
                          elementwise(gr::LogOp(), s), m);
    if (!keep) {
      SmallVector<int64_t> shape;
      for (int64_t i = 0; i < rank; ++i)
        if (!seen[i])
          shape.push_back(t.getDimSize(i));
      y = gr::ReshapeOp::create(
          builder, nodeLoc, RankedTensorType::get(shape, t.getElementType()),
          y);
    }
  } else {
    return nodeError() << "internal error: no decomposition";
  }
  return define(0, y);
}

LogicalResult Importer::lossOp() {
  bool sce = node->op_type() == "SoftmaxCrossEntropyLoss";
  std::string reduction = attrString("reduction", "mean");
  bool hasIgnore = findAttr("ignore_index") != nullptr;
  int64_t ignoreIndex = attrInt("ignore_index", 0);
  if (attrFailed)
    return failure();
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return nodeError() << "attribute reduction = '" << reduction
                       << "' is not supported; supported: none, sum, mean";
  Value x = floatOperand(0);
  if (!x)
    return failure();
  Slot *ts = input(1);
  if (!ts)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  Type et = xt.getElementType();
  RankedTensorType tt = ts->type();
  Type te = tt.getElementType();
  int64_t rank = xt.getRank();
  if (!(te.isInteger(32) || te.isInteger(64)) || te.isInteger(1))
    return nodeError() << "target (input '" << node->input(1)
                       << "') has element type " << te
                       << "; supported: int32, int64";
  if (rank < 2)
    return nodeError() << "input must have rank >= 2 ([N, C, d1, ...]), got "
                       << shapeStr(xt.getShape());
  SmallVector<int64_t> expectT(xt.getShape());
  expectT.erase(expectT.begin() + 1);
  if (tt.getShape() != ArrayRef<int64_t>(expectT))
    return nodeError() << "target has shape " << shapeStr(tt.getShape())
                       << ", expected " << shapeStr(expectT)
                       << " for an input of shape " << shapeStr(xt.getShape());
  int64_t c = xt.getDimSize(1);
  // The loss builds a constant of the class ids (and of the kept classes).
  if (c > kMaxFoldElements)
    return nodeError() << c << " classes are too many (at most 2^26)";
  Value w;
  if (hasInput(2)) {
    // Class weights held by an initializer are constants, not parameters:
    // read through a variable, training would update them.
    Slot *ws = input(2);
    if (!ws)
      return failure();
    if (ws->constant && isa<FloatType>(ws->type().getElementType()))
      w = gr::ConstantOp::create(builder, nodeLoc,
                                 cast<ElementsAttr>(ws->constant));
    else if (!(w = floatOperand(2)))
      return failure();
    auto wt = cast<RankedTensorType>(w.getType());
    if (wt.getElementType() != et || wt.getRank() != 1 || wt.getDimSize(0) != c)
      return nodeError() << "weight has type " << wt << ", expected a [" << c
                         << "] tensor of the input's element type " << et;
  }
  Value target = materialize(*ts);
  if (sce) {
    Value logp = gr::LogSoftmaxOp::create(builder, nodeLoc, xt, x,
                                          builder.getI64IntegerAttr(1));
    if (failed(define(1, logp)))
      return failure();
    x = logp;
  }
  // One-hot mask [N, C, d...]: target (as [N, 1, d...]) == class index
  // ([1, C, 1...]). Targets outside [0, C) (ignore_index) match no class.
  SmallVector<int64_t> cshape(rank, 1);
  cshape[1] = c;
  SmallVector<int64_t> classIds(c);
  for (int64_t i = 0; i < c; ++i)
    classIds[i] = i;
  Value classes = gr::ConstantOp::create(
      builder, nodeLoc,
      cast<ElementsAttr>(intConstant(RankedTensorType::get(cshape, te),
                                     classIds)));
  SmallVector<int64_t> tshape(tt.getShape());
  tshape.insert(tshape.begin() + 1, 1);
  Value tr = gr::ReshapeOp::create(builder, nodeLoc,
                                   RankedTensorType::get(tshape, te), target);
  Value mask = gr::CompareOp::create(
      builder, nodeLoc, xt.clone(builder.getI1Type()), "eq", tr, classes);
  // Per-class weights [1, C, 1...], zero at an in-range ignore_index.
  bool ignoreInRange = hasIgnore && ignoreIndex >= 0 && ignoreIndex < c;
  auto ctype = RankedTensorType::get(cshape, et);
  Value weff;
  if (ignoreInRange) {
    SmallVector<APFloat> keepv;
    for (int64_t i = 0; i < c; ++i) {
      double v = i == ignoreIndex ? 0.0 : 1.0;
      keepv.push_back(et.isF32() ? APFloat((float)v) : APFloat(v));
    }
    weff = gr::ConstantOp::create(
        builder, nodeLoc,
        cast<ElementsAttr>(DenseElementsAttr::get(ctype, keepv)));
  }
  if (w) {
    Value wr = gr::ReshapeOp::create(builder, nodeLoc, ctype, w);
    weff = weff ? Value(gr::MulOp::create(builder, nodeLoc, ctype, wr, weff))
                : wr;
  }
  Value zero = splatOf(RankedTensorType::get({}, et), 0.0);
  Value picked = gr::SelectOp::create(builder, nodeLoc, xt, mask, x, zero);
  if (weff)
    picked = gr::MulOp::create(builder, nodeLoc, xt, picked, weff);
  Value loss = gr::NegOp::create(
      builder, nodeLoc, RankedTensorType::get(expectT, et),
      reduceOver<gr::ReduceSumOp>(picked, {1}, /*keepdims=*/false));
  if (reduction == "none")
    return define(0, loss);
  SmallVector<int64_t> all;
  for (int64_t i = 0; i < (int64_t)expectT.size(); ++i)
    all.push_back(i);
  Value total = reduceOver<gr::ReduceSumOp>(loss, all, /*keepdims=*/false);
  if (reduction == "sum")
    return define(0, total);
  Value denom;
  if (weff) {
    // ONNX: sum(w[t_i] * loss_i) / sum(w[t_i]) over the non-ignored i.
    Value ws = gr::SelectOp::create(builder, nodeLoc, xt, mask, weff, zero);
    SmallVector<int64_t> allX;
    for (int64_t i = 0; i < rank; ++i)
      allX.push_back(i);
    denom = reduceOver<gr::ReduceSumOp>(ws, allX, /*keepdims=*/false);
  } else {
    denom = splatOf(RankedTensorType::get({}, et), (double)product(expectT));
  }
  return define(0, gr::DivOp::create(builder, nodeLoc, total.getType(), total,
                                     denom));
}

//===----------------------------------------------------------------------===//
// Shape-driven ops and normalizations (decompositions)
//===----------------------------------------------------------------------===//

LogicalResult Importer::expand() {
  Slot *s = input(0);
  if (!s)
    return failure();
  auto target = constInts(1, "shape");
  if (failed(target))
    return failure();
  RankedTensorType in = s->type();
  auto shape = broadcastShapes(in.getShape(), *target);
  if (failed(shape))
    return nodeError() << "cannot expand " << shapeStr(in.getShape())
                       << " to " << shapeStr(*target);
  Value x = materialize(*s);
  if (ArrayRef<int64_t>(*shape) == in.getShape())
    return define(0, gr::IdentityOp::create(builder, nodeLoc, x));
  auto out = RankedTensorType::get(*shape, in.getElementType());
  return define(0, gr::BroadcastToOp::create(builder, nodeLoc, out, x));
}

LogicalResult Importer::tile() {
  Slot *s = input(0);
  if (!s)
    return failure();
  auto repeats = constInts(1, "repeats");
  if (failed(repeats))
    return failure();
  RankedTensorType in = s->type();
  ArrayRef<int64_t> dims = in.getShape();
  if ((int64_t)repeats->size() != in.getRank())
    return nodeError() << "repeats " << shapeStr(*repeats)
                       << " must have one value per input dimension (rank "
                       << in.getRank() << ")";
  SmallVector<int64_t> split, wide, out;
  for (auto [d, r] : llvm::zip(dims, *repeats)) {
    if (r < 0)
      return nodeError() << "repeats " << shapeStr(*repeats)
                         << " must not be negative";
    if (r > 0 && d > kMaxElements / r)
      return nodeError() << "repeats " << shapeStr(*repeats)
                         << " make a dimension over 2^40";
    split.append({1, d});
    wide.append({r, d});
    out.push_back(r * d);
  }
  Type et = in.getElementType();
  Value x = materialize(*s);
  if (ArrayRef<int64_t>(out) == dims)
    return define(0, gr::IdentityOp::create(builder, nodeLoc, x));
  // [d0, d1] -> [1, d0, 1, d1] -> [r0, d0, r1, d1] -> [r0*d0, r1*d1].
  Value a = gr::ReshapeOp::create(builder, nodeLoc,
                                  RankedTensorType::get(split, et), x);
  Value b = gr::BroadcastToOp::create(builder, nodeLoc,
                                      RankedTensorType::get(wide, et), a);
  return define(0, gr::ReshapeOp::create(builder, nodeLoc,
                                         RankedTensorType::get(out, et), b));
}

LogicalResult Importer::trilu() {
  int64_t upper = attrInt("upper", 1);
  if (attrFailed)
    return failure();
  int64_t k = 0;
  if (hasInput(1)) {
    auto kv = constInts(1, "k");
    if (failed(kv))
      return failure();
    if (kv->size() != 1)
      return nodeError() << "k must hold one value";
    k = (*kv)[0];
  }
  Value x = operand(0, /*requireF32=*/false);
  if (!x)
    return failure();
  auto t = cast<RankedTensorType>(x.getType());
  if (t.getRank() < 2)
    return nodeError() << "input of rank " << t.getRank()
                       << " is not supported; expected rank >= 2";
  int64_t n = t.getDimSize(t.getRank() - 2), m = t.getDimSize(t.getRank() - 1);
  if (boundedNumElements({n, m}, kMaxFoldElements) < 0)
    return nodeError() << "a Trilu mask of " << n << "x" << m
                       << " is too large (at most 2^26 elements)";
  // Keep (i, j) where j - i >= k (upper) or j - i <= k (lower).
  SmallVector<bool> keep;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      keep.push_back(upper ? j - i >= k : j - i <= k);
  auto maskType = RankedTensorType::get({n, m}, builder.getI1Type());
  Value mask = gr::ConstantOp::create(
      builder, nodeLoc,
      cast<ElementsAttr>(DenseElementsAttr::get(maskType, ArrayRef(keep))));
  Value zero = splatOf(RankedTensorType::get({}, t.getElementType()), 0.0);
  return define(0, gr::SelectOp::create(builder, nodeLoc, t, mask, x, zero));
}

LogicalResult Importer::sizeOp() {
  Slot *s = input(0);
  if (!s)
    return failure();
  auto type = RankedTensorType::get({}, builder.getI64Type());
  return defineConstant(
      0, DenseElementsAttr::get(type, ArrayRef<int64_t>(
                                          {s->type().getNumElements()})));
}

LogicalResult Importer::constantOfShape() {
  auto shape = constInts(0, "shape");
  if (failed(shape))
    return failure();
  for (int64_t d : *shape)
    if (d < 0)
      return nodeError() << "shape " << shapeStr(*shape)
                         << " has a negative dimension";
  Attribute value = builder.getF32FloatAttr(0.0f);
  Type et = builder.getF32Type();
  if (const onnx::AttributeProto *a = findAttr("value")) {
    if (!a->has_t())
      return nodeError() << "attribute 'value' must be a tensor";
    auto c = convertTensor(a->t(), nodeLoc, "value");
    if (failed(c))
      return failure();
    if (c->getNumElements() != 1)
      return nodeError() << "attribute 'value' must hold one element";
    et = c->getElementType();
    value = *c->getValues<Attribute>().begin();
  }
  auto type = RankedTensorType::get(*shape, et);
  return defineConstant(0, DenseElementsAttr::get(type, value));
}

/// EyeLike: ones on diagonal k of a 2-D tensor shaped like the input (whose
/// values are not read), zeros elsewhere; a compile-time constant.
LogicalResult Importer::eyeLike() {
  int64_t k = attrInt("k", 0);
  int64_t dtype = attrInt("dtype", 0);
  if (attrFailed)
    return failure();
  Slot *s = input(0);
  if (!s)
    return failure();
  RankedTensorType in = s->type();
  if (in.getRank() != 2)
    return nodeError() << "input must have rank 2, got "
                       << shapeStr(in.getShape());
  Type et = in.getElementType();
  if (findAttr("dtype")) {
    et = elementTypeFor(builder, dtype);
    if (!et)
      return nodeError() << "dtype " << onnxTypeName(dtype)
                         << " is not supported; supported: " << kSupportedTypes;
  }
  if (boundedNumElements(in.getShape(), kMaxFoldElements) < 0)
    return nodeError() << "an EyeLike constant of shape "
                       << shapeStr(in.getShape())
                       << " is too large (at most 2^26 elements)";
  auto type = RankedTensorType::get(in.getShape(), et);
  int64_t rows = in.getDimSize(0), cols = in.getDimSize(1);
  SmallVector<Attribute> values;
  values.reserve(rows * cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double v = j - i == k ? 1.0 : 0.0;
      if (isa<FloatType>(et))
        values.push_back(builder.getFloatAttr(et, v));
      else
        values.push_back(builder.getIntegerAttr(et, et.isInteger(1)
                                                        ? APInt(1, v != 0)
                                                        : APInt(et.getIntOrFloatBitWidth(), (int64_t)v, true)));
    }
  return defineConstant(0, DenseElementsAttr::get(type, values));
}

LogicalResult Importer::normalization() {
  bool layer = node->op_type() == "LayerNormalization";
  int64_t axis = layer ? attrInt("axis", -1) : 2;
  float eps = attrFloat("epsilon", 1e-5f);
  if (attrFailed)
    return failure();
  Value x = floatOperand(0);
  Value scale = x ? floatOperand(1) : Value();
  if (!scale)
    return failure();
  Value bias;
  if (hasInput(2) && !(bias = floatOperand(2)))
    return failure();
  if (!layer && !bias) {
    (void)input(2); // reports the missing B
    return failure();
  }
  auto t = cast<RankedTensorType>(x.getType());
  int64_t rank = t.getRank();
  if (!layer && rank < 3)
    return nodeError() << "input of rank " << rank
                       << " is not supported; expected [N, C, D1, ...]";
  if (axis < -rank || axis >= rank)
    return nodeError() << "axis " << axis << " is out of range for rank "
                       << rank;
  if (axis < 0)
    axis += rank;
  SmallVector<int64_t> axes;
  for (int64_t i = axis; i < rank; ++i)
    axes.push_back(i);
  // Per-channel scale and bias of InstanceNormalization: [C] -> [C, 1, ...].
  auto perChannel = [&](Value v) -> FailureOr<Value> {
    auto vt = cast<RankedTensorType>(v.getType());
    if (vt.getRank() != 1 || vt.getDimSize(0) != t.getDimSize(1) ||
        vt.getElementType() != t.getElementType())
      return nodeError() << "scale and B must be [" << t.getDimSize(1)
                         << "] of " << t.getElementType() << ", got " << vt;
    SmallVector<int64_t> shape(rank - 1, 1);
    shape[0] = t.getDimSize(1);
    return Value(gr::ReshapeOp::create(
        builder, nodeLoc, RankedTensorType::get(shape, t.getElementType()),
        v));
  };
  auto fitsX = [&](Value v) -> LogicalResult {
    auto vt = cast<RankedTensorType>(v.getType());
    auto b = broadcastShapes(t.getShape(), vt.getShape());
    if (vt.getElementType() != t.getElementType() || failed(b) ||
        ArrayRef<int64_t>(*b) != t.getShape())
      return nodeError() << "scale/B of type " << vt
                         << " does not broadcast to X of type " << t;
    return success();
  };
  if (layer) {
    if (failed(fitsX(scale)) || (bias && failed(fitsX(bias))))
      return failure();
    if (failed(requireOnlyLeadingOutputs(3)))
      return failure();
  } else {
    auto s = perChannel(scale);
    if (failed(s))
      return failure();
    auto b = perChannel(bias);
    if (failed(b))
      return failure();
    scale = *s;
    bias = *b;
    if (failed(requireOnlyLeadingOutputs(1)))
      return failure();
  }
  // mean = E[x], d = x - mean, var = E[d^2], y = d * rsqrt(var + eps).
  Value mean = reduceOver<gr::ReduceMeanOp>(x, axes, /*keepdims=*/true);
  Value d = gr::SubOp::create(builder, nodeLoc, t, x, mean);
  Value sq = gr::MulOp::create(builder, nodeLoc, t, d, d);
  Value var = reduceOver<gr::ReduceMeanOp>(sq, axes, /*keepdims=*/true);
  Value ve = gr::AddOp::create(builder, nodeLoc, var.getType(), var,
                               splatLike(var, eps));
  Value inv = gr::RsqrtOp::create(builder, nodeLoc, ve.getType(), ve);
  Value y = gr::MulOp::create(builder, nodeLoc, t, d, inv);
  y = gr::MulOp::create(builder, nodeLoc, t, y, scale);
  if (bias)
    y = gr::AddOp::create(builder, nodeLoc, t, y, bias);
  if (failed(define(0, y)))
    return failure();
  if (layer) {
    if (failed(define(1, mean)) || failed(define(2, inv)))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

const llvm::StringMap<Importer::Handler> &Importer::handlers() {
  static const llvm::StringMap<Handler> map = {
      {"Abs", &Importer::absOp},
      {"Add", &Importer::binary<gr::AddOp>},
      {"And", &Importer::logical},
      {"Elu", &Importer::activation},
      {"Equal", &Importer::compare},
      {"Erf", &Importer::unary<gr::ErfOp>},
      {"Shrink", &Importer::activation},
      {"EyeLike", &Importer::eyeLike},
      {"GlobalMaxPool", &Importer::globalMaxPool},
      {"DepthToSpace", &Importer::depthSpace},
      {"SpaceToDepth", &Importer::depthSpace},
      {"Sin", &Importer::unary<gr::SinOp>},
      {"Cos", &Importer::unary<gr::CosOp>},
      {"Tan", &Importer::unary<gr::TanOp>},
      {"Asin", &Importer::unary<gr::AsinOp>},
      {"Acos", &Importer::unary<gr::AcosOp>},
      {"Atan", &Importer::unary<gr::AtanOp>},
      {"Sinh", &Importer::unary<gr::SinhOp>},
      {"Cosh", &Importer::unary<gr::CoshOp>},
      {"Asinh", &Importer::unary<gr::AsinhOp>},
      {"Acosh", &Importer::unary<gr::AcoshOp>},
      {"Atanh", &Importer::unary<gr::AtanhOp>},
      {"Greater", &Importer::compare},
      {"GreaterOrEqual", &Importer::compare},
      {"HardSigmoid", &Importer::activation},
      {"HardSwish", &Importer::activation},
      {"LeakyRelu", &Importer::activation},
      {"Less", &Importer::compare},
      {"LessOrEqual", &Importer::compare},
      {"Max", &Importer::variadic<gr::MaxOp>},
      {"Min", &Importer::variadic<gr::MinOp>},
      {"Not", &Importer::logical},
      {"Or", &Importer::logical},
      {"Pow", &Importer::binary<gr::PowOp>},
      {"PRelu", &Importer::prelu},
      {"Reciprocal", &Importer::reciprocal},
      {"Selu", &Importer::activation},
      {"Sign", &Importer::activation},
      {"Sum", &Importer::variadic<gr::AddOp>},
      {"Mean", &Importer::variadic<gr::AddOp>},
      {"ThresholdedRelu", &Importer::activation},
      {"CastLike", &Importer::castOp},
      {"Softplus", &Importer::activation},
      {"Where", &Importer::where},
      {"Xor", &Importer::logical},
      {"AveragePool", &Importer::pool<gr::AveragePoolOp>},
      {"BatchNormalization", &Importer::batchNorm},
      {"Cast", &Importer::castOp},
      {"Clip", &Importer::clip},
      {"Concat", &Importer::concat},
      {"Slice", &Importer::slice},
      {"Split", &Importer::split},
      {"Pad", &Importer::pad},
      {"GatherElements", &Importer::gatherElements},
      {"Constant", &Importer::constant},
      {"Conv", &Importer::conv},
      {"ConvTranspose", &Importer::convTranspose},
      {"Div", &Importer::binary<gr::DivOp>},
      {"Dropout", &Importer::dropout},
      {"Exp", &Importer::unary<gr::ExpOp>},
      {"Flatten", &Importer::flatten},
      {"Gather", &Importer::gather},
      {"Gemm", &Importer::gemm},
      {"GlobalAveragePool", &Importer::globalAveragePool},
      {"Identity", &Importer::identity},
      {"Log", &Importer::unary<gr::LogOp>},
      {"LogSoftmax", &Importer::softmax<gr::LogSoftmaxOp>},
      {"MatMul", &Importer::matmul},
      {"Ceil", &Importer::unary<gr::CeilOp>},
      {"Floor", &Importer::unary<gr::FloorOp>},
      {"Round", &Importer::unary<gr::RoundOp>},
      {"IsNaN", &Importer::isNanOrInf},
      {"IsInf", &Importer::isNanOrInf},
      {"Mod", &Importer::modOp},
      {"Hardmax", &Importer::hardmax},
      {"MaxPool", &Importer::pool<gr::MaxPoolOp>},
      {"Mul", &Importer::binary<gr::MulOp>},
      {"Neg", &Importer::unary<gr::NegOp>},
      {"Relu", &Importer::unary<gr::ReluOp>},
      {"Reshape", &Importer::reshape},
      {"Shape", &Importer::shape},
      {"Sigmoid", &Importer::unary<gr::SigmoidOp>},
      {"Softmax", &Importer::softmax<gr::SoftmaxOp>},
      {"Sqrt", &Importer::unary<gr::SqrtOp>},
      {"Squeeze", &Importer::squeeze},
      {"Sub", &Importer::binary<gr::SubOp>},
      {"Tanh", &Importer::unary<gr::TanhOp>},
      {"Transpose", &Importer::transpose},
      {"Unsqueeze", &Importer::unsqueeze},
      {"ReduceSum", &Importer::reduce},
      {"ReduceMean", &Importer::reduce},
      {"ReduceMax", &Importer::reduce},
      {"ReduceMin", &Importer::reduce},
      {"ReduceProd", &Importer::reduce},
      {"ArgMax", &Importer::argReduce},
      {"ArgMin", &Importer::argReduce},
      {"Range", &Importer::range},
      {"Resize", &Importer::resize},
      {"Upsample", &Importer::resize},
      {"ReduceL1", &Importer::reduce},
      {"ReduceL2", &Importer::reduce},
      {"ReduceSumSquare", &Importer::reduce},
      {"ReduceLogSum", &Importer::reduce},
      {"ReduceLogSumExp", &Importer::reduce},
      {"NegativeLogLikelihoodLoss", &Importer::lossOp},
      {"SoftmaxCrossEntropyLoss", &Importer::lossOp},
      {"Expand", &Importer::expand},
      {"Tile", &Importer::tile},
      {"Trilu", &Importer::trilu},
      {"Size", &Importer::sizeOp},
      {"ConstantOfShape", &Importer::constantOfShape},
      {"LayerNormalization", &Importer::normalization},
      {"InstanceNormalization", &Importer::normalization},
      {"Mish", &Importer::activation},
      {"Softsign", &Importer::activation},
  };
  return map;
}

std::string Importer::supportedOpList() {
  SmallVector<StringRef> names;
  for (const auto &e : handlers())
    names.push_back(e.getKey());
  llvm::sort(names);
  return llvm::join(names, ", ");
}

LogicalResult Importer::importNode(const onnx::NodeProto &n, int index) {
  node = &n;
  attrFailed = false;
  nodeName =
      n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name();
  nodeLoc =
      NameLoc::get(StringAttr::get(ctx, nodeName + "/" + n.op_type()), fileLoc);
  bool defaultDomain = n.domain().empty() || n.domain() == "ai.onnx";
  auto it = handlers().find(n.op_type());
  if (!defaultDomain || it == handlers().end()) {
    std::string op =
        defaultDomain ? n.op_type() : n.domain() + "." + n.op_type();
    return emitError(nodeLoc)
           << "unsupported ONNX op '" << op << "' (node '" << nodeName
           << "', opset " << opset << "); nearest supported alternative: "
           << dlc::nearestSupportedAlternative(defaultDomain ? "" : n.domain(),
                                          n.op_type(), supportedOpSet())
           << "; supported ops: " << supportedOpList();
  }
  return (this->*(it->second))();
}

const llvm::StringSet<> &Importer::supportedOpSet() {
  static const llvm::StringSet<> set = [] {
    llvm::StringSet<> s;
    for (const auto &e : handlers())
      s.insert(e.getKey());
    return s;
  }();
  return set;
}

std::string Importer::unsupportedReason(StringRef opType, bool defaultDomain,
                                        int64_t opset) {
  if (!defaultDomain || !handlers().count(opType))
    return "no importer for this op";
  if (opset >= kMinOpset && opset <= kMaxOpset)
    return "";
  if (opset > kMaxOpset || opset < 1)
    return "opset " + std::to_string(opset) + " is outside " +
           std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset);
  const auto &since = mappedSinceTable();
  auto it = since.find(opType);
  if (it == since.end())
    return "its definition at opset " + std::to_string(opset) +
           " is not mapped (supported from opset " +
           std::to_string(kMinOpset) + ")";
  if (it->second > opset)
    return "its definition at opset " + std::to_string(opset) +
           " is not mapped (supported from opset " +
           std::to_string(it->second) + ")";
  return "";
}

OwningOpRef<ModuleOp> Importer::run(const onnx::ModelProto &model) {
  if (failed(checkOpset(model)))
    return nullptr;
  const onnx::GraphProto &graph = model.graph();

  module = ModuleOp::create(fileLoc);
  OwningOpRef<ModuleOp> owned(module);
  module->setAttr("dlgraph.model_name", builder.getStringAttr(graph.name()));

  if (failed(importInitializers(graph)))
    return nullptr;
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  if (failed(importInputs(graph, argTypes, argNames)))
    return nullptr;

  builder.setInsertionPointToEnd(module.getBody());
  func = func::FuncOp::create(builder, fileLoc, "main",
                              builder.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  for (auto [i, name] : llvm::enumerate(argNames)) {
    func.setArgAttr(i, "dlgraph.name", builder.getStringAttr(name));
    Slot s;
    s.value = entry->getArgument(i);
    s.loc = namedLoc(name);
    slots[name] = s;
  }
  builder.setInsertionPointToEnd(entry);

  // Uses of each value by nodes other than Identity, with Identity outputs
  // counted as their (root) input: PyTorch routes BatchNorm statistics
  // through Identity nodes.
  llvm::StringMap<std::string> identityRoot;
  for (const auto &n : graph.node()) {
    for (const auto &in : n.input())
      consumed.insert(in);
    if (n.op_type() == "Identity" && n.input_size() == 1 &&
        n.output_size() == 1) {
      auto it = identityRoot.find(n.input(0));
      identityRoot[n.output(0)] =
          it == identityRoot.end() ? n.input(0) : it->second;
      continue;
    }
    for (const auto &in : n.input()) {
      auto it = identityRoot.find(in);
      ++useCount[it == identityRoot.end() ? in : it->second];
    }
  }
  for (const auto &out : graph.output())
    consumed.insert(out.name());

  for (auto [i, n] : llvm::enumerate(graph.node()))
    if (failed(importNode(n, i)))
      return nullptr;

  if (graph.output_size() == 0) {
    modelError() << "the graph has no outputs";
    return nullptr;
  }
  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  SmallVector<DictionaryAttr> resultAttrs;
  for (const auto &out : graph.output()) {
    auto it = slots.find(out.name());
    if (it == slots.end()) {
      emitError(namedLoc(out.name()))
          << "graph output '" << out.name() << "' is not produced by any node";
      return nullptr;
    }
    Value v = materialize(it->second);
    results.push_back(v);
    resultTypes.push_back(v.getType());
    resultAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        "dlgraph.name", builder.getStringAttr(out.name()))));
  }
  func::ReturnOp::create(builder, fileLoc, results);
  func.setType(builder.getFunctionType(argTypes, resultTypes));
  func.setAllResultAttrs(resultAttrs);

  if (failed(verify(module)))
    return nullptr;
  return owned;
}

/// Parses the ONNX model bytes |bytes| (named |name| in messages) into
/// |model|, emitting an error at |fileLoc| on failure.
static LogicalResult parseModel(StringRef bytes, StringRef name,
                                Location fileLoc, onnx::ModelProto &model) {
  auto parseError = [&]() {
    return emitError(fileLoc)
           << "cannot parse '" << name << "' as an ONNX model: ";
  };
  if (bytes.size() > (size_t)INT_MAX)
    return parseError() << "files over 2 GiB are not supported";
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return parseError() << "invalid or truncated protobuf data ("
                        << bytes.size() << " bytes)";
  // Protobuf accepts many byte strings (an empty file, a file cut at a field
  // boundary), so check what every model must have.
  if (model.ir_version() < 3)
    return parseError() << "missing or unsupported ir_version "
                        << model.ir_version();
  if (!model.has_graph())
    return parseError() << "the model has no graph";
  return success();
}

/// Reads and parses the ONNX model at |path| into |model|, emitting an error
/// at |fileLoc| on failure.
static LogicalResult loadModel(StringRef path, Location fileLoc,
                               onnx::ModelProto &model) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (std::error_code ec = buffer.getError())
    return emitError(fileLoc) << "cannot open '" << path
                              << "': " << ec.message();
  return parseModel((*buffer)->getBuffer(), path, fileLoc, model);
}

OwningOpRef<ModuleOp> dlc::importONNXModel(MLIRContext &context, StringRef path,
                                           const ImportOptions &options) {
  context.loadDialect<graph::GraphDialect, func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(&context, path, 0, 0);
  onnx::ModelProto model;
  if (failed(loadModel(path, fileLoc, model)))
    return nullptr;
  Importer importer(context, path, options);
  return importer.run(model);
}

OwningOpRef<ModuleOp> dlc::importONNXModelFromBytes(
    MLIRContext &context, StringRef bytes, StringRef name,
    const ImportOptions &options) {
  context.loadDialect<graph::GraphDialect, func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(&context, name, 0, 0);
  onnx::ModelProto model;
  if (failed(parseModel(bytes, name, fileLoc, model)))
    return nullptr;
  Importer importer(context, name, options);
  return importer.run(model);
}

FailureOr<dlc::ONNXModelCheck>
dlc::checkONNXModel(MLIRContext &context, StringRef path,
                    const ImportOptions &options) {
  context.loadDialect<graph::GraphDialect, func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(&context, path, 0, 0);
  onnx::ModelProto model;
  if (failed(loadModel(path, fileLoc, model)))
    return failure();
  ONNXModelCheck check;
  for (const auto &imp : model.opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx")
      check.opset = imp.version();
  const onnx::GraphProto &graph = model.graph();
  check.numNodes = graph.node_size();
  llvm::StringMap<size_t> index;
  for (auto [i, n] : llvm::enumerate(graph.node())) {
    bool defaultDomain = n.domain().empty() || n.domain() == "ai.onnx";
    std::string domain = defaultDomain ? "" : n.domain();
    std::string key = domain + "\n" + n.op_type();
    auto [it, inserted] = index.try_emplace(key, check.ops.size());
    if (inserted) {
      ONNXOpStatus status;
      status.domain = domain;
      status.opType = n.op_type();
      status.unsupportedReason =
          Importer::unsupportedReason(n.op_type(), defaultDomain, check.opset);
      if (!status.unsupportedReason.empty() &&
          !Importer::supportedOpSet().contains(n.op_type()))
        status.alternative = nearestSupportedAlternative(
            domain, n.op_type(), Importer::supportedOpSet());
      check.ops.push_back(std::move(status));
    }
    check.ops[it->second].nodes.push_back(
        n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name());
  }

  // Import with errors captured (notes and warnings are dropped).
  ImportOptions importOptions = options;
  if (importOptions.batchSize == 0) {
    for (const auto &in : graph.input()) {
      const auto &type = in.type();
      if (!type.has_tensor_type() || !type.tensor_type().has_shape() ||
          type.tensor_type().shape().dim_size() == 0)
        continue;
      if (!type.tensor_type().shape().dim(0).has_dim_value())
        importOptions.batchSize = 1;
    }
  }
  ScopedDiagnosticHandler capture(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error &&
        check.importError.empty())
      check.importError = diag.str();
    return success();
  });
  Importer importer(context, path, importOptions);
  OwningOpRef<ModuleOp> module = importer.run(model);
  if (!module && check.importError.empty())
    check.importError = "the import failed without a message";
  return check;
}
