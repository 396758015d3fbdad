//===- DataParallel.cpp - dlgraph-data-parallel: bucketed gradient all-reduce -===//
// Replaces @train_step's gradients by their mean over the ranks, with one
// all-reduce per bucket issued as soon as the bucket is complete, as
// PyTorch's DistributedDataParallel does; see Passes.td.
#include "compiler/Partition/Passes.h"
#include "compiler/Support/ByteSize.h"
#include "compiler/Training/TrainingStepUtils.h"

#include "dialects/Graph/GraphAttributes.h"
#include "dialects/Graph/GraphOps.h"
#include "mlir/IR/Builders.h"

namespace dlc {
#define GEN_PASS_DEF_DATAPARALLELPASS
#include "compiler/Partition/Passes.h.inc"
} // namespace dlc

using namespace mlir;
using namespace dlc;

namespace {

constexpr llvm::StringLiteral kPass = "--dlgraph-data-parallel";

/// A gradient result of @train_step.
struct Gradient {
  unsigned result = 0; ///< index among @train_step's results
  Value value;
  int64_t position = -1; ///< of its defining op in the body (-1: argument)
  int64_t elements = 0;
  int64_t bytes = 0;
  StringRef name;
};

struct DataParallelPass
    : PassWithOptions<dlc::impl::DataParallelPassBase<DataParallelPass>, PartitionOptions> {
  using PassWithOptions::PassWithOptions;

  void runOnOperation() override {
    if (failed(commitAndCheckOptions(getOperation())))
      return signalPassFailure();
    ModuleOp module = getOperation();
    // check() has accepted a non-empty bucket-size.
    std::optional<int64_t> bucketLimit =
        bucketSize.empty() ? std::optional<int64_t>(kDefaultBucketBytes)
                           : parseByteSize(bucketSize);
    func::FuncOp train = training::lookupTrainStep(module, kPass);
    if (!train)
      return signalPassFailure();
    Block &body = train.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    DenseMap<Operation *, int64_t> position;
    for (auto [i, op] : llvm::enumerate(body))
      position[&op] = static_cast<int64_t>(i);

    SmallVector<Gradient> grads;
    for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
      auto name = train.getResultAttrOfType<StringAttr>(i, training::kNameAttr);
      if (!name || !name.getValue().ends_with(training::kGradSuffix))
        continue;
      Value v = ret.getOperand(i);
      auto t = cast<RankedTensorType>(v.getType());
      Gradient g;
      g.result = i;
      g.value = v;
      if (Operation *def = v.getDefiningOp())
        g.position = position.lookup(body.findAncestorOpInBlock(*def));
      g.elements = t.getNumElements();
      g.bytes = g.elements * ((t.getElementTypeBitWidth() + 7) / 8);
      g.name = name.getValue();
      grads.push_back(g);
    }
    if (grads.empty()) {
      train.emitError() << kPass
                        << " expects @train_step to return gradients named "
                           "\"<parameter>"
                        << training::kGradSuffix
                        << "\" (run it after --dlgraph-differentiate)";
      return signalPassFailure();
    }
    // The order the backward finishes them in.
    llvm::stable_sort(grads, [](const Gradient &a, const Gradient &b) {
      return a.position < b.position;
    });

    // Buckets of at most bucketLimit bytes of one element type.
    SmallVector<SmallVector<Gradient *>> buckets;
    SmallVector<int64_t> bucketBytes;
    for (Gradient &g : grads) {
      Type element = cast<RankedTensorType>(g.value.getType()).getElementType();
      bool fits = !buckets.empty() &&
                  cast<RankedTensorType>(buckets.back().front()->value.getType())
                          .getElementType() == element &&
                  bucketBytes.back() + g.bytes <= *bucketLimit;
      if (!fits) {
        buckets.emplace_back();
        bucketBytes.push_back(0);
      }
      buckets.back().push_back(&g);
      bucketBytes.back() += g.bytes;
    }

    OpBuilder b(module.getContext());
    SmallVector<Attribute> records;
    SmallVector<Value> newResults(ret.getOperands());
    for (auto [bucket, bytes] : llvm::zip(buckets, bucketBytes)) {
      Gradient *last = bucket.back(); // the latest defined
      if (Operation *def = last->value.getDefiningOp())
        b.setInsertionPointAfter(body.findAncestorOpInBlock(*def));
      else
        b.setInsertionPointToStart(&body);
      Type element =
          cast<RankedTensorType>(last->value.getType()).getElementType();
      Location loc = train.getLoc();
      int64_t total = 0;
      SmallVector<Value> flat;
      for (Gradient *g : bucket) {
        auto t = RankedTensorType::get({g->elements}, element);
        flat.push_back(g->value.getType() == t
                           ? g->value
                           : graph::ReshapeOp::create(b, g->value.getLoc(), t,
                                                      g->value)
                                 .getResult());
        total += g->elements;
      }
      auto bucketType = RankedTensorType::get({total}, element);
      Value packed =
          flat.size() == 1
              ? flat.front()
              : graph::ConcatOp::create(b, loc, bucketType, flat,
                                        b.getI64IntegerAttr(0))
                    .getResult();
      Value reduced = graph::AllReduceOp::create(b, loc, bucketType, packed,
                                                 b.getStringAttr("avg"));
      // Unpacked just before the return, where the updates go.
      b.setInsertionPoint(ret);
      int64_t offset = 0;
      SmallVector<Attribute> names;
      for (Gradient *g : bucket) {
        Value part = reduced;
        if (bucket.size() > 1)
          part = graph::SliceOp::create(
              b, g->value.getLoc(), RankedTensorType::get({g->elements}, element),
              reduced, b.getDenseI64ArrayAttr({offset}),
              b.getDenseI64ArrayAttr({1}));
        if (part.getType() != g->value.getType())
          part = graph::ReshapeOp::create(b, g->value.getLoc(),
                                          g->value.getType(), part);
        newResults[g->result] = part;
        offset += g->elements;
        names.push_back(b.getStringAttr(g->name));
      }
      records.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("bytes", b.getI64IntegerAttr(bytes)),
           b.getNamedAttr("gradients", b.getArrayAttr(names))}));
    }
    ret->setOperands(newResults);
    train->setAttr(graph::kBucketsAttr, b.getArrayAttr(records));
  }
};

} // namespace

std::unique_ptr<mlir::Pass> dlc::createDataParallelPass(const PartitionOptions &options) {
  return std::make_unique<DataParallelPass>(options);
}
