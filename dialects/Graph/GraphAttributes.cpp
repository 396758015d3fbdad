//===- GraphAttributes.cpp - the verifier of the dlgraph.* attributes -----===//
// Checks each declared dlgraph.* discardable attribute's kind and place
// (GraphAttributes.h) and rejects undeclared ones.
#include "dialects/Graph/GraphAttributes.h"

#include "dialects/Graph/GraphDialect.h"
#include "dialects/Graph/GraphOps.h"
#include "dialects/PhaseRecords.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace dlc::graph;
using dlc::records::Field;
using dlc::records::Kind;

namespace {

/// Where a declared attribute may appear.
enum class Place {
  Module,      ///< the builtin.module
  Function,    ///< a function (func.func)
  Variable,    ///< a dlgraph.variable
  InBody,      ///< an op inside a function body
  ArgOrResult, ///< a function argument or result attribute
};

/// One declared attribute: its place and kind; |check| (when set) checks a
/// record's fields and returns what is wrong, or "".
struct Declared {
  llvm::StringLiteral name;
  Place place;
  Kind kind;
  std::string (*check)(Attribute) = nullptr;
};

/// One entry of dlgraph.pipeline.stages (dlgraph-partition-pipeline).
constexpr Field kPartitionStageFields[] = {
    {"ops", Kind::NonNegativeI64},
    {"cost", Kind::F64},
    {"forward", Kind::F64},
    {"backward", Kind::F64},
    {"transfer", Kind::F64},
    {"param_bytes", Kind::NonNegativeI64},
    {"activation_bytes", Kind::NonNegativeI64},
    {"first", Kind::String},
    {"last", Kind::String}};

/// The record of dlc-fit-memory-budget.
constexpr Field kMemoryBudgetFields[] = {
    {"budget", Kind::NonNegativeI64},
    {"mode", Kind::String},
    {"persistent_before", Kind::NonNegativeI64},
    {"inputs_before", Kind::NonNegativeI64},
    {"arena_before", Kind::NonNegativeI64},
    {"workspace_before", Kind::NonNegativeI64}};

/// The record of dlgraph-fuse-attention.
constexpr Field kAttentionFusionFields[] = {
    {"candidates", Kind::NonNegativeI64},
    {"fused", Kind::NonNegativeI64},
    {"unfused", Kind::Strings}};

std::string checkAttentionFusion(Attribute a) {
  return dlc::records::checkRecord(a, kAttentionFusionFields);
}
std::string checkPartitionStages(Attribute a) {
  return dlc::records::checkRecords(a, kPartitionStageFields);
}
std::string checkBuckets(Attribute a) {
  return dlc::records::checkRecords(a, dlc::records::kGradientBucketFields);
}
std::string checkMemoryBudget(Attribute a) {
  return dlc::records::checkRecord(a, kMemoryBudgetFields);
}

/// The declared attributes but the remat summary (checked by its prefix).
const Declared kDeclared[] = {
    {kNameAttr, Place::ArgOrResult, Kind::String},
    {kModelNameAttr, Place::Module, Kind::String},
    {kOptimizerStateAttr, Place::Variable, Kind::Unit},
    {kFrozenAttr, Place::Variable, Kind::String},
    {kNoWeightDecayAttr, Place::Variable, Kind::Unit},
    {kStageAttr, Place::InBody, Kind::NonNegativeI64},
    {kBackwardAttr, Place::InBody, Kind::Unit},
    {kRecomputedAttr, Place::InBody, Kind::Unit},
    {kPipelineStagesAttr, Place::Function, Kind::Records, checkPartitionStages},
    {kPipelineAttr, Place::Module, Kind::Dictionary,
     dlc::records::checkPipelineRecord},
    {kBucketsAttr, Place::Function, Kind::Records, checkBuckets},
    {kMemoryBudgetAttr, Place::Module, Kind::Dictionary, checkMemoryBudget},
    {kAttentionFusionAttr, Place::Module, Kind::Dictionary,
     checkAttentionFusion},
};

llvm::StringRef describe(Place place) {
  switch (place) {
  case Place::Module:
    return "the module";
  case Place::Function:
    return "a function";
  case Place::Variable:
    return "a dlgraph.variable";
  case Place::InBody:
    return "an op inside a function";
  case Place::ArgOrResult:
    return "a function argument or result";
  }
  return "";
}

bool isAt(Operation *op, Place place) {
  switch (place) {
  case Place::Module:
    return isa<ModuleOp>(op);
  case Place::Function:
    return isa<FunctionOpInterface>(op);
  case Place::Variable:
    return isa<VariableOp>(op);
  case Place::InBody:
    return op->getParentOfType<FunctionOpInterface>() != nullptr;
  case Place::ArgOrResult:
    return false; // checked by the argument and result verifiers
  }
  return false;
}

/// Checks |attr| on |op| (an argument or result attribute when |argOrResult|).
LogicalResult verify(Operation *op, NamedAttribute attr, bool argOrResult) {
  llvm::StringRef name = attr.getName().getValue();
  auto error = [&]() {
    return op->emitOpError() << "attribute '" << name << "' ";
  };
  if (name.starts_with(kRematSummaryPrefix)) {
    llvm::StringRef key = name.drop_front(kRematSummaryPrefix.size());
    if (!dlc::records::isRematSummaryKey(key))
      return error() << "is not a remat summary key; the keys are "
                     << llvm::join(
                            llvm::ArrayRef(dlc::records::kRematSummaryKeys),
                            ", ");
    if (argOrResult || !isAt(op, Place::Function))
      return error() << "must be on " << describe(Place::Function);
    if (!dlc::records::isKind(attr.getValue(), Kind::NonNegativeI64))
      return error() << "must be " << describe(Kind::NonNegativeI64);
    return success();
  }
  for (const Declared &d : kDeclared) {
    if (d.name != name)
      continue;
    bool placed =
        argOrResult ? d.place == Place::ArgOrResult : isAt(op, d.place);
    if (!placed)
      return error() << "must be on " << describe(d.place);
    if (d.check) {
      if (std::string problem = d.check(attr.getValue()); !problem.empty())
        return error() << problem;
    } else if (!dlc::records::isKind(attr.getValue(), d.kind)) {
      return error() << "must be " << dlc::records::describe(d.kind);
    }
    return success();
  }
  return error() << "is not a declared dlgraph attribute; the declared ones "
                    "are "
                 << llvm::join(declaredAttributeNames(), ", ")
                 << " (dialects/Graph/GraphAttributes.h)";
}

} // namespace

std::vector<std::string> dlc::graph::declaredAttributeNames() {
  std::vector<std::string> names;
  for (const Declared &d : kDeclared)
    names.push_back(d.name.str());
  for (llvm::StringRef key : dlc::records::kRematSummaryKeys)
    names.push_back((kRematSummaryPrefix + key).str());
  return names;
}

LogicalResult GraphDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  return verify(op, attr, /*argOrResult=*/false);
}

LogicalResult GraphDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                     unsigned,
                                                     NamedAttribute attr) {
  return verify(op, attr, /*argOrResult=*/true);
}

LogicalResult GraphDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                        unsigned,
                                                        NamedAttribute attr) {
  return verify(op, attr, /*argOrResult=*/true);
}
