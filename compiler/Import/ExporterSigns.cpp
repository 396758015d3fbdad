//===- ExporterSigns.cpp - Signs of an exporter's graph optimizer ---------===//
//
// `dlc --check --train` warns when a model's trainable tensors show signs of
// an exporter's graph optimizer (torch.onnx.export's default optimize=True):
// it folds computations on parameters into new constants (a position-
// embedding lookup, a transposed weight) and merges initializers with equal
// contents, so the model no longer trains like the module it came from.
// Compared on a 2-layer GPT-2 exported by torch 2.15 with optimize=True and
// optimize=False (docs/exporting.md), the optimized graph has
//   - f32 initializers named like values the exporter computed (`val_312`,
//     `embedding_1`) instead of the module's parameter names, which an
//     unoptimized export never has (its constants are Constant nodes);
//   - one of them the transpose of another initializer (a tied weight);
//   - one all-zeros bias and one all-ones norm weight shared by every layer.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/Importer.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <deque>
#include <map>

using namespace mlir;
using namespace dlc::onnx_import;

namespace {
/// Bytes per element of a floating-point ONNX type; 0 for other types.
int64_t floatWidth(int32_t type) {
  switch (type) {
  case onnx::TensorProto_DataType_FLOAT:
    return 4;
  case onnx::TensorProto_DataType_DOUBLE:
    return 8;
  case onnx::TensorProto_DataType_FLOAT16:
  case onnx::TensorProto_DataType_BFLOAT16:
    return 2;
  default:
    return 0;
  }
}

const char *floatName(int32_t type) {
  switch (type) {
  case onnx::TensorProto_DataType_FLOAT:
    return "f32";
  case onnx::TensorProto_DataType_DOUBLE:
    return "f64";
  case onnx::TensorProto_DataType_FLOAT16:
    return "f16";
  default:
    return "bf16";
  }
}

int64_t numElements(const onnx::TensorProto &t) {
  int64_t n = 1;
  for (int64_t d : t.dims())
    n = d < 0 ? 0 : n * d;
  return n;
}

std::string shapeOf(const onnx::TensorProto &t) {
  std::string s;
  for (int i = 0; i < t.dims_size(); ++i)
    s += (i ? "x" : "") + std::to_string(t.dims(i));
  return s.empty() ? "scalar" : s;
}

/// A name the exporter gives a value it computed (`val_312`, `embedding_1`,
/// `..._folded`), which a parameter's name (its module path, with dots, or a
/// top-level attribute name) is not.
bool computedValueName(llvm::StringRef name) {
  if (name.contains('.'))
    return false;
  static const llvm::Regex counter("^[a-z][a-z0-9_]*_[0-9]+$");
  return counter.match(name) || name.contains("_folded");
}
} // namespace

