//===- ControlFlow.cpp - ONNX Scan, Loop and If -> dlgraph ----------------===//
//
// dlgraph has no control flow: a subgraph (GraphProto attribute) is imported
// inline, with its inputs bound to the values of the current iteration, once
// per iteration. Scan is unrolled over its static sequence length, Loop over
// a constant trip count (its condition must fold at every iteration), If
// takes the branch of a constant condition. The unrolled graph grows with
// the length (one copy of the body per step), so the length is bounded by
// kMaxUnrollSteps; gradients are those of the ops the body decomposes into.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "dialects/Graph/GraphOps.h"
#include "llvm/ADT/ScopeExit.h"

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;

//===----------------------------------------------------------------------===//
// Subgraphs
//===----------------------------------------------------------------------===//

/// |s| without a materialized constant value: a copy held outside `slots`
/// must not keep a dlgraph.constant that foldNode may erase once unused.
static Slot detached(Slot s) {
  if (s.constant)
    s.value = Value();
  return s;
}

FailureOr<SmallVector<Slot>>
Importer::importSubgraph(const onnx::GraphProto &g, ArrayRef<Slot> inputs) {
  if (g.input_size() != (int)inputs.size())
    return nodeError() << "subgraph '" << g.name() << "' has "
                       << g.input_size() << " inputs; expected "
                       << inputs.size();
  // The node being imported, restored after the subgraph's nodes.
  const onnx::NodeProto *outerNode = node;
  std::string outerName = nodeName;
  Location outerLoc = nodeLoc;
  bool outerAttrFailed = attrFailed;
  SmallVector<int> outerDeferred = deferredInputs;
  // What the names the subgraph defines stood for outside it (the subgraph
  // sees every outer name it does not redefine).
  SmallVector<std::pair<std::string, std::optional<Slot>>> shadowed;
  llvm::StringSet<> defined;
  auto shadow = [&](const std::string &name) {
    if (name.empty() || !defined.insert(name).second)
      return;
    auto it = slots.find(name);
    if (it == slots.end()) {
      shadowed.push_back({name, std::nullopt});
      return;
    }
    shadowed.push_back({name, detached(it->second)});
    slots.erase(it);
  };
  llvm::scope_exit restore([&] {
    node = outerNode;
    nodeName = outerName;
    nodeLoc = outerLoc;
    attrFailed = outerAttrFailed;
    deferredInputs = outerDeferred;
    for (auto &[name, old] : llvm::reverse(shadowed)) {
      slots.erase(name);
      if (old)
        slots[name] = *old;
    }
    builder.setInsertionPointToEnd(builder.getInsertionBlock());
  });

  for (auto [in, s] : llvm::zip(g.input(), inputs)) {
    shadow(in.name());
    slots[in.name()] = detached(s);
  }
  for (const auto &t : g.initializer()) {
    Location loc = namedLoc(t.name());
    shadow(t.name());
    FailureOr<DenseElementsAttr> c =
        convertTensor(t, loc, "subgraph initializer");
    if (failed(c))
      return failure();
    Slot s;
    s.constant = *c;
    s.loc = loc;
    slots[t.name()] = s;
  }
  for (const auto &n : g.node())
    for (const auto &out : n.output())
      shadow(out);
  for (auto [i, n] : llvm::enumerate(g.node()))
    if (failed(importNode(n, i)))
      return failure();

  SmallVector<Slot> outs;
  for (const auto &out : g.output()) {
    auto it = slots.find(out.name());
    if (it == slots.end())
      return emitError(outerLoc)
             << outerNode->op_type() << " node '" << outerName
             << "': subgraph output '" << out.name()
             << "' is not produced by any node of the subgraph";
    outs.push_back(detached(it->second));
  }
  // The outer node's foldNode must keep every slot's cached constants.
  touchesAllSlots = true;
  return outs;
}

