//===- Importer.h - The ONNX importer's internals -------------*- C++ -*-===//
//
// Shared by the importer's files and not installed: the Importer class,
// what a value name stands for while importing (Slot), the registration
// table of op handlers (OpMapping, OpRegistry) and the helpers every op
// family uses. ONNXImporter.cpp holds the model-level steps and the public
// entry points; each op family has its file (Elementwise.cpp, Linear.cpp,
// Conv.cpp, Normalization.cpp, Attention.cpp, Pool.cpp, DataMovement.cpp, Indexing.cpp,
// Reductions.cpp, Losses.cpp, Constants.cpp, ControlFlow.cpp, Recurrent.cpp,
// Spectral.cpp) with its handlers and its
// registration entries; ExternalData.cpp reads tensors stored in external
// data files.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_IMPORT_IMPORTER_H
#define DLC_COMPILER_IMPORT_IMPORTER_H

#include "compiler/Import/ONNXImporter.h"
#include "dialects/Graph/GraphOps.h"
#include "runtime/schema/Semantics/Broadcast.h"
#include "runtime/schema/Semantics/ResizeCoordinates.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/MemoryBuffer.h"

#include "onnx/onnx_pb.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

// DLC_ONNX_NEWEST_OPSET (the table itself is read in ONNXImporter.cpp).
#include "compiler/Import/OnnxOpVersions.inc"

namespace dlc::onnx_import {

/// The ai.onnx opsets the importer reads: kMinOpset to the newest opset of
/// the ONNX release whose schemas OnnxOpVersions.inc was generated from.
/// Older opsets are accepted per op (OpMapping::mappedSince); from opset 18
/// on, per op and version (OpMapping::newestVersion).
constexpr int64_t kMinOpset = 13;
constexpr int64_t kMaxOpset = DLC_ONNX_NEWEST_OPSET;
/// The newest opset whose schemas libonnx 1.12 (the protobuf classes the
/// importer reads with) knows; the definitions up to it are the ones the
/// handlers were first written against.
constexpr int64_t kLibOnnxOpset = 17;
/// Tensors the importer accepts have at most 2^40 elements: far beyond any
/// model, and small enough that products of a few such element counts or
/// dims never overflow int64.
constexpr int64_t kMaxElements = int64_t(1) << 40;
/// Constants the importer builds element by element (folded shape
/// computations, masks, EyeLike) have at most 2^26 elements.
constexpr int64_t kMaxFoldElements = int64_t(1) << 26;
/// Scan, Loop and the recurrent ops (RNN, GRU, LSTM) are unrolled at import:
/// the graph holds one copy of the body per step, so the number of steps is
/// bounded.
constexpr int64_t kMaxUnrollSteps = 1024;
/// f32 initializers in external data files above this many bytes become
/// `dense_resource` blobs that view the mapped file (no copy); smaller ones
/// (Clip bounds, Resize scales, OneHot values: what handlers read at import)
/// are copied into dense attributes as inline data is.
constexpr int64_t kMinExternalResourceBytes = 1024;

/// The element count of |shape|, or -1 when a dim is negative or the count
/// exceeds |limit|.
int64_t boundedNumElements(llvm::ArrayRef<int64_t> shape,
                           int64_t limit = kMaxElements);

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
    "float (f32), double (f64), float16 (f16), bfloat16 (bf16), int32, "
    "int64, bool";

/// The dlgraph element type of an ONNX TensorProto element type, or null
/// when it is not one of kSupportedTypes.
mlir::Type elementTypeFor(mlir::Builder &b, int32_t t);

/// True for the 16-bit float element types (f16, bf16: ONNX FLOAT16 and
/// BFLOAT16). Only elementwise and data-movement dlgraph ops take them so
/// far (see Importer::checkLowPrecision).
bool isLowPrecisionFloat(mlir::Type t);

/// True for the element types of arithmetic operands: f32, f64, f16, bf16,
/// i32, i64 (everything in kSupportedTypes but bool).
bool isNumeric(mlir::Type t);

/// The ONNX spelling of a dlgraph element type, for diagnostics: "float16",
/// "bfloat16", "float (f32)", "double (f64)", "int32", "int64", "bool".
std::string elementTypeName(mlir::Type t);

/// The values of an integer constant, sign-extended to int64.
llvm::SmallVector<int64_t> intValues(mlir::DenseElementsAttr c);

/// An integer constant of |type| (any integer element type) from int64s.
mlir::DenseElementsAttr intConstant(mlir::RankedTensorType type,
                                    llvm::ArrayRef<int64_t> v);

/// Renders a shape as "[2, 3, 4]" for diagnostics.
std::string shapeStr(llvm::ArrayRef<int64_t> shape);

/// The ONNX spelling of a TensorProto element type, for diagnostics.
std::string onnxTypeName(int32_t t);

/// The product of |dims| (unchecked: callers pass bounded shapes).
int64_t product(llvm::ArrayRef<int64_t> dims);

class Importer;

/// One entry of the importer's registration table: an ONNX op type of the
/// ai.onnx domain and how it is imported. The table (OpRegistry) drives node
/// import, the opset check, `dlc --check` (checkONNXModel), the supported-op
/// list (supportedONNXOps) and the nearest supported alternative
/// (OpAlternatives.cpp).
struct OpMapping {
  /// The ONNX op type, e.g. "Conv".
  llvm::StringLiteral opType;
  /// The first opset whose definition of the op the handler maps exactly.
  /// An older opset is accepted when every node's op has, at that opset, a
  /// definition this importer maps exactly: either the op has had its
  /// opset-13 definition since then (later versions only added element types
  /// such as bfloat16 or int8), or its handler reads the old definition
  /// (legacy `broadcast`/`axis` of Add/Sub/Mul/Div/Pow before 7, Softmax and
  /// LogSoftmax's 2-D coercion before 13, Clip's attributes before 11,
  /// Squeeze/Unsqueeze/ReduceSum `axes` attributes before 13, Dropout and
  /// BatchNormalization's `is_test` before 7, `spatial` before 9, PRelu's
  /// per-channel slope before 7). kMinOpset for ops mapped from opset 13
  /// only.
  int64_t mappedSince;
  /// Imports the current node (see Importer).
  mlir::LogicalResult (Importer::*handler)();
  /// The newest definition version of the op (the opset at which it was
  /// defined, OnnxOpVersions.inc) that the handler reads. 0: the op's
  /// definition at opset kLibOnnxOpset (or at mappedSince, for an op defined
  /// later). A model opset whose definition of the op is newer is accepted
  /// when every definition in between kept the signature (see
  /// opVersionIssue).
  int64_t newestVersion = 0;
};

/// The version of ONNX op |opType| (ai.onnx) that |opset| defines: the
/// newest `since` version at or below |opset|, or 0 when the op does not
/// exist at that opset (or is unknown to the schemas).
int64_t opVersionAt(llvm::StringRef opType, int64_t opset);

/// The newest definition version of its op that |mapping|'s handler reads
/// (OpMapping::newestVersion, or its default).
int64_t newestMappedVersion(const OpMapping &mapping);

/// Why |mapping|'s handler cannot import the op's definition at |opset|
/// (>= kMinOpset), or "" when it can: a definition after the handler's
/// newestVersion changed the op's inputs, outputs or attributes. The reason
/// names the version and the newest opset that still works.
std::string opVersionIssue(const OpMapping &mapping, int64_t opset);

/// What an ONNX value name stands for while importing. A name can have known
/// contents (`constant`: initializers, Constant nodes, folded shape
/// computations), be an f32 initializer read through a variable (`variable`),
/// and/or have an SSA value (`value`, created on first use for the former two).
/// A large f32 initializer in an external data file has `resource` (its
/// initial value, viewing the mapped file) instead of `constant`.
struct Slot {
  mlir::Value value;
  mlir::DenseElementsAttr constant;
  mlir::DenseResourceElementsAttr resource;
  std::string variable;
  mlir::LocationAttr loc;