std::vector<std::pair<std::string, std::string>>
Importer::exporterOptimizerSigns(const onnx::GraphProto &graph) {
  // Little-endian element bytes of a floating-point initializer (raw_data, external data, or float_data/int32_data copied);
  // none when it is not one or cannot be read (the import reports that).
  std::deque<std::string> copies; // stable addresses: views point into them
  auto bytesOf = [&](const onnx::TensorProto &t) -> std::optional<StringRef> {
    int64_t width = floatWidth(t.data_type()), n = numElements(t);
    if (!width || n < 1)
      return std::nullopt;
    if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
      // Diagnostics of an unreadable file are the import's; not repeated.
      ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
      FailureOr<StringRef> b = externalData(t, n * width, fileLoc, "initializer");
      return succeeded(b) ? std::optional<StringRef>(*b) : std::nullopt;
    }
    if (t.has_raw_data())
      return (int64_t)t.raw_data().size() == n * width
                 ? std::optional<StringRef>(t.raw_data())
                 : std::nullopt;
    std::string copy;
    if (t.data_type() == onnx::TensorProto_DataType_FLOAT &&
        t.float_data_size() == n)
      copy.assign(reinterpret_cast<const char *>(t.float_data().data()), n * 4);
    else if (t.data_type() == onnx::TensorProto_DataType_DOUBLE &&
             t.double_data_size() == n)
      copy.assign(reinterpret_cast<const char *>(t.double_data().data()),
                  n * 8);
    else if (width == 2 && t.int32_data_size() == n)
      for (int32_t v : t.int32_data())
        copy.append({char(v & 0xff), char((v >> 8) & 0xff)});
    else
      return std::nullopt;
    copies.push_back(std::move(copy));
    return StringRef(copies.back());
  };

  // Which (op type, input index) slots of the main graph read each name.
  llvm::StringMap<std::map<std::pair<std::string, int>, int>> uses;
  for (const onnx::NodeProto &n : graph.node())
    for (int i = 0; i < n.input_size(); ++i)
      if (!n.input(i).empty())
        ++uses[n.input(i)][{n.op_type(), i}];

  std::vector<std::pair<std::string, std::string>> signs;
  for (const onnx::TensorProto &t : graph.initializer()) {
    std::optional<StringRef> bytes = bytesOf(t);
    if (!bytes)
      continue;
    int64_t width = floatWidth(t.data_type()), n = numElements(t);
    std::string what = "initializer '" + t.name() + "' (" +
                       floatName(t.data_type()) + " " + shapeOf(t) + ")";

    if (computedValueName(t.name())) {
      std::string sign =
          what + " is named like a value the exporter computed, not like a "
                 "parameter: its graph optimizer folded a computation on "
                 "parameters (an embedding lookup, a transpose) into a "
                 "constant, which trains as a tensor of its own";
      // A folded transpose of another 2-D initializer: the two train apart.
      if (t.dims_size() == 2)
        for (const onnx::TensorProto &o : graph.initializer()) {
          if (&o == &t || o.data_type() != t.data_type() ||
              o.dims_size() != 2 || o.dims(0) != t.dims(1) ||
              o.dims(1) != t.dims(0))
            continue;
          std::optional<StringRef> other = bytesOf(o);
          if (!other)
            continue;
          int64_t rows = t.dims(0), cols = t.dims(1);
          bool transposed = true;
          for (int64_t r = 0; r < rows && transposed; ++r)
            for (int64_t c = 0; c < cols && transposed; ++c)
              transposed = bytes->substr((r * cols + c) * width, width) ==
                           other->substr((c * rows + r) * width, width);
          if (transposed) {
            sign += " (it is the transpose of '" + o.name() +
                    "', and the two no longer share their updates)";
            break;
          }
        }
      signs.push_back({t.name(), sign + "; export with optimize=False"});
      continue;
    }

    // Every element the same, read at one input of several nodes of one op
    // type: identical initializers (fresh biases, norm weights) merged.
    if (n < 2)
      continue;
    StringRef first = bytes->take_front(width);
    bool uniform = true;
    for (int64_t i = 1; i < n && uniform; ++i)
      uniform = bytes->substr(i * width, width) == first;
    if (!uniform)
      continue;
    auto found = uses.find(t.name());
    if (found == uses.end())
      continue;
    for (const auto &[slot, count] : found->second) {
      if (count < 2)
        continue;
      std::string value = "equal";
      if (t.data_type() == onnx::TensorProto_DataType_FLOAT) {
        float v;
        memcpy(&v, first.data(), 4);
        value.clear();
        llvm::raw_string_ostream(value) << llvm::format("%g", v);
      }
      signs.push_back(
          {t.name(), what + ", every element " + value + ", is input " +
                         std::to_string(slot.second) + " of " +
                         std::to_string(count) + " " + slot.first +
                         " nodes: the exporter's graph optimizer merged "
                         "initializers of equal contents (fresh biases or "
                         "norm weights of several layers) into one, which "
                         "trains as one tensor; export with optimize=False"});
      break;
    }
  }
  return signs;
}
