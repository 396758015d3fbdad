//===- ONNXImporter.cpp - ONNX protobuf -> dlgraph module -----------------===//
//
// Reads an ONNX ModelProto with the generated protobuf classes and builds a
// dlgraph module with static shapes: result shapes are computed per op,
// following the ONNX operator specifications (opsets 13..17, and older
// opsets where every node's old definition is mapped). Constant shape
// subgraphs (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as PyTorch
// exports `x.view(x.size(0), -1)`) are folded while importing.
//
// This file holds the public entry points, the model-level steps (opset
// check, initializers, graph inputs and outputs), the registration table
// and node dispatch; the op handlers live in one file per op family (see
// Importer.h).
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/ONNXImporter.h"
#include "compiler/Import/Importer.h"
#include "compiler/Import/OpAlternatives.h"
#include "runtime/data/Npy.h"

#include "dialects/Graph/GraphAttributes.h"
#include "dialects/Graph/GraphDialect.h"
#include "dialects/Graph/GraphOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <climits>
#include <cstring>
#include <limits>
#include <string>

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;

//===----------------------------------------------------------------------===//
// Model-level steps
//===----------------------------------------------------------------------===//

/// Calls |fn| on every node of |graph| and of its subgraphs (Scan, Loop and
/// If bodies), outer nodes first.
static void forEachNode(const onnx::GraphProto &graph,
                        llvm::function_ref<void(const onnx::NodeProto &)> fn) {
  for (const auto &n : graph.node()) {
    fn(n);
    for (const auto &a : n.attribute()) {
      if (a.has_g())
        forEachNode(a.g(), fn);
      for (const auto &g : a.graphs())
        forEachNode(g, fn);
    }
  }
}

LogicalResult Importer::checkOpset(const onnx::ModelProto &model) {
  bool found = false;
  for (const auto &imp : model.opset_import()) {
    if (!imp.domain().empty() && imp.domain() != "ai.onnx")
      continue;
    found = true;
    opset = imp.version();
  }
  // A graph of another domain's ops only (ai.onnx.preview.training's
  // optimizers) needs no ai.onnx opset.
  if (!found && !model.graph().node().empty() &&
      llvm::all_of(model.graph().node(), [](const onnx::NodeProto &n) {
        return !n.domain().empty() && n.domain() != "ai.onnx" &&
               OpRegistry::get().lookup(n.domain(), n.op_type());
      })) {
    opset = kMaxOpset;
    return success();
  }
  if (!found)
    return modelError() << "the model imports no ai.onnx opset; supported "
                           "opsets are "
                        << kMinOpset << " to " << kMaxOpset;
  if (opset > kMaxOpset || opset < 1)
    return modelError() << "ONNX opset " << opset
                        << " is not supported; supported opsets are "
                        << kMinOpset << " to " << kMaxOpset
                        << " (export the model with an opset in that range)";
  if (opset >= kMinOpset)
    return success();
  SmallVector<const onnx::NodeProto *> nodes;
  forEachNode(model.graph(),
              [&](const onnx::NodeProto &n) { nodes.push_back(&n); });
  for (const onnx::NodeProto *np : nodes) {
    const onnx::NodeProto &n = *np;
    bool defaultDomain = n.domain().empty() || n.domain() == "ai.onnx";
    const OpMapping *mapping =
        defaultDomain ? OpRegistry::get().lookup(n.op_type()) : nullptr;
    if (!mapping)
      continue; // reported as an unsupported op when imported
    if (mapping->mappedSince > opset) {
      std::string name = n.name().empty() ? n.op_type() : n.name();
      return modelError() << "op '" << n.op_type() << "' (node '" << name
                          << "') at ONNX opset " << opset
                          << " is not supported: its definition at that "
                             "opset is not mapped (supported from opset "
                          << mapping->mappedSince << "); supported opsets are "
                          << kMinOpset << " to " << kMaxOpset
                          << " (export the model with an opset in that range)";
    }
  }
  return success();
}

FailureOr<SmallVector<int64_t>>
Importer::tensorDims(const onnx::TensorProto &t, Location loc, StringRef what) {
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
  return dims;
}