/// |s| reshaped to |shape| (folded when |s| folds).
Slot Importer::reshapeSlot(Slot &s, ArrayRef<int64_t> shape) {
  RankedTensorType t = s.type();
  if (t.getShape() == shape)
    return s;
  Slot out;
  out.loc = nodeLoc;
  auto type = t.clone(shape);
  if (s.isFoldable()) {
    out.constant = s.constant.reshape(type);
    return out;
  }
  out.value = gr::ReshapeOp::create(builder, nodeLoc, type, materialize(s));
  return out;
}

/// s[..., i, ...] along |axis|, without that axis.
Slot Importer::takeAlong(Slot &s, int64_t axis, int64_t i) {
  RankedTensorType t = s.type();
  SmallVector<int64_t> starts(t.getRank(), 0), steps(t.getRank(), 1);
  SmallVector<int64_t> shape(t.getShape());
  starts[axis] = i;
  shape[axis] = 1;
  Slot part = stridedSlice(s, starts, steps, shape);
  shape.erase(shape.begin() + axis);
  return reshapeSlot(part, shape);
}

/// |parts| (of one shape) stacked along a new |axis|.
FailureOr<Slot> Importer::stackAlong(MutableArrayRef<Slot> parts,
                                     int64_t axis) {
  RankedTensorType t = parts.front().type();
  SmallVector<int64_t> unit(t.getShape());
  unit.insert(unit.begin() + axis, 1);
  SmallVector<Value> vals;
  for (Slot &p : parts) {
    if (p.type() != t)
      return nodeError() << "the iterations give results of different types ("
                         << shapeStr(t.getShape()) << " and "
                         << shapeStr(p.type().getShape())
                         << "); stacking them needs one static shape";
    Slot u = reshapeSlot(p, unit);
    vals.push_back(materialize(u));
  }
  Slot out;
  out.loc = nodeLoc;
  out.value = vals.size() == 1 ? vals.front()
                               : (Value)gr::ConcatOp::create(
                                     builder, nodeLoc, vals,
                                     builder.getI64IntegerAttr(axis));
  return out;
}

//===----------------------------------------------------------------------===//
// Scan
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<Slot>> Importer::unrollScan(
    const onnx::GraphProto &body, ArrayRef<Slot> initial,
    MutableArrayRef<Slot> scanned, ArrayRef<int64_t> inAxes,
    ArrayRef<int64_t> inDirs, ArrayRef<int64_t> outAxes,
    ArrayRef<int64_t> outDirs) {
  size_t numStates = initial.size();
  int64_t steps = scanned.front().type().getDimSize(inAxes.front());
  for (auto [i, s] : llvm::enumerate(scanned))
    if (s.type().getDimSize(inAxes[i]) != steps)
      return nodeError() << "scan input " << i << " has "
                         << s.type().getDimSize(inAxes[i])
                         << " steps along axis " << inAxes[i]
                         << ", scan input 0 has " << steps
                         << "; the scan inputs need one sequence length";
  if (steps < 1 || steps > kMaxUnrollSteps)
    return nodeError() << "sequence length " << steps
                       << " is not supported; supported: 1 to "
                       << kMaxUnrollSteps
                       << " (the body is unrolled once per step at import)";
  SmallVector<Slot> states(initial.begin(), initial.end());
  size_t numOuts = body.output_size() - numStates;
  SmallVector<SmallVector<Slot>> pieces(numOuts);
  for (int64_t t = 0; t < steps; ++t) {
    SmallVector<Slot> ins(states);
    for (auto [i, s] : llvm::enumerate(scanned))
      ins.push_back(takeAlong(s, inAxes[i], inDirs[i] ? steps - 1 - t : t));
    FailureOr<SmallVector<Slot>> outs = importSubgraph(body, ins);
    if (failed(outs))
      return failure();
    for (size_t i = 0; i < numStates; ++i)
      states[i] = (*outs)[i];
    for (size_t k = 0; k < numOuts; ++k)
      pieces[k].push_back((*outs)[numStates + k]);
  }
  SmallVector<Slot> results(states);
  for (size_t k = 0; k < numOuts; ++k) {
    if (outDirs[k])
      std::reverse(pieces[k].begin(), pieces[k].end());
    int64_t rank = pieces[k].front().type().getRank() + 1;
    int64_t axis = outAxes[k] < 0 ? outAxes[k] + rank : outAxes[k];
    if (axis < 0 || axis >= rank)
      return nodeError() << "scan_output_axes[" << k << "] = " << outAxes[k]
                         << " is out of range for a scan output of rank "
                         << rank;
    FailureOr<Slot> stacked = stackAlong(pieces[k], axis);
    if (failed(stacked))
      return failure();
    results.push_back(*stacked);
  }
  return results;
}

