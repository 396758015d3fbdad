//===- Importer.cpp - Node-level helpers of the ONNX importer -------------===//
//
// What every op family's handlers use: attribute readers, operand and
// constant access, result definition, splat constants, and the shape and
// type helpers declared in Importer.h.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"
#include "llvm/ADT/StringExtras.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;

namespace dlc::onnx_import {

int64_t boundedNumElements(llvm::ArrayRef<int64_t> shape, int64_t limit) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && n > limit / d))
      return -1;
    n *= d;
  }
  return n <= limit ? n : -1;
}

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
  case onnx::TensorProto_DataType_FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto_DataType_BFLOAT16:
    return b.getBF16Type();
  default:
    return Type();
  }
}

bool isLowPrecisionFloat(Type t) { return t.isF16() || t.isBF16(); }

bool isNumeric(Type t) {
  return t.isF32() || t.isF64() || isLowPrecisionFloat(t) || t.isInteger(32) ||
         t.isInteger(64);
}

std::string elementTypeName(Type t) {
  if (t.isF32())
    return "float (f32)";
  if (t.isF64())
    return "double (f64)";
  if (t.isF16())
    return "float16";
  if (t.isBF16())
    return "bfloat16";
  if (t.isInteger(1))
    return "bool";
  if (t.isSignlessInteger())
    return "int" + std::to_string(t.getIntOrFloatBitWidth());
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

SmallVector<int64_t> intValues(DenseElementsAttr c) {
  SmallVector<int64_t> v;
  for (const APInt &x : c.getValues<APInt>())
    v.push_back(x.getSExtValue());
  return v;
}

DenseElementsAttr intConstant(RankedTensorType type, ArrayRef<int64_t> v) {
  unsigned w = type.getElementType().getIntOrFloatBitWidth();
  SmallVector<APInt> vals;
  for (int64_t x : v)
    vals.push_back(
        APInt(w, (uint64_t)x, /*isSigned=*/true, /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, vals);
}

std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

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

} // namespace dlc::onnx_import

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
      auto type = s.type();
      OpBuilder::InsertPoint ip = builder.saveInsertionPoint();
      builder.setInsertionPoint(func);
      ElementsAttr init =
          s.resource ? ElementsAttr(s.resource) : ElementsAttr(s.constant);
      gr::VariableOp::create(builder, s.loc, s.variable, type, init,
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
    // A constant of another type is fine when the whole node folds
    // (checked after the handler, in foldNode).
    if (s->isFoldable()) {
      deferredInputs.push_back(i);
      return materialize(*s);
    }
    if (isLowPrecisionFloat(s->type().getElementType())) {
      unsupportedLowPrecision(i, "float (f32)");
      return {};
    }
    nodeError() << "input " << i << " ('" << node->input(i)
                << "') has element type " << s->type().getElementType()
                << ", which is not supported here; supported: f32";
    return {};
  }
  return materialize(*s);
}

InFlightDiagnostic Importer::unsupportedLowPrecision(int i,
                                                     StringRef supported) {
  Slot *s = input(i);
  Type et = s ? s->type().getElementType() : Type();
  return nodeError() << "input " << i << " ('" << node->input(i)
                     << "') has element type "
                     << (et ? elementTypeName(et) : "?")
                     << ", which is not supported by " << node->op_type()
                     << " yet; supported: " << supported;
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
                          "computation)"
                       << constantInputHint(i);
  return intValues(s->constant);
}

