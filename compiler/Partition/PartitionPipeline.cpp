//===- PartitionPipeline.cpp - roofline cost model and stage split ---------===//

#include "compiler/Partition/Passes.h"
#include "compiler/Support/ByteSize.h"
#include "compiler/Support/NodeName.h"
#include "compiler/Training/Passes.h"

#include "dialects/Graph/GraphAttributes.h"
#include "dialects/Graph/GraphInterfaces.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <limits>

namespace dlc {
#define GEN_PASS_DEF_PARTITIONPIPELINEPASS
#include "compiler/Partition/Passes.h.inc"
} // namespace dlc

using namespace mlir;

namespace dlc {

static int64_t valueBytes(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape())
    return 0;
  return t.getNumElements() *
         ((t.getElementType().getIntOrFloatBitWidth() + 7) / 8);
}

static bool isFree(Operation *op) {
  StringRef n = op->getName().getStringRef();
  return n == "dlgraph.read_variable" || n == "dlgraph.constant";
}

static bool isVariableRead(Value v) {
  Operation *d = v.getDefiningOp();
  return d && d->getName().getStringRef() == "dlgraph.read_variable";
}

OpCost costOp(Operation *op, const DeviceModel &model) {
  int64_t flops = 0;
  if (auto rc = dyn_cast<graph::RecomputeCostOpInterface>(op))
    flops = rc.getRecomputeFlops();
  int64_t bytes = 0;
  bool half = false, param = false;
  for (Value v : op->getOperands()) {
    bytes += valueBytes(v);
    param |= isVariableRead(v);
  }
  for (Value v : op->getResults()) {
    bytes += valueBytes(v);
    if (auto t = dyn_cast<ShapedType>(v.getType()))
      half |= t.getElementType().isBF16() || t.getElementType().isF16();
  }
  double peak = half ? model.peakHalfFlops : model.peakFp32Flops;
  OpCost c;
  c.forward = std::max(double(flops) / peak, double(bytes) / model.memoryBandwidth);
  c.backward = (param ? 2.0 : 1.0) * c.forward;
  return c;
}

double transferTime(int64_t bytes, const DeviceModel &model) {
  return double(bytes) / model.linkBandwidth + model.linkLatency;
}

static std::string nodeName(Operation *op) {
  return onnxNodeName(op->getLoc());
}

namespace {
/// The node names of `pipeline-split` ("a,b" -> {a, b}; "" -> none).
SmallVector<std::string> splitNames(StringRef list) {
  SmallVector<std::string> names;
  if (!list.empty())
    for (StringRef name : llvm::split(list, ','))
      names.push_back(name.str());
  return names;
}

/// The pass's options: the partitioning phase's (`pipeline-stages`,
/// `device-model`, `pipeline-split`) and `memory-budget`, each stage's limit
/// on its parameter plus activation bytes.
struct PartitionPipelineOptions : PartitionOptions {
  std::string memoryBudget;