  mlir::RankedTensorType type() const {
    if (value)
      return mlir::cast<mlir::RankedTensorType>(value.getType());
    if (resource)
      return mlir::cast<mlir::RankedTensorType>(resource.getType());
    return mlir::cast<mlir::RankedTensorType>(constant.getType());
  }
  /// True when the contents are known and may be folded (f32 initializers
  /// are variables: their contents change during training).
  /// Constants above kMaxFoldElements are materialized, never folded.
  bool isFoldable() const {
    return constant && variable.empty() &&
           constant.getNumElements() <= kMaxFoldElements;
  }
};

/// Imports one ONNX model into a dlgraph module: the model-level steps
/// (ONNXImporter.cpp), the node-level helpers every op family uses
/// (Importer.cpp) and one handler per op family member (the family files).
/// A handler imports the current node (`node`): it reads attributes and
/// operands, builds dlgraph ops at `nodeLoc` (or folds constants) and
/// defines the node's outputs; on an unsupported attribute, element type or
/// shape it emits an error at the node and fails.
class Importer {
public:
  /// An importer of the model file |path| (named so in locations and
  /// messages). |forCheck| is true for checkONNXModel: its unsupported-op
  /// error then does not point to `dlc --check`, which is running. Set
  /// externalDataDir before run() to read external data.
  Importer(mlir::MLIRContext &ctx, llvm::StringRef path,
           const dlc::ImportOptions &options, bool forCheck = false)
      : ctx(&ctx), path(path.str()), options(options), forCheck(forCheck),
        builder(&ctx), fileLoc(mlir::FileLineColLoc::get(&ctx, path, 0, 0)) {}

  /// Imports |model| (see importONNXModel); null after an error.
  mlir::OwningOpRef<mlir::ModuleOp> run(const onnx::ModelProto &model);

  /// For checkONNXModel: when set, a node that does not import does not stop
  /// the import. onNodeFailure(node index, dependent) is called after the
  /// node's error was emitted (dependent = false) or, without an error, for
  /// a node not imported because an input comes from a failed node
  /// (dependent = true); the node's outputs count as failed, and run()
  /// returns null at the end.
  std::function<void(int, bool)> onNodeFailure;

  /// Support of op |opType| of |domain| ("" or "ai.onnx": the default
  /// domain) at |opset|: empty when the importer has a handler whose
  /// definition at that opset is mapped, else why not (one sentence, no
  /// alternative).
  static std::string unsupportedReason(llvm::StringRef domain,
                                       llvm::StringRef opType, int64_t opset);

  /// For checkONNXModel --train: signs that an exporter's graph optimizer
  /// (torch.onnx.export's default optimize=True) rewrote |graph|'s
  /// trainable tensors: (initializer, one sentence naming it) per sign
  /// (ExporterSigns.cpp). Conservative: a sign is only reported when an
  /// unoptimized export cannot show it. Reads external data (set
  /// externalDataDir); a tensor whose data cannot be read is skipped.
  std::vector<std::pair<std::string, std::string>>
  exporterOptimizerSigns(const onnx::GraphProto &graph);

  // The registration entries of each op family, one function per family
  // file (named after it); OpRegistry concatenates them into the one table.
  static llvm::ArrayRef<OpMapping> elementwiseOps();
  static llvm::ArrayRef<OpMapping> linearOps();
  static llvm::ArrayRef<OpMapping> convOps();
  static llvm::ArrayRef<OpMapping> normalizationOps();
  static llvm::ArrayRef<OpMapping> attentionOps();
  static llvm::ArrayRef<OpMapping> poolOps();
  static llvm::ArrayRef<OpMapping> dataMovementOps();
  static llvm::ArrayRef<OpMapping> indexingOps();
  static llvm::ArrayRef<OpMapping> reductionOps();
  static llvm::ArrayRef<OpMapping> lossOps();
  static llvm::ArrayRef<OpMapping> constantOps();
  static llvm::ArrayRef<OpMapping> optimizerOps();
  static llvm::ArrayRef<OpMapping> classicalMLOps();
  static llvm::ArrayRef<OpMapping> samplingOps();
  static llvm::ArrayRef<OpMapping> controlFlowOps();
  static llvm::ArrayRef<OpMapping> recurrentOps();
  static llvm::ArrayRef<OpMapping> spectralOps();

private:
  // Diagnostics.
  mlir::InFlightDiagnostic modelError() { return mlir::emitError(fileLoc); }
  /// An error at the current node, prefixed with "<OpType> node '<name>': ".
  mlir::InFlightDiagnostic nodeError() {
    return mlir::emitError(nodeLoc)
           << node->op_type() << " node '" << nodeName << "': ";
  }
  mlir::Location namedLoc(llvm::StringRef name) {
    return mlir::NameLoc::get(mlir::StringAttr::get(ctx, name), fileLoc);
  }

