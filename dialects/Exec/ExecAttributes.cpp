//===- ExecAttributes.cpp - dlexec.* attributes: verifier and readers -----===//
// Checks the declared dlexec.* discardable attributes (ExecAttributes.h) and
// reads them back for codegen and `dlc --stats`.
#include "dialects/Exec/ExecAttributes.h"

#include "dialects/Exec/ExecDialect.h"
#include "dialects/Exec/ExecOps.h"
#include "dialects/PhaseRecords.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace dlc::exec;
using dlc::records::Kind;

/// The training step function that carries the buckets and the summary.
static constexpr llvm::StringLiteral kStepFunction = "train_step";

LogicalResult ExecDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  llvm::StringRef name = attr.getName().getValue();
  auto error = [&]() {
    return op->emitOpError() << "attribute '" << name << "' ";
  };
  Attribute value = attr.getValue();
  if (name == kPipelineAttr) {
    if (!isa<ModuleOp>(op))
      return error() << "must be on the module";
    if (std::string problem = dlc::records::checkPipelineRecord(value);
        !problem.empty())
      return error() << problem;
    return success();
  }
  if (name == kBucketsAttr) {
    if (!isa<FuncOp>(op))
      return error() << "must be on a dlexec.func";
    if (std::string problem = dlc::records::checkRecords(
            value, dlc::records::kGradientBucketFields);
        !problem.empty())
      return error() << problem;
    return success();
  }
  if (name.starts_with(kRematSummaryPrefix)) {
    if (!dlc::records::isRematSummaryKey(
            name.drop_front(kRematSummaryPrefix.size())))
      return error() << "is not a remat summary key; the keys are "
                     << llvm::join(
                            llvm::ArrayRef(dlc::records::kRematSummaryKeys),
                            ", ");
    if (!isa<FuncOp>(op))
      return error() << "must be on a dlexec.func";
    if (!dlc::records::isKind(value, Kind::NonNegativeI64))
      return error() << "must be "
                     << dlc::records::describe(Kind::NonNegativeI64);
    return success();
  }
  std::vector<std::string> declared = {kPipelineAttr.str(), kBucketsAttr.str()};
  for (llvm::StringRef key : dlc::records::kRematSummaryKeys)
    declared.push_back((kRematSummaryPrefix + key).str());
  return error() << "is not a declared dlexec attribute; the declared ones "
                    "are "
                 << llvm::join(declared, ", ")
                 << " (dialects/Exec/ExecAttributes.h)";
}

DictionaryAttr dlc::exec::getPipelineRecord(ModuleOp module) {
  return module->getAttrOfType<DictionaryAttr>(kPipelineAttr);
}

std::vector<GradientBucket> dlc::exec::readGradientBuckets(ModuleOp module) {
  std::vector<GradientBucket> out;
  auto train = module.lookupSymbol<FuncOp>(kStepFunction);
  auto records =
      train ? train->getAttrOfType<ArrayAttr>(kBucketsAttr) : ArrayAttr();
  if (!records)
    return out;
  for (Attribute a : records) {
    auto d = cast<DictionaryAttr>(a); // its fields are verified
    GradientBucket bucket;
    bucket.bytes = d.getAs<IntegerAttr>("bytes").getInt();
    for (Attribute n : d.getAs<ArrayAttr>("gradients"))
      bucket.gradients.push_back(cast<StringAttr>(n).str());
    out.push_back(std::move(bucket));
  }
  return out;
}

RematSummary dlc::exec::readRematSummary(ModuleOp module) {
  RematSummary s;
  auto train = module.lookupSymbol<FuncOp>(kStepFunction);
  if (!train)
    return s;
  auto get = [&](StringRef key) -> int64_t {
    auto a =
        train->getAttrOfType<IntegerAttr>((kRematSummaryPrefix + key).str());
    return a ? a.getInt() : 0;
  };
  s.recomputedOps = get("recomputed_ops");
  s.addedFlops = get("added_flops");
  s.stepFlops = get("step_flops");
  s.simulatedPeakBefore = get("simulated_peak_before");
  s.simulatedPeakAfter = get("simulated_peak_after");
  return s;
}