  void bindOptions(OptionsBinder &b) {
    PartitionOptions::bindOptions(b);
    RematOptions::bindMemoryBudget(b, memoryBudget);
  }
};

struct PartitionPipelinePass
    : PassWithOptions<impl::PartitionPipelinePassBase<PartitionPipelinePass>, PartitionPipelineOptions> {
  using PassWithOptions::PassWithOptions;

  void runOnOperation() override {
    if (failed(commitAndCheckOptions(getOperation())))
      return signalPassFailure();
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main) {
      module.emitError("dlgraph-partition-pipeline: no @main (the forward "
                       "function as the importer gives it)");
      return signalPassFailure();
    }
    int64_t stages = pipelineStages;
    if (stages < 1) {
      main.emitError() << "dlgraph-partition-pipeline: stages must be >= 1, got "
                       << stages;
      return signalPassFailure();
    }
    std::optional<int64_t> budget =
        memoryBudget.empty() ? std::optional<int64_t>(0)
                             : parseByteSize(memoryBudget);
    if (!budget) {
      main.emitError() << "dlgraph-partition-pipeline: memory-budget must be "
                          "a size in bytes, got '"
                       << memoryBudget << "'";
      return signalPassFailure();
    }
    SmallVector<std::string> split = splitNames(pipelineSplit);
    llvm::Expected<DeviceModel> model = loadDeviceModel(deviceModel);
    if (!model) {
      main.emitError() << "dlgraph-partition-pipeline: "
                       << llvm::toString(model.takeError());
      return signalPassFailure();
    }

    // The ops that compute, in program order.
    SmallVector<Operation *> ops;
    DenseMap<Operation *, int64_t> index;
    for (Operation &op : main.getBody().front().without_terminator())
      if (!isFree(&op)) {
        index[&op] = ops.size();
        ops.push_back(&op);
      }
    int64_t n = ops.size();
    if (stages > n) {
      main.emitError() << "dlgraph-partition-pipeline: " << int64_t(stages)
                       << " stages but @main has only " << n
                       << " ops that compute";
      return signalPassFailure();
    }

    // Per-op cost, parameter and activation bytes; bytes crossing each
    // boundary b (between ops b-1 and b).
    std::vector<double> cost(n + 1, 0);       // prefix sums of fwd + bwd
    std::vector<double> fwd(n + 1, 0), bwd(n + 1, 0); // prefix sums of each
    std::vector<int64_t> params(n + 1, 0), acts(n + 1, 0);
    std::vector<int64_t> cross(n + 1, 0);
    for (int64_t i = 0; i < n; ++i) {
      OpCost c = costOp(ops[i], *model);
      int64_t p = 0, a = 0;
      for (Value v : ops[i]->getOperands())
        if (isVariableRead(v))
          p += valueBytes(v);
      for (Value r : ops[i]->getResults()) {
        a += valueBytes(r);
        int64_t last = i;
        for (Operation *u : r.getUsers()) {
          auto it = index.find(u);
          if (it != index.end())
            last = std::max(last, it->second);
        }
        for (int64_t b = i + 1; b <= last; ++b)
          cross[b] += valueBytes(r);
      }
      cost[i + 1] = cost[i] + c.forward + c.backward;
      fwd[i + 1] = fwd[i] + c.forward;
      bwd[i + 1] = bwd[i] + c.backward;
      params[i + 1] = params[i] + p;
      acts[i + 1] = acts[i] + a;
    }
    // Transfer time of the boundary after op j-1 (0 at the end of @main).
    auto boundaryTime = [&](int64_t j) {
      return j < n ? transferTime(cross[j], *model) : 0.0;
    };
    auto stageCost = [&](int64_t i, int64_t j) {
      return cost[j] - cost[i] + boundaryTime(j);
    };
    auto fits = [&](int64_t i, int64_t j) {
      return *budget == 0 ||
             params[j] - params[i] + acts[j] - acts[i] <= *budget;
    };

    // Stage ends (exclusive op indices), by hand or by the dynamic program.
    SmallVector<int64_t> ends;
    if (!split.empty()) {
      if (int64_t(split.size()) != stages - 1) {
        main.emitError() << "dlgraph-partition-pipeline: split names "
                         << split.size() << " nodes; " << int64_t(stages)
                         << " stages need " << int64_t(stages) - 1;
        return signalPassFailure();
      }
      for (const std::string &name : split) {
        int64_t at = -1;
        for (int64_t i = 0; i < n; ++i)
          if (nodeName(ops[i]) == name)
            at = i;
        if (at < 0) {
          main.emitError() << "dlgraph-partition-pipeline: unknown node name '"
                           << name << "' in split (names are the ops' ONNX "
                           << "node names)";
          return signalPassFailure();
        }
        if ((!ends.empty() && at + 1 <= ends.back()) || at + 1 >= n) {
          main.emitError() << "dlgraph-partition-pipeline: split node '" << name
                           << "' is out of order (names must follow program "
                           << "order and leave every stage an op)";
          return signalPassFailure();
        }
        ends.push_back(at + 1);
      }
      ends.push_back(n);
    } else {
      const double inf = std::numeric_limits<double>::infinity();
      // best[s][j]: slowest stage of the best split of ops [0, j) into s+1.
      std::vector<std::vector<double>> best(stages, std::vector<double>(n + 1, inf));
      std::vector<std::vector<int64_t>> from(stages, std::vector<int64_t>(n + 1, -1));
      for (int64_t j = 1; j <= n; ++j)
        if (fits(0, j))
          best[0][j] = stageCost(0, j);
      // Stages end between ONNX nodes (the importer's decomposition of one
      // node stays in one stage), so --pipeline-split can name every
      // automatic split: inNode[i] when ops i-1 and i share a node name.
      std::vector<bool> inNode(n + 1, false);
      for (int64_t i = 1; i < n; ++i) {
        std::string name = nodeName(ops[i]);
        inNode[i] = !name.empty() && name == nodeName(ops[i - 1]);
      }
      for (int64_t s = 1; s < stages; ++s)
        for (int64_t j = s + 1; j <= n; ++j)
          for (int64_t i = s; i < j; ++i) {
            if (inNode[i] || best[s - 1][i] == inf || !fits(i, j))
              continue;
            double c = std::max(best[s - 1][i], stageCost(i, j));
            if (c < best[s][j]) {
              best[s][j] = c;
              from[s][j] = i;
            }
          }
      if (best[stages - 1][n] == inf) {
        main.emitError() << "dlgraph-partition-pipeline: no split into "
                         << int64_t(stages) << " stages fits memory-budget "
                         << *budget << " bytes";
        return signalPassFailure();
      }
      int64_t j = n;
      for (int64_t s = stages - 1; s >= 0; --s) {
        ends.push_back(j);
        j = s > 0 ? from[s][j] : 0;
      }
      std::reverse(ends.begin(), ends.end());
    }

    // Annotate.
    OpBuilder b(module.getContext());
    SmallVector<Attribute> records;
    int64_t start = 0;
    for (int64_t s = 0; s < stages; ++s) {
      int64_t end = ends[s];
      for (int64_t i = start; i < end; ++i)
        ops[i]->setAttr(graph::kStageAttr, b.getI64IntegerAttr(s));
      records.push_back(b.getDictionaryAttr({
          b.getNamedAttr("ops", b.getI64IntegerAttr(end - start)),
          b.getNamedAttr("cost", b.getF64FloatAttr(stageCost(start, end))),
          b.getNamedAttr("forward", b.getF64FloatAttr(fwd[end] - fwd[start])),
          b.getNamedAttr("backward",
                         b.getF64FloatAttr(bwd[end] - bwd[start])),
          b.getNamedAttr("transfer", b.getF64FloatAttr(boundaryTime(end))),
          b.getNamedAttr("param_bytes",
                         b.getI64IntegerAttr(params[end] - params[start])),
          b.getNamedAttr("activation_bytes",
                         b.getI64IntegerAttr(acts[end] - acts[start])),
          b.getNamedAttr("first", b.getStringAttr(nodeName(ops[start]))),
          b.getNamedAttr("last", b.getStringAttr(nodeName(ops[end - 1]))),
      }));
      start = end;
    }
    // Reads and constants take their first user's stage (0 when unused).
    for (Operation &op : main.getBody().front().without_terminator()) {
      if (!isFree(&op))
        continue;
      int64_t first = n;
      for (Operation *u : op.getUsers()) {
        auto it = index.find(u);
        if (it != index.end())
          first = std::min(first, it->second);
      }
      op.setAttr(graph::kStageAttr, first < n
                                        ? ops[first]->getAttr(graph::kStageAttr)
                                        : b.getI64IntegerAttr(0));
    }
    main->setAttr(graph::kPipelineStagesAttr, b.getArrayAttr(records));
  }
};
} // namespace

} // namespace dlc

std::unique_ptr<mlir::Pass>
dlc::createPartitionPipelinePass(const PartitionOptions &options) {
  PartitionPipelineOptions all;
  static_cast<PartitionOptions &>(all) = options;
  return std::make_unique<PartitionPipelinePass>(all);
}