FailureOr<DenseElementsAttr> Importer::convertTensor(const onnx::TensorProto &t,
                                                     Location loc,
                                                     StringRef what) {
  FailureOr<SmallVector<int64_t>> shape = tensorDims(t, loc, what);
  if (failed(shape))
    return failure();
  SmallVector<int64_t> dims = std::move(*shape);
  int64_t n = product(dims);
  auto sizeError = [&](int64_t got) {
    return emitError(loc) << what << " '" << t.name() << "' of shape "
                          << shapeStr(dims) << " has " << got
                          << " values, expected " << n;
  };
  // Little-endian bytes: raw_data, or the tensor's range of its external
  // data file (the same format).
  std::optional<StringRef> raw;
  if (t.has_raw_data())
    raw = StringRef(t.raw_data());
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    Type et = elementTypeFor(builder, t.data_type());
    if (et) { // else the type's error below
      int64_t width = std::max<int64_t>(1, et.getIntOrFloatBitWidth() / 8);
      FailureOr<StringRef> bytes = externalData(t, n * width, loc, what);
      if (failed(bytes))
        return failure();
      raw = *bytes;
    }
  }
  switch (t.data_type()) {
  case onnx::TensorProto_DataType_FLOAT: {
    if (raw ? (int64_t)raw->size() != n * 4 : t.float_data_size() != n)
      return sizeError(raw ? raw->size() / 4 : t.float_data_size());
    auto type = RankedTensorType::get(dims, builder.getF32Type());
    // Little-endian raw bytes are the attribute's storage format: one copy
    // of a large weight instead of two (the attribute is the same one).
    if (raw && n && llvm::endianness::native == llvm::endianness::little)
      return DenseElementsAttr::getFromRawBuffer(
          type, ArrayRef<char>(raw->data(), raw->size()));
    SmallVector<float> data(n);
    if (raw) {
      if (n)
        std::memcpy(data.data(), raw->data(), n * 4);
    } else {
      llvm::copy(t.float_data(), data.begin());
    }
    return DenseElementsAttr::get(type, ArrayRef<float>(data));
  }
  case onnx::TensorProto_DataType_DOUBLE: {
    if (raw ? (int64_t)raw->size() != n * 8 : t.double_data_size() != n)
      return sizeError(raw ? raw->size() / 8 : t.double_data_size());
    auto type = RankedTensorType::get(dims, builder.getF64Type());
    // Little-endian raw bytes are the attribute's storage format: one copy
    // of a large weight instead of two (the attribute is the same one).
    if (raw && n && llvm::endianness::native == llvm::endianness::little)
      return DenseElementsAttr::getFromRawBuffer(
          type, ArrayRef<char>(raw->data(), raw->size()));
    SmallVector<double> data(n);
    if (raw) {
      if (n)
        std::memcpy(data.data(), raw->data(), n * 8);
    } else {
      llvm::copy(t.double_data(), data.begin());
    }
    return DenseElementsAttr::get(type, ArrayRef<double>(data));
  }
  case onnx::TensorProto_DataType_INT64:
  case onnx::TensorProto_DataType_INT32: {
    bool is64 = t.data_type() == onnx::TensorProto_DataType_INT64;
    int64_t width = is64 ? 8 : 4;
    int64_t got = raw    ? (int64_t)raw->size() / width
                  : is64 ? t.int64_data_size()
                         : t.int32_data_size();
    if (got != n || (raw && raw->size() % width))
      return sizeError(got);
    SmallVector<int64_t> data(n);
    if (raw) {
      for (int64_t i = 0; i < n; ++i) {
        if (is64) {
          std::memcpy(&data[i], raw->data() + i * 8, 8);
        } else {
          int32_t v;
          std::memcpy(&v, raw->data() + i * 4, 4);
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
  case onnx::TensorProto_DataType_FLOAT16:
  case onnx::TensorProto_DataType_BFLOAT16: {
    // Bit patterns: 2 little-endian bytes each in raw_data, or one uint16
    // per int32_data entry (the ONNX TensorProto convention for both).
    int64_t got = raw ? (int64_t)raw->size() / 2 : t.int32_data_size();
    if (got != n || (raw && raw->size() % 2))
      return sizeError(got);
    SmallVector<uint16_t> bits(n);
    for (int64_t i = 0; i < n; ++i) {
      if (raw) {
        const auto *p =
            reinterpret_cast<const unsigned char *>(raw->data()) + 2 * i;
        bits[i] = (uint16_t)(p[0] | (p[1] << 8));
        continue;
      }
      int32_t v = t.int32_data(i);
      if (v < 0 || v > 0xffff)
        return emitError(loc)
               << what << " '" << t.name() << "' of element type "
               << onnxTypeName(t.data_type()) << " has int32_data value " << v
               << " at index " << i
               << ", which is not a 16-bit pattern (expected 0 to 65535)";
      bits[i] = (uint16_t)v;
    }
    Type et = t.data_type() == onnx::TensorProto_DataType_FLOAT16
                  ? (Type)builder.getF16Type()
                  : (Type)builder.getBF16Type();
    // The attribute's storage is the same host-order uint16 array.
    return DenseElementsAttr::getFromRawBuffer(
        RankedTensorType::get(dims, et),
        ArrayRef<char>(reinterpret_cast<const char *>(bits.data()),
                       bits.size() * sizeof(uint16_t)));
  }
  case onnx::TensorProto_DataType_BOOL: {
    // Flags such as Dropout's training_mode.
    int64_t got = raw ? (int64_t)raw->size() : t.int32_data_size();
    if (got != n)
      return sizeError(got);
    SmallVector<bool> data(n);
    for (int64_t i = 0; i < n; ++i)
      data[i] = raw ? (*raw)[i] != 0 : t.int32_data(i) != 0;
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
    Slot s;
    s.loc = loc;
    // A large f32 weight in an external data file stays in its mapping.
    FailureOr<DenseResourceElementsAttr> r = externalResource(t, loc);
    if (failed(r))
      return failure();
    s.resource = *r;
    if (!s.resource) {
      FailureOr<DenseElementsAttr> c = convertTensor(t, loc, "initializer");
      if (failed(c))
        return failure();
      s.constant = *c;
    }
    if (t.data_type() == onnx::TensorProto_DataType_FLOAT)
      s.variable = t.name();
    slots[t.name()] = s;
  }
  return success();
}

/// The --input-shape value that fixes every dimension of graph input |in|:
/// its static sizes, and <name> (or <?>) for its symbolic ones, e.g.
/// "input_ids=<batch>x<seq>".
static std::string inputShapeHint(const onnx::ValueInfoProto &in) {
  std::string hint = in.name() + "=";
  const auto &shape = in.type().tensor_type().shape();
  for (int i = 0; i < shape.dim_size(); ++i) {
    const auto &d = shape.dim(i);
    if (i)
      hint += "x";
    if (d.has_dim_value() && d.dim_value() >= 0)
      hint += std::to_string(d.dim_value());
    else
      hint += "<" + (d.has_dim_param() ? d.dim_param() : std::string("?")) +
              ">";
  }
  return hint;
}

std::string dlc::parseInputShape(StringRef spec, InputShapeOverride &out) {
  auto [name, dims] = spec.rsplit('=');
  if (name.empty() || dims.empty() || name.size() == spec.size())
    return "--input-shape '" + spec.str() +
           "' is not NAME=D0xD1x... (each D a size or ?)";
  out.name = name.str();
  out.dims.clear();
  SmallVector<StringRef> parts;
  dims.split(parts, 'x');
  for (StringRef part : parts) {
    int64_t d;
    if (part == "?")
      out.dims.push_back(-1);
    else if (!part.getAsInteger(10, d) && d >= 0 && d <= kMaxElements)
      out.dims.push_back(d);
    else
      return "--input-shape '" + spec.str() + "': '" + part.str() +
             "' is not a dimension size (a non-negative integer, or ? to "
             "keep the model's)";
  }
  return "";
}

std::string dlc::parseInputValue(StringRef spec, InputValueBinding &out) {
  auto [name, file] = spec.rsplit('=');
  if (name.empty() || file.empty() || name.size() == spec.size())
    return "--input-value '" + spec.str() +
           "' is not NAME=FILE (FILE an ONNX TensorProto .pb or a NumPy "
           ".npy)";
  out.name = name.str();
  out.path = file.str();
  return "";
}

/// The ONNX element type of a NumPy array's dtype.
static onnx::TensorProto_DataType onnxTypeOf(dlrt::data::DType dtype) {
  switch (dtype) {
  case dlrt::data::DType::F32:
    return onnx::TensorProto_DataType_FLOAT;
  case dlrt::data::DType::F64:
    return onnx::TensorProto_DataType_DOUBLE;
  case dlrt::data::DType::I64:
    return onnx::TensorProto_DataType_INT64;
  case dlrt::data::DType::I32:
    return onnx::TensorProto_DataType_INT32;
  case dlrt::data::DType::U8:
    return onnx::TensorProto_DataType_UINT8;
  case dlrt::data::DType::Bool:
    return onnx::TensorProto_DataType_BOOL;
  case dlrt::data::DType::F16:
    return onnx::TensorProto_DataType_FLOAT16;
  case dlrt::data::DType::BF16:
    return onnx::TensorProto_DataType_BFLOAT16;
  }
  return onnx::TensorProto_DataType_UNDEFINED;
}

/// Reads the `--input-value` file |path| (a NumPy .npy when it ends so, else
/// a serialized TensorProto) into |t|. Returns an empty string, or the
/// problem (naming the file).
static std::string readBoundTensor(const std::string &path,
                                   onnx::TensorProto &t) {
  if (StringRef(path).ends_with(".npy")) {
    dlrt::data::Array a;
    std::string error;
    if (!dlrt::data::readNpyFile(path, a, error))
      return error;
    for (int64_t d : a.shape)
      t.add_dims(d);
    t.set_data_type(onnxTypeOf(a.dtype));
    t.set_raw_data(std::string(a.data.begin(), a.data.end()));
    return "";
  }
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return "'" + path + "': cannot open: " + buffer.getError().message();
  if (!t.ParseFromArray((*buffer)->getBufferStart(),
                        (int)std::min<size_t>((*buffer)->getBufferSize(),
                                              INT_MAX)) ||
      (*buffer)->getBufferSize() > INT_MAX ||
      t.data_type() == onnx::TensorProto_DataType_UNDEFINED)
    return "'" + path +
           "' is not a serialized ONNX TensorProto (nor a .npy file)";
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL)
    return "'" + path + "' stores its data externally; give the data inline";
  return "";
}

LogicalResult Importer::importInputValues(const onnx::GraphProto &graph) {
  for (const auto &in : graph.input())
    if (!slots.count(in.name()))
      graphInputs.insert(in.name());
  for (const InputValueBinding &b : options.inputValues) {
    // At the file: the messages name the input themselves.
    Location loc = fileLoc;
    const onnx::ValueInfoProto *in = nullptr;
    for (const auto &i : graph.input())
      if (i.name() == b.name && !slots.count(b.name))
        in = &i;
    if (!in) {
      std::vector<std::string> names;
      for (const auto &i : graph.input())
        if (graphInputs.contains(i.name()))
          names.push_back(i.name());
      return emitError(loc) << "--input-value names '" << b.name
                            << "', which is not a graph input; the graph "
                               "inputs are: "
                            << llvm::join(names, ", ");
    }
    if (llvm::any_of(options.inputShapes, [&](const InputShapeOverride &o) {
          return o.name == b.name;
        }))
      return emitError(loc) << "graph input '" << b.name
                            << "' is named by both --input-value and "
                               "--input-shape; its value fixes its shape";
    onnx::TensorProto t;
    if (std::string problem = readBoundTensor(b.path, t); !problem.empty())
      return emitError(loc) << "--input-value " << b.name << ": " << problem;
    t.set_name(b.name);
    const auto &tt = in->type().tensor_type();
    if (!in->type().has_tensor_type() || t.data_type() != tt.elem_type())
      return emitError(loc)
             << "--input-value " << b.name << ": '" << b.path
             << "' holds " << onnxTypeName(t.data_type())
             << " values; graph input '" << b.name << "' is "
             << (in->type().has_tensor_type() ? onnxTypeName(tt.elem_type())
                                              : std::string("not a tensor"));
    if (tt.has_shape()) {
      bool fits = tt.shape().dim_size() == t.dims_size();
      for (int d = 0; fits && d < t.dims_size(); ++d) {
        const auto &dim = tt.shape().dim(d);
        if (dim.has_dim_value() && dim.dim_value() >= 0 &&
            dim.dim_value() != t.dims(d))
          fits = false;
      }
      if (!fits) {
        std::string have;
        for (int d = 0; d < t.dims_size(); ++d)
          have += (d ? "x" : "") + std::to_string(t.dims(d));
        return emitError(loc)
               << "--input-value " << b.name << ": '" << b.path
               << "' has shape [" << (have.empty() ? "scalar" : have)
               << "], which does not fit graph input " << inputShapeHint(*in);
      }
    }
    FailureOr<DenseElementsAttr> c = convertTensor(t, loc, "--input-value");
    if (failed(c))
      return failure();
    Slot s;
    s.loc = loc;
    s.constant = *c;
    slots[b.name] = s;
  }
  return success();
}

LogicalResult Importer::importInputs(const onnx::GraphProto &graph,
                                     SmallVectorImpl<Type> &types,
                                     SmallVectorImpl<std::string> &names) {
  SmallVector<std::string> inputNames;
  for (const auto &in : graph.input())
    if (!slots.count(in.name()))
      inputNames.push_back(in.name());
  for (const InputShapeOverride &o : options.inputShapes)
    if (!llvm::is_contained(inputNames, o.name))
      return emitError(namedLoc(o.name))
             << "--input-shape names '" << o.name
             << "', which is not a graph input; the graph inputs are: "
             << llvm::join(inputNames, ", ");
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
    const InputShapeOverride *fixed = nullptr;
    for (const InputShapeOverride &o : options.inputShapes)
      if (o.name == in.name())
        fixed = &o;
    int rank = tt.shape().dim_size();
    if (fixed && (int)fixed->dims.size() != rank)
      return emitError(loc)
             << "--input-shape gives graph input '" << in.name() << "' "
             << fixed->dims.size() << " dimensions; it has rank " << rank;
    SmallVector<int64_t> shape;
    for (int i = 0; i < rank; ++i) {
      const auto &d = tt.shape().dim(i);
      bool known = d.has_dim_value() && d.dim_value() >= 0;
      if (int64_t want = fixed ? fixed->dims[i] : -1; want >= 0) {
        if (i == 0 && options.batchSize > 0 && want != options.batchSize)
          return emitError(loc)
                 << "--input-shape gives graph input '" << in.name()
                 << "' dim 0 = " << want << ", --batch-size "
                 << options.batchSize;
        if (known && d.dim_value() != want && !(i == 0 && options.batchSize))
          return emitError(loc)
                 << "--input-shape gives graph input '" << in.name()
                 << "' axis " << i << " = " << want
                 << ", but the model fixes it to " << d.dim_value()
                 << " (only symbolic dimensions can be set)";
        if (i == 0 && known && d.dim_value() != want)
          exportedBatch = d.dim_value();
        shape.push_back(want);
        continue;
      }
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
             << sym << " at axis " << i << "; fix it with --input-shape "
             << inputShapeHint(in) << " (static shapes are required)";
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
// Op definition versions (OnnxOpVersions.inc)
//===----------------------------------------------------------------------===//

namespace {
struct OpVersion {
  llvm::StringLiteral opType;
  int64_t since;
  bool sameSignature;
};
// Sorted by op type, then version (as the generator writes them).
constexpr OpVersion kOpVersions[] = {
#define DLC_ONNX_OP_VERSION(op, since, same) {op, since, same},
#include "compiler/Import/OnnxOpVersions.inc"
};

ArrayRef<OpVersion> versionsOf(StringRef opType) {
  assert(llvm::is_sorted(kOpVersions,
                         [](const OpVersion &a, const OpVersion &b) {
                           return a.opType < b.opType ||
                                  (a.opType == b.opType && a.since < b.since);
                         }) &&
         "OnnxOpVersions.inc is sorted by op type and version");
  auto lo = llvm::partition_point(
      kOpVersions, [&](const OpVersion &v) { return v.opType < opType; });
  auto hi = std::find_if(lo, std::end(kOpVersions), [&](const OpVersion &v) {
    return v.opType != opType;
  });
  return ArrayRef<OpVersion>(lo, hi);
}
} // namespace

int64_t dlc::onnx_import::opVersionAt(StringRef opType, int64_t opset) {
  int64_t version = 0;
  for (const OpVersion &v : versionsOf(opType))
    if (v.since <= opset)
      version = v.since;
  return version;
}

int64_t dlc::onnx_import::newestMappedVersion(const OpMapping &mapping) {
  if (mapping.newestVersion)
    return mapping.newestVersion;
  int64_t newest = opVersionAt(mapping.opType,
                               std::max(kLibOnnxOpset, mapping.mappedSince));
  // An op the schemas define only after that (Mish, added at 18 and mapped
  // as defined there): its first version.
  if (!newest && !versionsOf(mapping.opType).empty())
    newest = versionsOf(mapping.opType).front().since;
  // Another domain's op (OnnxOpVersions.inc lists ai.onnx only): the version
  // of its domain it is mapped at.
  if (!newest)
    newest = mapping.mappedSince;
  return newest;
}

std::string dlc::onnx_import::opVersionIssue(const OpMapping &mapping,
                                             int64_t opset) {
  int64_t newest = newestMappedVersion(mapping);
  for (const OpVersion &v : versionsOf(mapping.opType)) {
    if (v.since <= newest || v.since > opset || v.sameSignature)
      continue;
    return "its version " + std::to_string(v.since) + " (opset " +
           std::to_string(opset) +
           ") changed its inputs or attributes and is not mapped; dlc maps "
           "versions up to " +
           std::to_string(newest) + " (export with opset " +
           std::to_string(v.since - 1) + " or lower)";
  }
  return "";
}

//===----------------------------------------------------------------------===//
// Registration table and node dispatch
//===----------------------------------------------------------------------===//

OpRegistry::OpRegistry() {
  // The op families, one file each; every op type is registered once.
  for (ArrayRef<OpMapping> family :
       {Importer::elementwiseOps(), Importer::linearOps(), Importer::convOps(),
        Importer::normalizationOps(), Importer::attentionOps(),
        Importer::poolOps(), Importer::dataMovementOps(),
        Importer::indexingOps(), Importer::reductionOps(), Importer::lossOps(),
        Importer::constantOps(), Importer::optimizerOps(),
        Importer::classicalMLOps(), Importer::samplingOps(),
        Importer::controlFlowOps(), Importer::recurrentOps(),
        Importer::spectralOps()}) {
    for (const OpMapping &m : family) {
      if (!byType.try_emplace(m.opType, &m).second)
        llvm::report_fatal_error("ONNX op '" + m.opType +
                                 "' is registered twice in the importer");
      sorted.push_back(&m);
    }
  }
  llvm::sort(sorted, [](const OpMapping *a, const OpMapping *b) {
    return a->opType < b->opType;
  });
}

const OpRegistry &OpRegistry::get() {
  static const OpRegistry registry;
  return registry;
}

const OpMapping *OpRegistry::lookup(StringRef opType) const {
  return byType.lookup(opType);
}

const OpMapping *OpRegistry::lookup(StringRef domain, StringRef opType) const {
  if (domain.empty() || domain == "ai.onnx")
    return byType.lookup(opType);
  return byType.lookup((domain + "." + opType).str());
}

LogicalResult Importer::importNode(const onnx::NodeProto &n, int index) {
  node = &n;
  attrFailed = false;
  nodeName =
      n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name();
  nodeLoc =
      NameLoc::get(StringAttr::get(ctx, nodeName + "/" + n.op_type()), fileLoc);
  bool defaultDomain = n.domain().empty() || n.domain() == "ai.onnx";
  const OpMapping *mapping = OpRegistry::get().lookup(n.domain(), n.op_type());
  if (!mapping) {
    std::string op =
        defaultDomain ? n.op_type() : n.domain() + "." + n.op_type();
    InFlightDiagnostic diag =
        emitError(nodeLoc) << "unsupported ONNX op '" << op << "' (node '"
                           << nodeName << "', opset " << opset
                           << "); nearest supported alternative: "
                           << dlc::nearestSupportedAlternative(
                                  defaultDomain ? "" : n.domain(), n.op_type());
    // The supported ops are listed by `dlc --check`, not in this message.
    if (!forCheck)
      diag << "; run `dlc --check " << path
           << "` for the list of supported ops";
    return diag;
  }
  // Other domains' ops (version 1 of their domains) have no versions here.
  if (opset >= kMinOpset && defaultDomain) {
    std::string issue = opVersionIssue(*mapping, opset);
    if (!issue.empty())
      return emitError(nodeLoc)
             << "unsupported ONNX op '" << n.op_type() << "' (node '"
             << nodeName << "'): " << issue;
  }
  Block *block = builder.getInsertionBlock();
  Operation *before = block->empty() ? nullptr : &block->back();
  deferredInputs.clear();
  touchesAllSlots = false;
  if (failed((this->*(mapping->handler))()) || failed(foldNode(block, before)))
    return failure();
  return checkLowPrecision(block, before);
}

std::string Importer::unsupportedReason(StringRef domain, StringRef opType,
                                        int64_t opset) {
  const OpMapping *mapping = OpRegistry::get().lookup(domain, opType);
  if (!mapping)
    return "no importer for this op";
  if (!domain.empty() && domain != "ai.onnx")
    return "";
  if (opset >= kMinOpset && opset <= kMaxOpset)
    return opVersionIssue(*mapping, opset);
  if (opset > kMaxOpset || opset < 1)
    return "opset " + std::to_string(opset) + " is outside " +
           std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset);
  if (mapping->mappedSince > opset)
    return "its definition at opset " + std::to_string(opset) +
           " is not mapped (supported from opset " +
           std::to_string(mapping->mappedSince) + ")";
  return "";
}

OwningOpRef<ModuleOp> Importer::run(const onnx::ModelProto &model) {
  if (failed(checkOpset(model)))
    return nullptr;
  const onnx::GraphProto &graph = model.graph();
  mainGraph = &graph;

  module = ModuleOp::create(fileLoc);
  OwningOpRef<ModuleOp> owned(module);
  module->setAttr(dlc::graph::kModelNameAttr,
                  builder.getStringAttr(graph.name()));

  if (failed(importInitializers(graph)) || failed(importInputValues(graph)))
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
    func.setArgAttr(i, dlc::graph::kNameAttr, builder.getStringAttr(name));
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
  // Values a subgraph reads (an outer name, or its own) and its outputs are
  // used too.
  for (const auto &n : graph.node())
    for (const auto &a : n.attribute())
      if (a.has_g())
        forEachNode(a.g(), [&](const onnx::NodeProto &inner) {
          for (const auto &in : inner.input()) {
            consumed.insert(in);
            ++useCount[in];
          }
        });
  forEachNode(graph, [&](const onnx::NodeProto &n) {
    for (const auto &a : n.attribute())
      if (a.has_g())
        for (const auto &out : a.g().output())
          consumed.insert(out.name());
  });

  llvm::StringSet<> failedValues;
  for (auto [i, n] : llvm::enumerate(graph.node())) {
    if (!onNodeFailure) {
      if (failed(importNode(n, i)))
        return nullptr;
      continue;
    }
    bool dependent = llvm::any_of(n.input(), [&](const std::string &in) {
      return failedValues.contains(in);
    });
    if (!dependent && succeeded(importNode(n, i)))
      continue;
    onNodeFailure(i, dependent);
    for (const auto &out : n.output())
      failedValues.insert(out);
    builder.setInsertionPointToEnd(entry);
  }
  if (!failedValues.empty())
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
        dlc::graph::kNameAttr, builder.getStringAttr(out.name()))));
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

/// The folder of the model file |path|, which its external data locations
/// are relative to.
static std::string modelFolder(StringRef path) {
  StringRef dir = llvm::sys::path::parent_path(path);
  return dir.empty() ? "." : dir.str();
}

OwningOpRef<ModuleOp> dlc::importONNXModel(MLIRContext &context, StringRef path,
                                           const ImportOptions &options) {
  context.loadDialect<graph::GraphDialect, func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(&context, path, 0, 0);
  onnx::ModelProto model;
  if (failed(loadModel(path, fileLoc, model)))
    return nullptr;
  Importer importer(context, path, options);
  importer.externalDataDir = modelFolder(path);
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
          Importer::unsupportedReason(domain, n.op_type(), check.opset);
      if (!status.unsupportedReason.empty() &&
          !OpRegistry::get().lookup(domain, n.op_type()))
        status.alternative = nearestSupportedAlternative(domain, n.op_type());
      check.ops.push_back(std::move(status));
    }
    check.ops[it->second].nodes.push_back(
        n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name());
  }

  // The symbolic dimensions the options leave unfixed are listed and
  // checked as 1. (Initializers listed as inputs have static shapes.)
  ImportOptions importOptions = options;
  for (const auto &in : graph.input()) {
    const auto &type = in.type();
    if (!type.has_tensor_type() || !type.tensor_type().has_shape())
      continue;
    const auto &shape = type.tensor_type().shape();
    auto given = llvm::find_if(importOptions.inputShapes,
                               [&](const InputShapeOverride &o) {
                                 return o.name == in.name();
                               });
    if (given != importOptions.inputShapes.end() &&
        (int)given->dims.size() != shape.dim_size())
      continue; // the import reports the rank mismatch
    InputShapeOverride fixed{in.name(),
                             std::vector<int64_t>(shape.dim_size(), -1)};
    if (given != importOptions.inputShapes.end())
      fixed = *given;
    bool unfixed = false;
    for (int i = 0; i < shape.dim_size(); ++i) {
      const auto &d = shape.dim(i);
      if ((d.has_dim_value() && d.dim_value() >= 0) || fixed.dims[i] >= 0 ||
          (i == 0 && options.batchSize > 0))
        continue;
      check.unfixedDims.push_back(
          "input '" + in.name() + "' axis " + std::to_string(i) + " (" +
          (d.has_dim_param() ? "'" + d.dim_param() + "'" : std::string("?")) +
          ")");
      fixed.dims[i] = 1;
      unfixed = true;
    }
    if (!unfixed)
      continue;
    check.inputShapeHints.push_back(inputShapeHint(in));
    if (given != importOptions.inputShapes.end())
      *given = fixed;
    else
      importOptions.inputShapes.push_back(fixed);
  }
  std::string lastError;
  ScopedDiagnosticHandler capture(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() != DiagnosticSeverity::Error)
      return success();
    if (check.importError.empty())
      check.importError = diag.str();
    if (lastError.empty())
      lastError = diag.str();
    return success();
  });
  Importer importer(context, path, importOptions, /*forCheck=*/true);
  importer.externalDataDir = modelFolder(path);
  importer.onNodeFailure = [&](int i, bool dependent) {
    const onnx::NodeProto &n = graph.node(i);
    bool defaultDomain = n.domain().empty() || n.domain() == "ai.onnx";
    ONNXOpStatus &status = check.ops[index.lookup(
        (defaultDomain ? "" : n.domain()) + "\n" + n.op_type())];
    std::string name =
        n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name();
    std::string reason = std::move(lastError);
    lastError.clear();
    if (dependent) {
      status.uncheckedNodes.push_back(name);
      return;
    }
    // An op type without an importer is reported once, for the type.
    if (!status.unsupportedReason.empty())
      return;
    StringRef prefixed = reason;
    prefixed.consume_front(n.op_type() + " node '" + name + "': ");
    if (reason.empty())
      prefixed = "the import failed without a message";
    status.nodeIssues.push_back({name, prefixed.str()});
  };
  OwningOpRef<ModuleOp> module = importer.run(model);
  if (!module && check.importError.empty())
    check.importError = "the import failed without a message";
  check.optimizerSigns = importer.exporterOptimizerSigns(graph);
  return check;
}

std::vector<dlc::SupportedONNXOp> dlc::supportedONNXOps() {
  std::vector<SupportedONNXOp> ops;
  for (const OpMapping *m : OpRegistry::get().entries())
    ops.push_back({m->opType.str(), m->mappedSince,
                   onnx_import::newestMappedVersion(*m)});
  return ops;
}

std::pair<int64_t, int64_t> dlc::supportedOpsets() {
  return {kMinOpset, kMaxOpset};
}