  // Model-level steps.
  mlir::LogicalResult checkOpset(const onnx::ModelProto &model);
  /// The dims of |t| (|what| names it in errors: "initializer"...); an error
  /// on a negative dim or more than 2^60 elements.
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  tensorDims(const onnx::TensorProto &t, mlir::Location loc,
             llvm::StringRef what);
  /// The contents of |t| (inline or in an external data file) as a dense
  /// attribute, in any element type of kSupportedTypes.
  mlir::FailureOr<mlir::DenseElementsAttr>
  convertTensor(const onnx::TensorProto &t, mlir::Location loc,
                llvm::StringRef what);
  /// The |bytes| bytes of |t|'s external data (data_location EXTERNAL):
  /// a view into the file named by its `location` entry, mapped once per
  /// model (|file| receives the mapping, which the view needs alive).
  /// Errors, at |loc|, naming the tensor and the file: no or an empty
  /// `location`, an absolute one, one with a `..` component or one whose
  /// real path is outside the model's folder, a file that cannot be opened
  /// or is not a regular file, an `offset` or `length` that is not a
  /// non-negative decimal integer, a file shorter than offset + length, a
  /// length (default: the rest of the file) other than |bytes|, a model
  /// imported from bytes (no folder to read from).
  mlir::FailureOr<llvm::StringRef>
  externalData(const onnx::TensorProto &t, int64_t bytes, mlir::Location loc,
               llvm::StringRef what,
               std::shared_ptr<llvm::MemoryBuffer> *file = nullptr);
  /// For an f32 initializer |t| in an external data file of more than
  /// kMinExternalResourceBytes bytes, aligned to 4 bytes in its file: a
  /// `dense_resource` attribute whose blob views the mapped file and keeps
  /// the mapping alive; a null attribute for any other tensor (which
  /// convertTensor then copies). Errors as externalData.
  mlir::FailureOr<mlir::DenseResourceElementsAttr>
  externalResource(const onnx::TensorProto &t, mlir::Location loc);
  mlir::LogicalResult importInitializers(const onnx::GraphProto &graph);
  /// Turns the graph inputs options.inputValues names into constant slots
  /// read from their files (see dlc::InputValueBinding).
  mlir::LogicalResult importInputValues(const onnx::GraphProto &graph);
  mlir::LogicalResult importInputs(const onnx::GraphProto &graph,
                                   llvm::SmallVectorImpl<mlir::Type> &types,
                                   llvm::SmallVectorImpl<std::string> &names);
  mlir::LogicalResult importNode(const onnx::NodeProto &n, int index);
  /// Folds, through the dlgraph ops' folders, every op the current node
  /// created in |block| after |before| (null: from the block's start) whose
  /// operands are all foldable constants (dlgraph.constant of at most
  /// kMaxFoldElements elements; f32 initializers are variables and never
  /// fold), and turns the node's outputs that became constants into constant
  /// Slots. Fails when an input admitted only because it would fold
  /// (deferredInputs) leaves an output unfolded.
  mlir::LogicalResult foldNode(mlir::Block *block, mlir::Operation *before);
  /// Fails, with an error at the node, when an op the current node left in
  /// |block| after |before| (null: from the block's start) has an f16 or
  /// bf16 operand or result but is not an op the lowering takes them in
  /// yet: only elementwise and data-movement ops do; ops that accumulate
  /// (recompute cost Moderate or Expensive, asked of the op as the lowering
  /// asks it) do not. Runs after foldNode: what folded away needs no
  /// kernel.
  mlir::LogicalResult checkLowPrecision(mlir::Block *block,
                                        mlir::Operation *before);
  /// Emits the error for input |i| of the current node, of element type
  /// f16 or bf16, which the node's import does not take yet; |supported|
  /// lists the element types it takes.
  mlir::InFlightDiagnostic unsupportedLowPrecision(int i,
                                                   llvm::StringRef supported);

  // Attributes of the current node. A wrong attribute type emits an error and
  // sets |attrFailed|; callers check it once after reading all attributes.
  const onnx::AttributeProto *findAttr(llvm::StringRef name);
  int64_t attrInt(llvm::StringRef name, int64_t def);
  float attrFloat(llvm::StringRef name, float def);
  llvm::SmallVector<int64_t> attrInts(llvm::StringRef name,
                                      llvm::ArrayRef<int64_t> def);
  std::string attrString(llvm::StringRef name, llvm::StringRef def);

  // Inputs and outputs of the current node.
  bool hasInput(int i) {
    return i < node->input_size() && !node->input(i).empty();
  }
  Slot *input(int i);
  mlir::Value operand(int i, bool requireF32 = true);
  /// Reads input |i| as a constant int64 tensor (shape-like operands).
  mlir::FailureOr<llvm::SmallVector<int64_t>> constInts(int i,
                                                        llvm::StringRef what);
  /// For an error saying that input |i| must be a compile-time constant:
  /// when that input is a graph input, or is computed only from integer
  /// graph inputs (through any nodes; Shape and Size read no values),
  /// "; give graph input 'X' its value at compile time with --input-value
  /// X=FILE" naming each (else empty), to append.
  std::string constantInputHint(int i);
  mlir::LogicalResult define(int out, mlir::Value v);
  mlir::LogicalResult defineConstant(int out, mlir::DenseElementsAttr c);
  mlir::LogicalResult defineSlot(int out, const Slot &s);
  /// Fails unless outputs |first|.. of the node are absent or unused.
  mlir::LogicalResult requireOnlyLeadingOutputs(int first);
  mlir::Value materialize(Slot &s);
  /// Reshapes input 0 to |shape| (folds constants) and defines output 0.
  mlir::LogicalResult reshapeTo(llvm::ArrayRef<int64_t> shape);

