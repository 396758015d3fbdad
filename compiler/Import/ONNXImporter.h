//===- ONNXImporter.h - ONNX model -> dlgraph module ------------*- C++ -*-===//
#ifndef DLC_COMPILER_IMPORT_ONNXIMPORTER_H
#define DLC_COMPILER_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dlc {

/// The static shape `--input-shape NAME=D0xD1x...` gives graph input |name|
/// (as `trtexec --shapes` and onnxruntime's free-dimension overrides do).
struct InputShapeOverride {
  std::string name;
  /// One entry per dimension of the input: the size (>= 0), or -1 (`?`) to
  /// keep the model's dimension.
  std::vector<int64_t> dims;
};

/// The value `--input-value NAME=FILE` gives graph input |name| at compile
/// time: the input becomes a constant (never trained) and leaves the
/// compiled step's inputs. For inputs that fix shapes or axes (`axes`,
/// `pads`, `sizes`, `shape`, `k`...), which a static-shape compiler needs
/// before it runs, as TensorRT needs its shape tensors.
struct InputValueBinding {
  std::string name;
  /// A serialized ONNX TensorProto (`.pb`, as onnx.numpy_helper.from_array
  /// writes and the ONNX test data holds) or a NumPy `.npy` file.
  std::string path;
};

/// Options of the ONNX importer.
struct ImportOptions {
  /// When > 0, replaces dim 0 of every graph input (static or symbolic). When
  /// 0, a symbolic dim 0 is an error that asks for `--batch-size`.
  int64_t batchSize = 0;
  /// Per named graph input, the sizes of its dimensions (`--input-shape`).
  /// A given size fixes a symbolic dimension or must equal the model's
  /// static one; on dim 0 it must agree with batchSize when both are set.
  /// Naming no graph input, or giving another rank than the input's, is an
  /// error.
  std::vector<InputShapeOverride> inputShapes;
  /// Graph inputs given a value at compile time (`--input-value`). The
  /// file's element type must be the input's and its shape must fit the
  /// input's (a symbolic dimension takes the file's size); naming no graph
  /// input, an input also named by inputShapes, or an unreadable file is an
  /// error.
  std::vector<InputValueBinding> inputValues;
};

/// Parses one `--input-value` value, `NAME=FILE`, into |out|. Returns an
/// empty string, or what is wrong with |spec|.
std::string parseInputValue(llvm::StringRef spec, InputValueBinding &out);

/// Parses one `--input-shape` value, `NAME=D0xD1x...` (each D a
/// non-negative integer or `?`; NAME may contain `=` only before the last
/// one), into |out|. Returns an empty string, or what is wrong with |spec|.
std::string parseInputShape(llvm::StringRef spec, InputShapeOverride &out);

/// Parses the ONNX model (opsets 13..17 of the ai.onnx domain; an older
/// opset only when every node's op has, at that opset, a definition the
/// importer maps exactly: unchanged since then, or read in its old form, e.g.
/// Add's legacy broadcast from 6, Softmax's 2-D coercion before 13; see
/// supportedONNXOps) at |path| and
/// returns a dlgraph module: every f32 initializer becomes a module-level
/// `dlgraph.variable @"<initializer name>"` (not trainable) read with
/// `dlgraph.read_variable`; one `func.func @main` takes the graph inputs that
/// are not initializers (arg attribute `dlgraph.name`) and returns the graph
/// outputs (result attribute `dlgraph.name`); the module has attribute
/// `dlgraph.model_name`. Graph inputs, outputs and constants may be f32,
/// f64, f16, bf16, i32, i64 or i1 (ONNX float, double, float16, bfloat16,
/// int32, int64, bool); other element types are an error. f64, f16, bf16,
/// integer and bool initializers are constants. f16/bf16 tensors reach
/// elementwise and data-movement ops (Cast/CastLike to and from them
/// included); an op that accumulates (reductions, softmax, pooling,
/// normalization, losses, MatMul/Gemm/Conv) on them is an error at its node
/// for now. Constants fold in their own type (rounded once, as the run-time
/// kernels compute).
/// Elementwise ops without a dlgraph op of their own (Reciprocal, Elu, Selu,
/// LeakyRelu, Softplus, HardSigmoid, HardSwish, PRelu, ThresholdedRelu,
/// Sign, And/Or/Xor/Not, Mean, Clip with run-time bounds) are decomposed
/// into elementwise dlgraph ops. All shapes are static; every op's location is
/// `NameLoc("<node name>/<OpType>")` around `FileLineColLoc(path, 0, 0)`
/// (unnamed nodes are called `<OpType>_<node index>`). A BatchNormalization
/// running mean/variance whose initializer is also used elsewhere (exporters
/// deduplicate equal initializers) gets a private variable named
/// `<node name>.running_mean` / `.running_var`. Constant shape
/// subgraphs (Shape, Gather, Unsqueeze, Squeeze, Concat, Cast, arithmetic on
/// int64 constants) are folded at import time.
///
/// An initializer with data_location EXTERNAL is read from the file its
/// `external_data` entries name: `location` (relative to the folder of
/// |path|; absolute paths, `..` components and real paths outside that
/// folder are errors), `offset` (default 0) and `length` (default: to the
/// end of the file; it must equal the tensor's dims x element size), in the
/// raw_data format. Each file is memory-mapped once; f32 initializers over
/// 1 KiB become `dense_resource` attributes viewing the mapping (which lives
/// as long as |context|), other tensors are copied into dense attributes.
///
/// Errors (a missing or unparsable file, an opset outside 13..17, an
/// unsupported op, attribute or element type, a symbolic dimension that
/// neither options.batchSize nor options.inputShapes fixes, an input shape
/// override that does not fit its input) are emitted through |context|'s diagnostic
/// engine, at the node's location where there is one, and null is returned.
/// Loads the dlgraph and func dialects into |context|.
mlir::OwningOpRef<mlir::ModuleOp> importONNXModel(mlir::MLIRContext &context,
                                                  llvm::StringRef path,
                                                  const ImportOptions &options);