std::string Importer::constantInputHint(int i) {
  if (!hasInput(i))
    return "";
  // The graph inputs the value is computed from.
  SmallVector<std::string> found;
  bool onlyIntegers = true;
  if (graphInputs.contains(node->input(i))) {
    found.push_back(node->input(i));
  } else if (mainGraph) {
    llvm::StringMap<const onnx::NodeProto *> producers;
    for (const onnx::NodeProto &n : mainGraph->node())
      for (const std::string &out : n.output())
        producers[out] = &n;
    SmallVector<std::string> work{node->input(i)};
    llvm::StringSet<> seen;
    while (!work.empty() && found.size() <= 8) {
      std::string name = work.pop_back_val();
      if (name.empty() || !seen.insert(name).second)
        continue;
      if (graphInputs.contains(name)) {
        // Bound inputs are constants already.
        if (slots.count(name) && slots[name].constant)
          continue;
        found.push_back(name);
        for (const onnx::ValueInfoProto &in : mainGraph->input())
          if (in.name() == name) {
            int32_t et = in.type().tensor_type().elem_type();
            onlyIntegers &= et == onnx::TensorProto_DataType_INT64 ||
                            et == onnx::TensorProto_DataType_INT32;
          }
        continue;
      }
      auto p = producers.find(name);
      if (p == producers.end())
        continue;
      const onnx::NodeProto &n = *p->second;
      if (n.op_type() == "Shape" || n.op_type() == "Size")
        continue;
      for (const std::string &in : n.input())
        work.push_back(in);
    }
    if (!onlyIntegers || found.size() > 8)
      found.clear();
  }
  if (found.empty())
    return "";
  llvm::sort(found);
  std::string hint = found.size() == 1 ? "; give graph input '" + found[0] +
                                             "' its value at compile time "
                                             "with"
                                       : "; give graph inputs '" +
                                             llvm::join(found, "', '") +
                                             "' their values at compile "
                                             "time with";
  for (const std::string &name : found)
    hint += " --input-value " + name + "=FILE";
  return hint;
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
// Operands and constants of elementwise decompositions
//===----------------------------------------------------------------------===//

Value Importer::floatOperand(int i) {
  Slot *s = input(i);
  if (!s)
    return {};
  if (!isa<FloatType>(s->type().getElementType())) {
    nodeError() << "input " << i << " ('" << node->input(i)
                << "') has element type " << s->type().getElementType()
                << ", which is not supported here; supported: float (f32), "
                   "double (f64), float16, bfloat16";
    return {};
  }
  return materialize(*s);
}

Value Importer::numericOperand(int i) {
  Slot *s = input(i);
  if (!s)
    return {};
  if (!isNumeric(s->type().getElementType())) {
    nodeError() << "input " << i << " ('" << node->input(i)
                << "') has element type " << s->type().getElementType()
                << ", which is not supported here; supported: float (f32), "
                   "double (f64), float16, bfloat16, int32, int64";
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

//===----------------------------------------------------------------------===//
// Constant folding of a node's ops
//===----------------------------------------------------------------------===//

/// The contents of |v| when it is a dlgraph.constant small enough to fold.
static DenseElementsAttr foldableConstant(Value v) {
  auto c = v.getDefiningOp<gr::ConstantOp>();
  auto d = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : DenseElementsAttr();
  return d && d.getNumElements() <= kMaxFoldElements ? d : DenseElementsAttr();
}

/// True when |d| has a 16-bit float element type and holds a NaN. Ops on
/// such constants are not folded: the run-time kernels make every f16/bf16
/// NaN they compute 0x7FFF and every NaN they widen to f32 0x7FFFFFFF
/// (CUDA's __float2half_rn/__float2bfloat16_rn/__half2float, and the host
/// conversions that match them), while APFloat keeps NaN payloads.
static bool holdsLowPrecisionNaN(DenseElementsAttr d) {
  if (!isLowPrecisionFloat(d.getElementType()))
    return false;
  if (d.isSplat())
    return d.getSplatValue<APFloat>().isNaN();
  return llvm::any_of(d.getValues<APFloat>(),
                      [](const APFloat &v) { return v.isNaN(); });
}

LogicalResult Importer::foldNode(Block *block, Operation *before) {
  SmallVector<Operation *> created;
  for (auto it = before ? std::next(before->getIterator()) : block->begin();
       it != block->end(); ++it)
    created.push_back(&*it);
  // Folded results, for the node's output slots.
  llvm::DenseMap<Value, Value> replaced;
  for (Operation *op : created) {
    if (isa<gr::ConstantOp>(op) || op->getNumOperands() == 0 ||
        op->getNumResults() == 0)
      continue;
    SmallVector<Attribute> operands;
    for (Value v : op->getOperands())
      operands.push_back(foldableConstant(v));
    if (llvm::is_contained(operands, Attribute()) ||
        llvm::any_of(operands, [](Attribute a) {
          return holdsLowPrecisionNaN(cast<DenseElementsAttr>(a));
        }))
      continue;
    SmallVector<OpFoldResult> results;
    if (failed(op->fold(operands, results)) ||
        results.size() != op->getNumResults())
      continue;
    SmallVector<DenseElementsAttr> values;
    for (auto [r, res] : llvm::zip(results, op->getResults())) {
      // An attribute, or an operand (identity-like folds).
      auto d = isa<Value>(r) ? foldableConstant(cast<Value>(r))
                             : dyn_cast_or_null<DenseElementsAttr>(
                                   dyn_cast_if_present<Attribute>(r));
      if (!d || d.getType() != res.getType() || holdsLowPrecisionNaN(d))
        break;
      values.push_back(d);
    }
    if (values.size() != op->getNumResults())
      continue;
    builder.setInsertionPoint(op);
    for (auto [d, res] : llvm::zip(values, op->getResults())) {
      Value c = gr::ConstantOp::create(builder, op->getLoc(), d);
      res.replaceAllUsesWith(c);
      replaced[res] = c;
    }
    op->erase();
  }
  builder.setInsertionPointToEnd(block);

  // Outputs that are constants now become constant Slots; the constants
  // this node left unused are erased (and forgotten by the slots that
  // cached them).
  SmallVector<Slot *> touched;
  for (int i = 0; i < node->output_size(); ++i) {
    auto it = slots.find(node->output(i));
    if (node->output(i).empty() || it == slots.end())
      continue;
    Slot &s = it->second;
    if (Value v = replaced.lookup(s.value))
      s.value = v;
    if (!s.constant && s.value)
      if (DenseElementsAttr d = foldableConstant(s.value))
        s.constant = d;
    touched.push_back(&s);
  }
  for (int i = 0; i < node->input_size(); ++i) {
    auto it = slots.find(node->input(i));
    if (it != slots.end())
      touched.push_back(&it->second);
  }
  // A node that imported a subgraph may have materialized constants of any
  // outer name (its body reads them).
  if (touchesAllSlots)
    for (auto &entry : slots) {
      Slot &s = entry.second;
      if (Value v = replaced.lookup(s.value))
        s.value = v;
      touched.push_back(&s);
    }
  for (auto it = before ? std::next(before->getIterator()) : block->begin();
       it != block->end();) {
    Operation *op = &*it++;
    if (!isa<gr::ConstantOp>(op) || !op->use_empty())
      continue;
    for (Slot *s : touched)
      if (s->value == op->getResult(0) && s->constant)
        s->value = Value();
    if (llvm::any_of(touched, [&](Slot *s) {
          return s->value == op->getResult(0);
        }))
      continue;
    op->erase();
  }

  if (deferredInputs.empty())
    return success();
  for (int i = 0; i < node->output_size(); ++i) {
    auto it = slots.find(node->output(i));
    if (node->output(i).empty() || it == slots.end() || it->second.constant)
      continue;
    int in = deferredInputs.front();
    if (isLowPrecisionFloat(input(in)->type().getElementType()))
      return unsupportedLowPrecision(in, "float (f32)");
    return nodeError() << "input " << in << " ('" << node->input(in)
                       << "') has element type "
                       << input(in)->type().getElementType()
                       << ", which is not supported here; supported: f32";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// 16-bit float element types
//===----------------------------------------------------------------------===//

/// Whether the dlgraph lowering takes |op| with f16/bf16 operands or results
/// this far, asked of the op as the lowering asks it (FuncLowering::lowerOp
/// in compiler/Conversion/GraphToExec): ops with at most O(1) work per element
/// (recompute cost Free, Cheap or Never: elementwise ops, casts, constants,
/// variables, reshape, transpose, broadcast_to, slice, pad, concat, gather,
/// one_hot) need no new math; ops that accumulate (cost Moderate or
/// Expensive: reductions, softmax, pooling, normalization, losses, cumsum,
/// matmul, gemm, conv) need f32 accumulation and f16 library calls, which
/// do not exist yet. Resize, whose built-in kernel has no f16/bf16 form
/// yet, is rejected by its handler. Ops with ReadsLowPrecision take them.
static bool takesLowPrecision(Operation *op) {
  // Ops that widen f16/bf16 as they read and accumulate in f32 (the fused
  // attention).
  if (op->hasTrait<gr::GraphTrait::ReadsLowPrecision>())
    return true;
  auto cost = dyn_cast<gr::RecomputeCostOpInterface>(op);
  return !cost || (cost.getRecomputeCost() != gr::RecomputeCost::Moderate &&
                   cost.getRecomputeCost() != gr::RecomputeCost::Expensive);
}

/// The first f16/bf16 element type among |op|'s operand and result types.
static Type lowPrecisionTypeOf(Operation *op) {
  for (TypeRange types :
       {TypeRange(op->getOperandTypes()), TypeRange(op->getResultTypes())})
    for (Type t : types)
      if (auto rt = dyn_cast<RankedTensorType>(t))
        if (isLowPrecisionFloat(rt.getElementType()))
          return rt.getElementType();
  return Type();
}

LogicalResult Importer::checkLowPrecision(Block *block, Operation *before) {
  for (auto it = before ? std::next(before->getIterator()) : block->begin();
       it != block->end(); ++it) {
    Operation *op = &*it;
    Type et = lowPrecisionTypeOf(op);
    if (!et || takesLowPrecision(op))
      continue;
    std::string what = "(float16 and bfloat16 reach only elementwise and "
                       "data-movement ops so far, not " +
                       op->getName().getStringRef().str() +
                       "); supported: float (f32)";
    // Name the node's input that brought the type in, where there is one.
    for (int i = 0; i < node->input_size(); ++i) {
      auto s = slots.find(node->input(i));
      if (node->input(i).empty() || s == slots.end() ||
          !isLowPrecisionFloat(s->second.type().getElementType()))
        continue;
      return nodeError() << "input " << i << " ('" << node->input(i)
                         << "') has element type "
                         << elementTypeName(s->second.type().getElementType())
                         << ", which is not supported by " << node->op_type()
                         << " yet " << what;
    }
    return nodeError() << "element type " << elementTypeName(et)
                       << " is not supported by " << node->op_type() << " yet "
                       << what;
  }
  return success();
}

LogicalResult Importer::normalizeAxes(SmallVectorImpl<int64_t> &axes,
                                      int64_t rank,
                                      SmallVectorImpl<bool> *seen) {
  SmallVector<bool> flags(rank, false);
  SmallVector<int64_t> given(axes.begin(), axes.end());
  for (int64_t &a : axes) {
    int64_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank || flags[n])
      return nodeError() << "axes " << shapeStr(given)
                         << " are out of range or repeated for rank " << rank;
    flags[n] = true;
    a = n;
  }
  if (seen)
    seen->assign(flags.begin(), flags.end());
  return success();
}