  // Op handlers.
  template <typename OpTy> mlir::LogicalResult unary();
  /// Abs, Neg: float, int32 or int64 (integers wrap: -INT_MIN == INT_MIN).
  template <typename OpTy> mlir::LogicalResult numericUnary();
  template <typename OpTy> mlir::LogicalResult binary();
  /// Max/Min over any number of broadcasting inputs.
  template <typename OpTy> mlir::LogicalResult variadic();
  mlir::LogicalResult compare();
  /// Not, And, Or, Xor on bool tensors.
  mlir::LogicalResult logical();
  mlir::LogicalResult where();
  mlir::LogicalResult reciprocal();
  /// Elu, Selu, LeakyRelu, Softplus, HardSigmoid, HardSwish, decomposed
  /// into elementwise dlgraph ops.
  mlir::LogicalResult activation();
  mlir::LogicalResult prelu();
  /// Input |i|, which must have a float element type (f32 or f64).
  mlir::Value floatOperand(int i);
  /// Input |i|, which must have a float, int32 or int64 element type.
  mlir::Value numericOperand(int i);
  /// A splat dlgraph.constant of |t| (float, integer or bool) holding |v|.
  mlir::Value splatOf(mlir::RankedTensorType t, double v);
  mlir::Value splatLike(mlir::Value like, double v);
  mlir::LogicalResult foldIntBinary(Slot &l, Slot &r);
  mlir::LogicalResult gemm();
  mlir::LogicalResult matmul();
  /// Einsum (any number of inputs, "..." broadcasting, repeated labels as
  /// diagonals) as transposes, reshapes, reduce_sums and matmuls (f32) or
  /// broadcast products (other types).
  mlir::LogicalResult einsum();
  /// Det of [..., n, n] inputs, n <= 4, by Laplace expansion (slices, mul,
  /// add, sub).
  mlir::LogicalResult det();
  /// IsNaN and IsInf as comparisons (x != x; x == +-inf).
  mlir::LogicalResult isNanOrInf();
  /// Mod: dlgraph.fmod (fmod = 1) or dlgraph.mod (fmod = 0).
  mlir::LogicalResult modOp();
  /// BitwiseAnd/Or/Xor/Not and BitShift on int32/int64 (two's complement).
  mlir::LogicalResult bitwise();
  /// BitCast between the 32- or 64-bit int and float types.
  mlir::LogicalResult bitcastOp();
  /// Hardmax (opset 13, any axis): one-hot of the first maximum, as
  /// arg_max == iota along the axis.
  mlir::LogicalResult hardmax();
  mlir::LogicalResult conv();
  /// For a 1-D Conv/pool (rank-3 input): rewrites the given 1-D attributes
  /// (kernel_shape, strides, dilations: 1 value; pads: 2) as 2-D ones over
  /// an inserted H axis of size 1.
  mlir::LogicalResult liftTo2D(llvm::SmallVectorImpl<int64_t> &kernel,
                               llvm::SmallVectorImpl<int64_t> &strides,
                               llvm::SmallVectorImpl<int64_t> &pads,
                               llvm::SmallVectorImpl<int64_t> &dilations);
  /// Sets |pads| ([begin..., end...]) for auto_pad SAME_UPPER (|lower|
  /// false) or SAME_LOWER over the spatial sizes |in|, axis by axis with
  /// semantics::sameAutoPads. An axis whose kernel, stride or dilation is
  /// out of range gets pads 0: the caller's checks of those attributes (or
  /// of the window) then report it.
  void setSameAutoPads(llvm::ArrayRef<int64_t> in,
                       llvm::ArrayRef<int64_t> kernel,
                       llvm::ArrayRef<int64_t> strides,
                       llvm::ArrayRef<int64_t> dilations, bool lower,
                       llvm::SmallVectorImpl<int64_t> &pads);
  /// |v| ([N, C, L]) reshaped to [N, C, 1, L].
  mlir::Value insertUnitH(mlir::Value v);
  /// |v| ([N, C, 1, L], from a lifted 1-D node) reshaped to [N, C, L].
  mlir::Value dropUnitH(mlir::Value v);
  /// ConvTranspose (1-D/2-D/3-D) as dlgraph.conv_backward_data (+ bias add).
  mlir::LogicalResult convTranspose();
  mlir::LogicalResult batchNormWithStatistics(float epsilon, float momentum);
  mlir::LogicalResult batchNorm();
  mlir::LogicalResult clip();
  /// MaxPool, AveragePool, and LpPool (OpTy AveragePoolOp, p from opset
  /// 11, dilations and ceil_mode from 18) over 1-D to 3-D windows.
  template <typename OpTy> mlir::LogicalResult pool();
  /// MaxPool's Indices output for 2-D pooling of |x| [N, C, H, W]: flat
  /// indices into the input, row major (|storageOrder| 0) or with each plane
  /// column major (1), as i64. Fails (a node error) when the N x C plane
  /// offsets would exceed kMaxFoldElements.
  mlir::FailureOr<mlir::Value>
  maxPoolFlatIndices(mlir::Value x, llvm::ArrayRef<int64_t> kernel,
                     llvm::ArrayRef<int64_t> strides,
                     llvm::ArrayRef<int64_t> pads,
                     llvm::ArrayRef<int64_t> dilations, bool ceilMode,
                     int64_t storageOrder);
  /// Window sums of |x| ([N, C, H, W] or [N, C, D, H, W]; |pads| begin...
  /// end..., |kernel| one per spatial axis) as depthwise dlgraph.conv with a
  /// filter of ones; ceil_mode's partial last window sums what it covers.
  /// The window attributes must be valid (pool() checks them).
  mlir::Value sumPool(mlir::Value x, llvm::ArrayRef<int64_t> kernel,
                      llvm::ArrayRef<int64_t> strides,
                      llvm::ArrayRef<int64_t> pads,
                      llvm::ArrayRef<int64_t> dilations, bool ceilMode);
  mlir::LogicalResult globalAveragePool();
  mlir::LogicalResult globalMaxPool();
  mlir::LogicalResult eyeLike();
  mlir::LogicalResult depthSpace();
  mlir::LogicalResult flatten();
  mlir::LogicalResult reshape();
  template <typename OpTy> mlir::LogicalResult softmax();
  mlir::LogicalResult constant();
  mlir::LogicalResult identity();
  mlir::LogicalResult dropout();
  mlir::LogicalResult transpose();
  mlir::LogicalResult shape();
  mlir::LogicalResult gather();
  mlir::LogicalResult unsqueeze();
  mlir::LogicalResult squeeze();
  mlir::LogicalResult concat();
  /// Slice (opset 10+: constant starts/ends/axes/steps inputs; opset 1-9:
  /// attributes), folded on constants, else dlgraph.slice.
  mlir::LogicalResult slice();
  /// Split (opset 13+: constant `split` input; 2-12: attribute; without
  /// sizes, equal parts before opset 18 and `num_outputs` parts of
  /// ceil(size / num_outputs), the last smaller, from 18) as slices.
  mlir::LogicalResult split();
  /// Normalizes |axes| (negative ones count from the end) in place for a
  /// tensor of |rank|; an axis out of range or repeated is a node error.
  /// |seen|, when given, gets one flag per axis of the tensor.
  mlir::LogicalResult normalizeAxes(llvm::SmallVectorImpl<int64_t> &axes,
                                    int64_t rank,
                                    llvm::SmallVectorImpl<bool> *seen = nullptr);
  /// |v| reshaped to |shape| (a dlgraph.reshape), or |v| when it has it.
  mlir::Value reshapeIfNeeded(mlir::Value v, llvm::ArrayRef<int64_t> shape);
  /// The sizes of |n| parts of |dim| elements as opset 18's Split and
  /// SplitToSequence cut them: ceil(dim / n) each, the last one smaller.
  mlir::FailureOr<llvm::SmallVector<int64_t>> ceilParts(int64_t dim,
                                                        int64_t n);
  /// SplitToSequence with a constant `split` (or none: parts of size 1,
  /// squeezed unless keepdims) into a sequence of slices held at import
  /// time (`sequences`); the sequence is never a run-time value.
  mlir::LogicalResult splitToSequence();
  /// SequenceAt with a constant position (negative counts from the end) on
  /// a sequence held at import time.
  mlir::LogicalResult sequenceAt();
  /// GatherND (batch_dims >= 0) as dlgraph.gather on |data| reshaped to
  /// [batch * indexed, rest...] by a flat i64 index computed from the
  /// index tuples (each component normalized from negative; a tuple with
  /// a component out of range reads 0, as dlgraph.gather does); folded when
  /// both inputs are constants. Gradients are dlgraph.gather's.
  mlir::LogicalResult gatherND();
  /// Pad (opset 11+: constant pads/constant_value inputs; 2-10: attributes)
  /// in constant, edge, reflect and wrap mode: negative pads crop with a slice;
  /// constant mode is dlgraph.pad, edge/reflect/wrap are concats of slices.
  mlir::LogicalResult pad();
  /// ScatterND (reduction none, add or mul; max and min from opset 18) with
  /// constant indices (bounds-checked): folded on constant data and
  /// updates; with run-time data or updates (reduction none only), a
  /// dlgraph.select between data and a dlgraph.gather of the last update of
  /// each written row. Run-time indices (reduction none or add, float
  /// data): scatterRowsAtRunTime.
  mlir::LogicalResult scatterND();
  /// ScatterND's and ScatterElements' inputs (data, indices, updates) into
  /// |in|, with the checks they share: |folds| when all three fold,
  /// |runtimeIndices| when the indices do not (then reduction none or add
  /// on f32 data only), no other reduction on run-time data, int32/int64
  /// indices and updates of data's element type.
  mlir::LogicalResult scatterInputs(Slot *(&in)[3], llvm::StringRef reduction,
                                    bool &folds, bool &runtimeIndices);
  /// ScatterElements (any axis; reduction none, add and mul from opset 16,
  /// max and min from 18) with constant indices (bounds-checked), as
  /// ScatterND writing single elements: folded on constant data and
  /// updates; with run-time data or updates (reduction none only), the same
  /// dlgraph.select of a dlgraph.gather. Run-time indices (reduction none or
  /// add, float data): scatterRowsAtRunTime.
  mlir::LogicalResult scatterElements();
  /// Run-time indices |index| (int32/int64) normalized: a negative index
  /// plus |size| (broadcast against |index|), as int64.
  mlir::Value normalizedIndex(mlir::Value index, mlir::Value size);
  /// scatterRows with run-time |rows| ([U] int64): the updates summed into
  /// their rows with dlgraph.gather_grad (a scatter-add into zeros, which
  /// drops out-of-range rows); reduction add adds that to data, none
  /// selects it where a row was written (counted by a second scatter-add of
  /// ones) and data elsewhere. ONNX leaves repeated indices under 'none'
  /// undefined; here their updates add up.
  mlir::LogicalResult scatterRowsAtRunTime(Slot &data, Slot &updates,
                                           mlir::Value rows, int64_t k,
                                           llvm::StringRef reduction);
  /// Shared by scatterND and scatterElements: writes update u (|updates|
  /// flattened to [U, data.shape[k:]...]) into row |rows|[u] of |data|
  /// flattened to [prod(data.shape[:k]), data.shape[k:]...], combining
  /// with |reduction| when |folds| (every input constant), else replacing
  /// (the last writer wins).
  mlir::LogicalResult scatterRows(Slot &data, Slot &updates,
                                  llvm::ArrayRef<int64_t> rows, int64_t k,
                                  llvm::StringRef reduction, bool folds);
  /// Adagrad, Momentum and Adam of ai.onnx.preview.training (Optimizers.cpp):
  /// one update of n f32 tensors, elementwise, with R and T possibly run-time
  /// scalars; the formulas of the ONNX operator docs (Adam's bias correction
  /// R sqrt(1 - beta^T) / (1 - alpha^T) once T > 0).
  mlir::LogicalResult optimizerOp();
  /// ai.onnx.ml Binarizer (x > threshold, in x's type) and
  /// ArrayFeatureExtractor (a gather of the flattened int64 indices on the
  /// last axis; a vector input gives one row), ClassicalML.cpp.
  mlir::LogicalResult binarizer();
  mlir::LogicalResult arrayFeatureExtractor();
  /// GatherElements as dlgraph.gather_elements.
  mlir::LogicalResult gatherElements();
  /// ReverseSequence (run-time sequence_lens) as gather_elements along the
  /// time axis.
  mlir::LogicalResult reverseSequence();
  /// TensorScatter (opset 24, linear or circular, run-time write_indices)
  /// as gather_elements from the update and a select with the past cache.
  mlir::LogicalResult tensorScatter();
  mlir::Value iotaAlong(int64_t rank, int64_t axis, int64_t n);
  mlir::Value perBatch(Slot &s, int64_t rank, int64_t batchAxis);
  /// |s| sliced: result[i] = s[starts + steps * i] with result |shape|;
  /// folded when |s| is foldable, |s| itself when the slice is the whole.
  Slot stridedSlice(Slot &s, llvm::ArrayRef<int64_t> starts,
                    llvm::ArrayRef<int64_t> steps,
                    llvm::ArrayRef<int64_t> shape);
  mlir::LogicalResult castOp();
  /// ReduceSum/Mean/Max/Min/L1/L2/SumSquare/LogSum/LogSumExp (opsets
  /// 13..17: constant axes), decomposed into dlgraph reductions.
  mlir::LogicalResult reduce();
  /// ArgMax/ArgMin (opsets 11..17) on float inputs, as dlgraph.arg_max/min.
  mlir::LogicalResult argReduce();
  /// Range with constant start/limit/delta, folded to a constant.
  mlir::LogicalResult range();
  /// Resize (opsets 11..19) and Upsample (opset 9) with constant scales or
  /// sizes (and roi): modes nearest and linear as dlgraph.resize; cubic,
  /// antialiased downscaling, exclude_outside, half_pixel_symmetric and
  /// tf_crop_and_resize as resizeSeparable.
  mlir::LogicalResult resize();
  /// Resize's roi (input 1) with coordinate_transformation_mode
  /// tf_crop_and_resize: a constant with a start and an end for each of
  /// |axes|, widened to [starts of all |rank| axes, ends] in |roi|.
  mlir::LogicalResult cropAndResizeRoi(bool roiGiven, int64_t rank,
                                       llvm::ArrayRef<int64_t> axes,
                                       llvm::SmallVector<double> &roi);
  /// GridSample (opsets 16..22; 1-D to 3-D spatial, nearest/linear/cubic,
  /// zeros/border/reflection padding) as one dlgraph.gather_elements of
  /// every tap of every output point from X viewed as [N, C, prod(D)],
  /// weighted and summed (Sampling.cpp).
  mlir::LogicalResult gridSample();
  /// AffineGrid (opset 20, constant size): a constant base grid times
  /// theta transposed (dlgraph.matmul).
  mlir::LogicalResult affineGrid();
  /// CenterCropPad (opset 18, constant shape): a centred dlgraph.slice
  /// and/or dlgraph.pad (zeros), any element type.
  mlir::LogicalResult centerCropPad();
  /// Col2Im (opset 18, constant image_shape and block_shape, N-D): each
  /// kernel offset's columns placed by a strided dlgraph.pad in the padded
  /// image, summed, then cropped.
  mlir::LogicalResult col2Im();
  /// DeformConv (opsets 19..22, 2-D): bilinear samples (bilinearZeros) at
  /// the kernel taps moved by the offsets, times the mask, contracted with
  /// W per group by dlgraph.matmul, plus B.
  mlir::LogicalResult deformConv();
  /// RoiAlign (opsets 10..22, a fixed sampling_ratio >= 1, avg or max):
  /// the samples of each roi's bins as bilinear gathers from X gathered by
  /// batch_indices, reduced per bin.
  mlir::LogicalResult roiAlign();
  /// Bilinear samples of |data| ([B, C, h * w], an h x w image per channel)
  /// at pixel coordinates |y|, |x| ([B, Q] f32): [B, C, Q]; taps outside the
  /// image read 0. Four dlgraph.gather_elements.
  mlir::Value bilinearZeros(mlir::Value data, int64_t h, int64_t w,
                            mlir::Value y, mlir::Value x);
  /// |x| (f32) resized to |shape| axis by axis (Sampling.cpp): every axis
  /// whose weights are not the identity is a dlgraph.matmul with a constant
  /// [out, in] matrix (semantics::resizeAxisWeights, by |rule| and the
  /// axis's |scales| entry; |roi|, 2 x rank values or empty, gives each
  /// axis's roiStart/roiEnd), plus |extrapolation| on rows that
  /// tf_crop_and_resize puts outside the input. Errors: another element
  /// type, a matrix over kMaxFoldElements elements.
  mlir::FailureOr<mlir::Value>
  resizeSeparable(mlir::Value x, llvm::ArrayRef<int64_t> shape,
                  llvm::ArrayRef<double> scales,
                  const dlc::semantics::ResizeAxisRule &rule,
                  llvm::ArrayRef<double> roi, double extrapolation);
  /// CumSum (opsets 11..17) as dlgraph.cumsum and CumProd (opset 26) as
  /// dlgraph.cumprod; an axis input known only at
  /// run time selects among the scans along every axis.
  mlir::LogicalResult cumSum();
  /// OneHot (opsets 11..17: constant depth and values inputs) as
  /// dlgraph.one_hot.
  mlir::LogicalResult oneHot();
  /// The rank-0 f32 counter that training-mode Dropout seeds its stream
  /// with: variable @__dropout_step, advanced by 1 each time the function
  /// runs (created on first use).
  mlir::Value dropoutStep();
  mlir::Value dropoutStepValue;
  /// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opsets 13..17),
  /// decomposed into a one-hot select over axis 1 and reductions.
  mlir::LogicalResult lossOp();
  /// Expand (constant shape, ONNX bidirectional broadcast) as broadcast_to.
  mlir::LogicalResult expand();
  /// Tile (constant repeats) as reshape + broadcast_to + reshape.
  mlir::LogicalResult tile();
  /// Trilu (constant k) as a select with a constant [N, M] mask.
  mlir::LogicalResult trilu();
  /// Size, folded to an int64 scalar constant.
  mlir::LogicalResult sizeOp();
  /// ConstantOfShape (constant shape), folded to a splat constant.
  mlir::LogicalResult constantOfShape();
  /// LayerNormalization (opset 17) and InstanceNormalization, decomposed
  /// into reduce_mean, sub, mul, rsqrt and add.
  mlir::LogicalResult normalization();
  /// GroupNormalization (opset 21: per-channel scale and bias), statistics
  /// over [N, num_groups, rest] by reduce_mean.
  mlir::LogicalResult groupNormalization();
  /// MeanVarianceNormalization: (x - E[x]) / (sqrt(Var[x]) + 1e-9) over
  /// `axes`, its function body.
  mlir::LogicalResult meanVarianceNormalization();
  /// LpNormalization (p = 1, 2): x / ||x||_p along `axis` (0 where the norm
  /// is 0).
  mlir::LogicalResult lpNormalization();
  /// LRN: x / (bias + alpha * avg_pool(x^2 over channels))^beta, the
  /// average pool counting the zero padding (sum / size).
  mlir::LogicalResult lrn();
  /// Attention (opset 23): softmax(mask(softcap(Q Kᵀ scale))) V over
  /// [B, H, S, D] heads (3-D inputs split by q_num_heads/kv_num_heads), with
  /// causal, boolean or additive masks, grouped-query K/V heads and a KV
  /// cache (past_key/past_value, present outputs), decomposed into matmul,
  /// softmax, tanh and select; per-batch key lengths (nonpad_kv_seqlen,
  /// opset 24), sliding windows (opset 25) and the qk_matmul_output scores
  /// (modes 0-3). f16 inputs are computed in f32 and rounded once.
  mlir::LogicalResult attention();
  /// Attention's Q, K, V and past (inputs 0-2, 4, 5) are f32 or f16.
  mlir::LogicalResult checkAttentionInputTypes();
  /// Attention's past_key and past_value (inputs 4, 5) prepended to |key|
  /// and |value| along the sequence; |past| is their length.
  mlir::LogicalResult prependPastKV(mlir::Value &key, mlir::Value &value,
                                    int64_t &past);
  /// |scores| [B, Hq, Sq, T] (grouped: [B, Hkv, g, Sq, T]) with the keys at
  /// or past nonpad_kv_seqlen (input 6), and those the causal and window
  /// masks exclude, set to |negInf|.
  mlir::FailureOr<mlir::Value> nonpadKVMask(mlir::Value scores,
                                            mlir::Value negInf, int64_t batch,
                                            int64_t sq, int64_t skv,
                                            bool isCausal, int64_t leftWindow,
                                            int64_t rightWindow, bool grouped);
  /// |scores| with attn_mask (input 3) applied: a boolean mask selects
  /// (|negInf| elsewhere), a float one is added.
  mlir::FailureOr<mlir::Value>
  applyAttnMask(mlir::Value scores, mlir::Value negInf, int64_t skv,
                llvm::ArrayRef<int64_t> scoresShape, bool grouped, int64_t hkv,
                int64_t g);
  /// Input |i| of an Attention node as [B, heads, S, D] (a 3-D input split
  /// into |heads| heads, the attribute |attr|).
  /// Checks Attention's is_causal, softcap, qk_matmul_output_mode and
  /// window attributes and its past / nonpad inputs; an error naming the
  /// unsupported value otherwise.
  mlir::LogicalResult checkAttentionAttributes(int64_t isCausal,
                                               float softcap, int64_t qkMode,
                                               int64_t leftWindow,
                                               int64_t rightWindow);
  /// Defines Attention's output 0 as the fused dlgraph.attention of |q|,
  /// |k|, |v| ([B, H, S, D]) with the optional |mask|; a 3-D query
  /// (|threeD|) gets [B, S, H * Dv] back.
  mlir::LogicalResult defineFusedAttention(mlir::Value q, mlir::Value k,
                                           mlir::Value v, mlir::Value mask,
                                           double scale, bool causal,
                                           bool threeD);
  /// Attention's attn_mask (input 3) in its own element type, padded to
  /// |skv| keys when shorter (false / -inf), checked to broadcast to
  /// |scoresShape| [B, Hq, Sq, Skv].
  mlir::FailureOr<mlir::Value>
  attnMaskOperand(int64_t skv, llvm::ArrayRef<int64_t> scoresShape);
  mlir::FailureOr<mlir::Value> attentionHeads(int i, int64_t heads,
                                              llvm::StringRef attr);
  /// RMSNormalization (opset 23): x * rsqrt(mean(x^2 over axis..) + eps) *
  /// scale.
  mlir::LogicalResult rmsNormalization();
  /// RotaryEmbedding (opset 23): rotates (x1, x2) pairs of the first
  /// rotary_embedding_dim features by cos/sin (looked up by position_ids or
  /// given per position), interleaved or split halves, 3-D or 4-D input.
  mlir::LogicalResult rotaryEmbedding();
  /// SwiGLU (opset 28): A * sigmoid(alpha * A) * B for A and B of one shape;
  /// f16/bf16 computed in f32 and rounded once.
  mlir::LogicalResult swiGLU();
  /// CausalConvWithState (opset 27): a depthwise 1-D convolution over
  /// [past_state or zeros, input] (a grouped dlgraph.conv), optional SiLU,
  /// and the last kernel_size - 1 positions as present_state.
  mlir::LogicalResult causalConvWithState();
  /// LinearAttention (opset 27): the linear, gated, delta and gated-delta
  /// recurrences over a [B, Hkv, d_k, d_v] state, unrolled one step per
  /// token (T static, at most 1024 steps) into mul, add, matmul and slices.
  mlir::LogicalResult linearAttention();
  /// Imports subgraph |g| (a Scan, Loop or If body) inline at the current
  /// insertion point, its inputs bound to |inputs|: the subgraph sees every
  /// outer name it does not redefine, and the names it defines are restored
  /// afterwards. Returns its outputs (constants without a cached value).
  /// Errors are those of the subgraph's nodes, at their locations.
  mlir::FailureOr<llvm::SmallVector<Slot>>
  importSubgraph(const onnx::GraphProto &g, llvm::ArrayRef<Slot> inputs);
  /// Scan (opset 8: batch axis 0, no sequence_lens; 9 to 25), unrolled over
  /// its static sequence length: one copy of the body per step, the scan
  /// inputs sliced per step along scan_input_axes (reversed for direction
  /// 1), the states carried, the scan outputs stacked along
  /// scan_output_axes. At most kMaxUnrollSteps steps.
  mlir::LogicalResult scan();
  /// The unrolled scan of |body| (see scan()) from states |initial| over
  /// |scanned| (axes normalized): the final states, then the scan outputs.
  mlir::FailureOr<llvm::SmallVector<Slot>>
  unrollScan(const onnx::GraphProto &body, llvm::ArrayRef<Slot> initial,
             llvm::MutableArrayRef<Slot> scanned,
             llvm::ArrayRef<int64_t> inAxes, llvm::ArrayRef<int64_t> inDirs,
             llvm::ArrayRef<int64_t> outAxes, llvm::ArrayRef<int64_t> outDirs);
  /// The graph attribute |name| of the current node; null after an error.
  const onnx::GraphProto *graphAttr(llvm::StringRef name);
  /// Input |i| as a constant one-element bool; else an error naming it
  /// (|what|) and ending with |otherwise|.
  mlir::FailureOr<bool> constCondition(int i, llvm::StringRef what,
                                       llvm::StringRef otherwise);
  /// If (opsets 11 to 25) with a condition known at import: the chosen
  /// branch imported inline.
  mlir::LogicalResult ifOp();
  /// Loop (opsets 11 to 25) with a constant trip count and an initial and
  /// per-iteration condition that fold at import: unrolled (at most
  /// kMaxUnrollSteps iterations), the scan outputs stacked along axis 0.
  mlir::LogicalResult loop();
  /// |s| reshaped to |shape| (same element count; folded when |s| folds).
  Slot reshapeSlot(Slot &s, llvm::ArrayRef<int64_t> shape);
  /// |s|[..., i, ...] along |axis|, that axis dropped.
  Slot takeAlong(Slot &s, int64_t axis, int64_t i);
  /// |parts| (one type) stacked along a new axis |axis|.
  mlir::FailureOr<Slot> stackAlong(llvm::MutableArrayRef<Slot> parts,
                                   int64_t axis);
  /// RNN, GRU and LSTM (opsets 7 to 22; layout 0 and 1, every direction,
  /// optional B, initial_h/initial_c, peepholes, sequence_lens masking;
  /// activations Sigmoid, Tanh, Relu; no clip, no input_forget) unrolled
  /// over the static sequence length (at most kMaxUnrollSteps steps) into
  /// matmul, add, mul and the activations.
  mlir::LogicalResult recurrent();
  /// Input |i| as a number read at import (a constant or initializer scalar
  /// of any numeric type); |what| names it in the error otherwise.
  mlir::FailureOr<double> constScalar(int i, llvm::StringRef what);
  /// The float element type attribute output_datatype names (default f32).
  mlir::FailureOr<mlir::Type> floatOutputType();
  /// The DFT of length |n| of |x| ([..., C] with C = 1 real or 2 complex
  /// components, f32) along |axis| (< rank - 1): a matmul against a constant
  /// cos/sin matrix; forward (e^-i), |inverse| (e^+i, divided by n), one-
  /// sided (n / 2 + 1 bins; with |inverse|, a real output of length n from
  /// the Hermitian half). Inputs past n are dropped, missing ones are zero.
  mlir::FailureOr<mlir::Value> dftAlong(mlir::Value x, int64_t axis, int64_t n,
                                        bool inverse, bool onesided);
  /// DFT (opset 17: axis attribute; 20: axis input), constant dft_length
  /// and axis.
  mlir::LogicalResult dft();
  /// STFT (opset 17): constant frame_step and frame_length, optional window.
  mlir::LogicalResult stft();
  /// HannWindow, HammingWindow, BlackmanWindow with a constant size,
  /// folded to a constant.
  mlir::LogicalResult window();
  /// MelWeightMatrix with constant inputs, folded to a constant.
  mlir::LogicalResult melWeightMatrix();
  /// Reduces |x| over |axes| (sorted, distinct, normalized) with the dlgraph
  /// reduction OpTy.
  template <typename OpTy>
  mlir::Value reduceOver(mlir::Value x, llvm::ArrayRef<int64_t> axes,
                         bool keepdims);