LogicalResult Importer::scan() {
  const onnx::AttributeProto *bodyAttr = findAttr("body");
  if (!bodyAttr || bodyAttr->type() != onnx::AttributeProto_AttributeType_GRAPH)
    return nodeError() << "attribute 'body' (a graph) is required";
  const onnx::GraphProto &body = bodyAttr->g();
  // Scan-8 has a batch axis 0 and an optional sequence_lens input first.
  bool batched = opVersionAt("Scan", opset) == 8;
  int first = batched ? 1 : 0;
  int64_t numScanned = attrInt("num_scan_inputs", -1);
  int64_t numStates = node->input_size() - first - numScanned;
  if (attrFailed)
    return failure();
  if (numScanned < 1 || numStates < 0)
    return nodeError() << "num_scan_inputs = " << numScanned
                       << " is not supported for a node with "
                       << node->input_size() - first
                       << " state and scan inputs; supported: 1 to "
                       << node->input_size() - first;
  if (batched && hasInput(0))
    return nodeError() << "input 0 (sequence_lens) is not supported; "
                          "supported: no sequence_lens (every batch entry "
                          "scans the whole sequence)";
  int64_t numOuts = body.output_size() - numStates;
  if (body.input_size() != numStates + numScanned || numOuts < 0)
    return nodeError() << "the body has " << body.input_size() << " inputs and "
                       << body.output_size() << " outputs; expected "
                       << numStates + numScanned << " inputs and at least "
                       << numStates << " outputs";
  SmallVector<int64_t> inAxes =
      batched ? SmallVector<int64_t>(numScanned, 0)
              : attrInts("scan_input_axes", SmallVector<int64_t>(numScanned));
  SmallVector<int64_t> inDirs =
      attrInts(batched ? "directions" : "scan_input_directions",
               SmallVector<int64_t>(numScanned));
  SmallVector<int64_t> outAxes =
      attrInts("scan_output_axes", SmallVector<int64_t>(numOuts));
  SmallVector<int64_t> outDirs =
      attrInts("scan_output_directions", SmallVector<int64_t>(numOuts));
  if (attrFailed)
    return failure();
  if ((int64_t)inAxes.size() != numScanned ||
      (int64_t)inDirs.size() != numScanned ||
      (int64_t)outAxes.size() != numOuts ||
      (int64_t)outDirs.size() != numOuts)
    return nodeError() << "scan_input_axes/directions need "
                       << numScanned
                       << " entries and scan_output_axes/directions "
                       << numOuts;

  SmallVector<Slot> initial, scanned;
  for (int i = first; i < node->input_size(); ++i) {
    Slot *s = input(i);
    if (!s)
      return failure();
    (i < first + numStates ? initial : scanned).push_back(detached(*s));
  }
  for (auto [i, s] : llvm::enumerate(scanned)) {
    int64_t rank = s.type().getRank() - (batched ? 1 : 0);
    int64_t &axis = inAxes[i];
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis >= rank)
      return nodeError() << "scan input " << i << " of rank " << rank
                         << " has no axis " << inAxes[i];
  }

  SmallVector<Slot> results;
  if (!batched) {
    FailureOr<SmallVector<Slot>> r =
        unrollScan(body, initial, scanned, inAxes, inDirs, outAxes, outDirs);
    if (failed(r))
      return failure();
    results = std::move(*r);
  } else {
    // One scan per batch entry, the results stacked along axis 0.
    int64_t batch = -1;
    for (Slot &s : llvm::concat<Slot>(initial, scanned)) {
      if (s.type().getRank() < 1 ||
          (batch >= 0 && s.type().getDimSize(0) != batch))
        return nodeError() << "the inputs need one batch size along axis 0";
      batch = s.type().getDimSize(0);
    }
    if (batch < 1 || batch > kMaxUnrollSteps)
      return nodeError() << "batch size " << batch
                         << " is not supported; supported: 1 to "
                         << kMaxUnrollSteps;
    SmallVector<SmallVector<Slot>> perBatch(numStates + numOuts);
    for (int64_t b = 0; b < batch; ++b) {
      SmallVector<Slot> init, scan;
      for (Slot &s : initial)
        init.push_back(takeAlong(s, 0, b));
      for (Slot &s : scanned)
        scan.push_back(takeAlong(s, 0, b));
      FailureOr<SmallVector<Slot>> r =
          unrollScan(body, init, scan, inAxes, inDirs, outAxes, outDirs);
      if (failed(r))
        return failure();
      for (auto [i, s] : llvm::enumerate(*r))
        perBatch[i].push_back(detached(s));
    }
    for (auto &parts : perBatch) {
      FailureOr<Slot> stacked = stackAlong(parts, 0);
      if (failed(stacked))
        return failure();
      results.push_back(*stacked);
    }
  }
  for (auto [i, s] : llvm::enumerate(results))
    if (failed(defineSlot(i, s)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// If and Loop
//===----------------------------------------------------------------------===//

/// The graph attribute |name| of the current node, or null after an error.
const onnx::GraphProto *Importer::graphAttr(StringRef name) {
  const onnx::AttributeProto *a = findAttr(name);
  if (!a || a->type() != onnx::AttributeProto_AttributeType_GRAPH) {
    nodeError() << "attribute '" << name << "' (a graph) is required";
    return nullptr;
  }
  return &a->g();
}

FailureOr<bool> Importer::constCondition(int i, StringRef what,
                                         StringRef otherwise) {
  Slot *s = input(i);
  if (!s)
    return failure();
  if (!s->isFoldable() || !s->type().getElementType().isInteger(1) ||
      s->constant.getNumElements() != 1)
    return nodeError() << what << " (input '" << node->input(i)
                       << "') must be a constant bool of one element (a "
                          "Constant, an initializer or a foldable "
                          "computation); "
                       << otherwise << constantInputHint(i);
  return *s->constant.getValues<bool>().begin();
}

LogicalResult Importer::ifOp() {
  FailureOr<bool> cond = constCondition(
      0, "the condition",
      "supported: a condition known at import (for a run-time condition, "
      "export both branches and select with Where)");
  if (failed(cond))
    return failure();
  const onnx::GraphProto *branch =
      graphAttr(*cond ? "then_branch" : "else_branch");
  if (!branch)
    return failure();
  FailureOr<SmallVector<Slot>> outs = importSubgraph(*branch, {});
  if (failed(outs))
    return failure();
  for (auto [i, s] : llvm::enumerate(*outs))
    if (failed(defineSlot(i, s)))
      return failure();
  return success();
}

LogicalResult Importer::loop() {
  const onnx::GraphProto *body = graphAttr("body");
  if (!body)
    return failure();
  int64_t numCarried = node->input_size() - 2;
  int64_t numScanOuts = body->output_size() - 1 - numCarried;
  if (numCarried < 0 || body->input_size() != numCarried + 2 ||
      numScanOuts < 0)
    return nodeError() << "the body has " << body->input_size()
                       << " inputs and " << body->output_size()
                       << " outputs for " << std::max<int64_t>(numCarried, 0)
                       << " loop-carried values; expected "
                       << numCarried + 2 << " inputs and at least "
                       << numCarried + 1 << " outputs";
  if (!hasInput(0))
    return nodeError() << "a loop without a trip count (input M) is not "
                          "supported; supported: a constant trip count (the "
                          "body is unrolled at import)";
  FailureOr<SmallVector<int64_t>> trips =
      constInts(0, "the trip count M");
  if (failed(trips))
    return failure();
  if (trips->size() != 1 || trips->front() < 0 ||
      trips->front() > kMaxUnrollSteps)
    return nodeError() << "trip count " << shapeStr(*trips)
                       << " is not supported; supported: one value from 0 to "
                       << kMaxUnrollSteps
                       << " (the body is unrolled once per iteration at "
                          "import)";
  bool go = true;
  if (hasInput(1)) {
    FailureOr<bool> c = constCondition(
        1, "the initial condition",
        "supported: a condition known at import");
    if (failed(c))
      return failure();
    go = *c;
  }
  SmallVector<Slot> carried;
  for (int i = 2; i < node->input_size(); ++i) {
    Slot *s = input(i);
    if (!s)
      return failure();
    carried.push_back(detached(*s));
  }
  auto scalar = [&](Type et, int64_t v) {
    Slot s;
    s.loc = nodeLoc;
    auto t = RankedTensorType::get({}, et);
    bool flag = v != 0;
    s.constant = et.isInteger(1) ? DenseElementsAttr::get(t, ArrayRef(flag))
                                 : intConstant(t, {v});
    return s;
  };
  SmallVector<SmallVector<Slot>> pieces(numScanOuts);
  for (int64_t it = 0; go && it < trips->front(); ++it) {
    SmallVector<Slot> ins = {scalar(builder.getI64Type(), it),
                             scalar(builder.getI1Type(), 1)};
    ins.append(carried);
    FailureOr<SmallVector<Slot>> outs = importSubgraph(*body, ins);
    if (failed(outs))
      return failure();
    Slot &c = (*outs)[0];
    if (!c.isFoldable() || !c.type().getElementType().isInteger(1) ||
        c.constant.getNumElements() != 1)
      return nodeError() << "the body's condition output ('"
                         << body->output(0).name()
                         << "') is not a constant at iteration " << it
                         << "; supported: a condition known at import (the "
                            "body is unrolled)";
    go = *c.constant.getValues<bool>().begin();
    for (int64_t i = 0; i < numCarried; ++i)
      carried[i] = (*outs)[1 + i];
    for (int64_t k = 0; k < numScanOuts; ++k)
      pieces[k].push_back((*outs)[1 + numCarried + k]);
  }
  for (auto [i, s] : llvm::enumerate(carried))
    if (failed(defineSlot(i, s)))
      return failure();
  for (int64_t k = 0; k < numScanOuts; ++k) {
    if (pieces[k].empty())
      return nodeError() << "scan output " << k
                         << " of a loop that runs no iteration has no static "
                            "shape; supported: at least one iteration";
    FailureOr<Slot> stacked = stackAlong(pieces[k], 0);
    if (failed(stacked) || failed(defineSlot(numCarried + k, *stacked)))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

ArrayRef<OpMapping> Importer::controlFlowOps() {
  static const OpMapping table[] = {
      // Versions 9 to 25 only widened the element types; 8 is read as its
      // own definition (batch axis 0, `directions`).
      // Versions 13 to 25 of If and Loop only widened the element types.
      {"If", 11, &Importer::ifOp, 25},
      {"Loop", 11, &Importer::loop, 25},
      {"Scan", 8, &Importer::scan, 25},
  };
  return table;
}