/// Imports the ONNX model bytes |bytes| as importONNXModel imports a file;
/// |name| stands for the file in locations and messages. For callers that
/// hold the model in memory (and the importer's fuzz target); a tensor in
/// an external data file is an error (there is no folder to read it from).
mlir::OwningOpRef<mlir::ModuleOp>
importONNXModelFromBytes(mlir::MLIRContext &context, llvm::StringRef bytes,
                         llvm::StringRef name, const ImportOptions &options);

/// Identifies the contents of the external data files that the ONNX model
/// |bytes| (the file at |path|) references, for caches keyed by a model:
/// per file its `location` and the BLAKE3 of its bytes (read in 1 MiB
/// chunks, not mapped; "unreadable" when it cannot be read, which the
/// import then reports). "" when the model references no external data
/// (without parsing it unless its bytes contain the key "location") or
/// does not parse. Nothing is validated: importONNXModel does that.
std::string externalDataKey(llvm::StringRef path, llvm::StringRef bytes);

/// The ai.onnx opsets the importer maps, oldest and newest (inclusive).
std::pair<int64_t, int64_t> supportedOpsets();

/// A node whose op type the importer maps but which does not import: an
/// element type, attribute or shape it does not support, or an input that
/// must be a compile-time constant and is computed at run time.
struct ONNXNodeIssue {
  /// The node's name (unnamed nodes: `<OpType>_<node index>`).
  std::string node;
  /// The import error at the node, without the "<OpType> node '<name>': "
  /// prefix.
  std::string reason;
};

/// Support status of one ONNX op type in a model (see checkONNXModel).
struct ONNXOpStatus {
  /// Domain as written in the model; empty for the default ai.onnx domain.
  std::string domain;
  std::string opType;
  /// Names of the nodes with this op, in graph order (unnamed nodes are
  /// called `<OpType>_<node index>`, as in import errors).
  std::vector<std::string> nodes;
  /// Empty when the importer supports the op at the model's opset; else why
  /// not, e.g. "no importer for this op".
  std::string unsupportedReason;
  /// For an unsupported op: the nearest supported alternative
  /// (nearestSupportedAlternative); empty otherwise.
  std::string alternative;
  /// The nodes of this (mapped) op type that do not import, in graph order.
  /// The op type is supported in this model only when this and
  /// unsupportedReason are empty.
  std::vector<ONNXNodeIssue> nodeIssues;
  /// The nodes of this op type that were not checked because an input comes
  /// from a node that does not import.
  std::vector<std::string> uncheckedNodes;
};

/// The result of checking an ONNX model without compiling it.
struct ONNXModelCheck {
  /// The ai.onnx opset the model imports (0 when it imports none).
  int64_t opset = 0;
  int64_t numNodes = 0;
  /// Every op type of the main graph, in order of first appearance.
  std::vector<ONNXOpStatus> ops;
  /// Empty when the whole model imports into dlgraph; else the first import
  /// error (an unsupported attribute, element type, dynamic shape...).
  std::string importError;
  /// The graph inputs' symbolic dimensions that neither --batch-size nor
  /// --input-shape fixes, as "input 'x' axis 1 ('seq')"; the check imports
  /// them as 1, a compile fails on them.
  std::vector<std::string> unfixedDims;
  /// For each graph input with such a dimension, the --input-shape value
  /// that would fix it, with its symbolic dimensions as <name> (e.g.
  /// "x=<batch>x<seq>x768").
  std::vector<std::string> inputShapeHints;
  /// Signs that the exporter's graph optimizer folded, transposed or merged
  /// trainable tensors: the initializer, and one sentence naming it; `dlc
  /// --check --train` prints those of the trained initializers as warnings.
  std::vector<std::pair<std::string, std::string>> optimizerSigns;
};

/// Loads the ONNX model at |path| and reports, per op type, whether the
/// importer supports it, then imports the model to find attribute-, type-,
/// operand- and shape-level problems per node: a node that does not import
/// is reported in its op type's nodeIssues and the import goes on with the
/// nodes that do not depend on it (those that do are uncheckedNodes); the
/// first error is also importError. Nothing is lowered or compiled. A
/// symbolic dimension that options do not fix is listed in unfixedDims and
/// checked as 1. Errors that prevent the check (a missing or unparsable
/// file) are emitted through |context|'s diagnostic engine and fail.
mlir::FailureOr<ONNXModelCheck> checkONNXModel(mlir::MLIRContext &context,
                                               llvm::StringRef path,
                                               const ImportOptions &options);

/// One ONNX op type (ai.onnx domain) that the importer maps.
struct SupportedONNXOp {
  std::string opType;
  /// The first opset whose definition of the op is mapped exactly; a model
  /// of an older opset (down to 1) imports only when every node's op is
  /// mapped at that opset. Opsets 13..17 are mapped for every op.
  int64_t mappedSince = 0;
  /// The newest definition version of the op that is mapped (the opset
  /// that introduced it); newer versions that kept its inputs and
  /// attributes import too, up to the newest opset the importer reads.
  int64_t newestVersion = 0;
};

/// Every op type the importer maps, sorted by op type: the importer's
/// registration table, which also drives import, the opset check and
/// checkONNXModel. `dlc --check` and the docs list these ops.
std::vector<SupportedONNXOp> supportedONNXOps();

} // namespace dlc

#endif