  /// What Conv and ConvTranspose read alike: attributes, operands (X, W,
  /// optional B), with a 1-D node lifted to 2-D (is1D) and the number of
  /// spatial axes (2 or 3).
  struct ConvNode {
    std::string autoPad;
    llvm::SmallVector<int64_t> kernel, strides, pads, dilations;
    int64_t group = 1;
    mlir::Value x, w, bias;
    mlir::RankedTensorType xt, wt;
    bool is1D = false;
    size_t spatial = 2;
  };
  /// Fills |c| for the current Conv or ConvTranspose node (|what| names it
  /// in errors).
  mlir::LogicalResult readConvNode(llvm::StringRef what, ConvNode &c);
  mlir::FailureOr<size_t>
  convSpatialAxes(llvm::StringRef what, mlir::RankedTensorType xt,
                  mlir::RankedTensorType wt,
                  llvm::SmallVectorImpl<int64_t> &strides,
                  llvm::SmallVectorImpl<int64_t> &dilations,
                  llvm::SmallVectorImpl<int64_t> &pads);

public:
  /// The folder external data `location`s are relative to (that of the
  /// model file); empty for a model imported from bytes, whose external
  /// data is then an error.
  std::string externalDataDir;

private:
  mlir::MLIRContext *ctx;
  std::string path;
  dlc::ImportOptions options;
  bool forCheck;
  mlir::OpBuilder builder;
  mlir::Location fileLoc;
  mlir::ModuleOp module;
  mlir::func::FuncOp func;
  int64_t opset = 0;
  /// The static dim 0 the model was exported with, when --batch-size replaced
  /// it with a different value; -1 otherwise.
  int64_t exportedBatch = -1;

  llvm::StringMap<Slot> slots;
  /// The graph inputs that are not initializers (bound ones included).
  llvm::StringSet<> graphInputs;
  /// The model's main graph (for constantInputHint), while run() runs.
  const onnx::GraphProto *mainGraph = nullptr;
  /// ONNX sequence values (SplitToSequence outputs), element by element: a
  /// sequence of statically known length exists only at import time.
  llvm::StringMap<llvm::SmallVector<Slot>> sequences;
  llvm::StringMap<const onnx::TensorProto *> f32Initializers;
  /// The external data files read so far, by real path, each mapped once.
  llvm::StringMap<std::shared_ptr<llvm::MemoryBuffer>> externalFiles;
  llvm::StringMap<mlir::Value> variableReads;
  llvm::StringSet<> consumed;
  /// How many inputs of non-Identity nodes name each value, looking through
  /// Identity nodes (a node using a value twice counts twice).
  llvm::StringMap<int> useCount;

  const onnx::NodeProto *node = nullptr;
  std::string nodeName;
  mlir::Location nodeLoc = mlir::UnknownLoc::get(ctx);
  bool attrFailed = false;
  /// Inputs of the current node that operand() admitted although they are
  /// not f32, because they are foldable constants: the node must then fold
  /// to constants (checked by foldNode).
  llvm::SmallVector<int> deferredInputs;
  /// Set when the current node imported a subgraph: its foldNode then keeps
  /// the cached constants of every slot, not only of the node's own.
  bool touchesAllSlots = false;
};

/// The importer's one registration table: the OpMapping entries of every op
/// family, each op type once.
class OpRegistry {
public:
  /// The table, built from the family tables on first use.
  static const OpRegistry &get();
  /// The entry of ONNX op |opType| (ai.onnx domain), or null when the
  /// importer does not map it.
  const OpMapping *lookup(llvm::StringRef opType) const;
  /// The entry of op |opType| of |domain| ("" or "ai.onnx": the default
  /// domain; another domain's ops are registered as "<domain>.<op>").
  const OpMapping *lookup(llvm::StringRef domain,
                          llvm::StringRef opType) const;
  /// Every entry, sorted by op type.
  llvm::ArrayRef<const OpMapping *> entries() const { return sorted; }

private:
  OpRegistry();
  llvm::StringMap<const OpMapping *> byType;
  std::vector<const OpMapping *> sorted;
};

/// |v| reshaped to |shape| (same element count) with dlgraph.reshape; |v|
/// itself when it already has that shape. Used by Attention.cpp and
/// Recurrent.cpp.
inline mlir::Value reshaped(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Value v, llvm::ArrayRef<int64_t> shape) {
  auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
  if (t.getShape() == shape)
    return v;
  return dlc::graph::ReshapeOp::create(b, loc, t.clone(shape), v);
}

/// |v| transposed by |perm| (dlgraph.transpose).
inline mlir::Value permute(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value v, llvm::ArrayRef<int64_t> perm) {
  return dlc::graph::TransposeOp::create(b, loc, v,
                                         b.getDenseI64ArrayAttr(perm));
}

// Used by several families (pools, reductions, losses, normalizations).
template <typename OpTy>
mlir::Value Importer::reduceOver(mlir::Value x, llvm::ArrayRef<int64_t> axes,
                                 bool keepdims) {
  return OpTy::create(builder, nodeLoc, x, builder.getDenseI64ArrayAttr(axes),
                      keepdims ? builder.getUnitAttr() : mlir::UnitAttr());
}

} // namespace dlc::onnx_import

#endif // DLC_COMPILER_IMPORT_IMPORTER_H
