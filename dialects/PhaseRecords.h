//===- PhaseRecords.h - records both dialects carry -------------*- C++ -*-===//
//
// The pipeline record, the gradient buckets and the remat summary are written
// on dlgraph (dialects/Graph/GraphAttributes.h) and carried by the conversion
// to dlexec (dialects/Exec/ExecAttributes.h) for codegen and `dlc --stats`.
// Their fields are declared once here, with the checker both dialects'
// attribute verifiers use. Header-only: neither dialect library links the
// other.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_DIALECTS_PHASERECORDS_H
#define DLC_DIALECTS_PHASERECORDS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace dlc::records {

/// The kind of one attribute or record field.
enum class Kind {
  I64,            ///< a signless 64-bit integer
  NonNegativeI64, ///< a signless 64-bit integer >= 0
  F64,            ///< a 64-bit float
  Bool,           ///< true or false
  String,         ///< a string
  Unit,           ///< a unit attribute (present or absent)
  Strings,        ///< an array of strings
  Records,        ///< an array of dictionaries (checked by their own fields)
  Dictionary,     ///< a dictionary (checked by its own fields)
};

/// One field of a dictionary record.
struct Field {
  llvm::StringLiteral name;
  Kind kind;
};

/// The pipeline record of dlgraph-split-pipeline-stages (`dlgraph.pipeline`,
/// carried as `dlexec.pipeline`); the package writer reads every field.
constexpr Field kPipelineFields[] = {{"micro_batches", Kind::NonNegativeI64},
                                     {"schedule", Kind::String},
                                     {"loss_stage", Kind::NonNegativeI64},
                                     {"stages", Kind::Records},
                                     {"transfers", Kind::Records},
                                     {"inputs", Kind::Strings}};
/// One entry of the pipeline record's `stages`: its functions and the
/// gradient accumulators its update zeroes.
constexpr Field kPipelineStageFields[] = {{"forward", Kind::String},
                                          {"backward", Kind::String},
                                          {"update", Kind::String},
                                          {"accumulators", Kind::Strings}};
/// One entry of the pipeline record's `transfers`: a value sent between
/// stages.
constexpr Field kPipelineTransferFields[] = {{"name", Kind::String},
                                             {"from", Kind::NonNegativeI64},
                                             {"to", Kind::NonNegativeI64},
                                             {"backward", Kind::Bool}};

/// One gradient bucket of dlgraph-data-parallel: its bytes and its
/// "<parameter>.grad" names in packing order.
constexpr Field kGradientBucketFields[] = {{"bytes", Kind::NonNegativeI64},
                                           {"gradients", Kind::Strings}};

/// The keys of dlgraph-remat's summary (one i64 attribute each, under the
/// dialect's prefix): ops cloned into the backward, their FLOPs, the step's
/// FLOPs before the pass, and the pass's model of the arena peak before and
/// after it (bytes).
constexpr llvm::StringLiteral kRematSummaryKeys[] = {
    "recomputed_ops", "added_flops", "step_flops", "simulated_peak_before",
    "simulated_peak_after"};

/// "a non-negative i64", ... for diagnostics.
inline llvm::StringRef describe(Kind kind) {
  switch (kind) {
  case Kind::I64:
    return "an i64";
  case Kind::NonNegativeI64:
    return "a non-negative i64";
  case Kind::F64:
    return "an f64";
  case Kind::Bool:
    return "a bool";
  case Kind::String:
    return "a string";
  case Kind::Unit:
    return "a unit attribute";
  case Kind::Strings:
    return "an array of strings";
  case Kind::Records:
    return "an array of dictionaries";
  case Kind::Dictionary:
    return "a dictionary";
  }
  return "";
}

/// Whether |a| is of |kind| (the entries of a Records array are only checked
/// to be dictionaries).
inline bool isKind(mlir::Attribute a, Kind kind) {
  auto isI64 = [](mlir::Attribute x) {
    auto i = llvm::dyn_cast<mlir::IntegerAttr>(x);
    return i && i.getType().isSignlessInteger(64);
  };
  switch (kind) {
  case Kind::I64:
    return isI64(a);
  case Kind::NonNegativeI64:
    return isI64(a) && llvm::cast<mlir::IntegerAttr>(a).getInt() >= 0;
  case Kind::F64: {
    auto f = llvm::dyn_cast<mlir::FloatAttr>(a);
    return f && f.getType().isF64();
  }
  case Kind::Bool:
    return llvm::isa<mlir::BoolAttr>(a);
  case Kind::String:
    return llvm::isa<mlir::StringAttr>(a);
  case Kind::Unit:
    return llvm::isa<mlir::UnitAttr>(a);
  case Kind::Strings: {
    auto array = llvm::dyn_cast<mlir::ArrayAttr>(a);
    return array && llvm::all_of(array, llvm::IsaPred<mlir::StringAttr>);
  }
  case Kind::Records: {
    auto array = llvm::dyn_cast<mlir::ArrayAttr>(a);
    return array && llvm::all_of(array, llvm::IsaPred<mlir::DictionaryAttr>);
  }
  case Kind::Dictionary:
    return llvm::isa<mlir::DictionaryAttr>(a);
  }
  return false;
}

/// What is wrong with |a| as a dictionary of |fields| (each present, of its
/// kind; other fields are allowed), or "" when nothing is.
inline std::string checkRecord(mlir::Attribute a,
                               llvm::ArrayRef<Field> fields) {
  auto d = llvm::dyn_cast<mlir::DictionaryAttr>(a);
  if (!d)
    return "must be a dictionary";
  for (const Field &f : fields) {
    mlir::Attribute v = d.get(f.name);
    if (!v)
      return ("has no field '" + f.name + "'").str();
    if (!isKind(v, f.kind))
      return ("field '" + f.name + "' must be " + describe(f.kind)).str();
  }
  return "";
}

/// What is wrong with |a| as an array of dictionaries of |fields|, or "".
inline std::string checkRecords(mlir::Attribute a,
                                llvm::ArrayRef<Field> fields) {
  auto array = llvm::dyn_cast<mlir::ArrayAttr>(a);
  if (!array)
    return "must be an array of dictionaries";
  for (auto [i, entry] : llvm::enumerate(array))
    if (std::string problem = checkRecord(entry, fields); !problem.empty())
      return "entry " + std::to_string(i) + " " + problem;
  return "";
}

/// What is wrong with |a| as a pipeline record, or "".
inline std::string checkPipelineRecord(mlir::Attribute a) {
  if (std::string problem = checkRecord(a, kPipelineFields); !problem.empty())
    return problem;
  auto d = llvm::cast<mlir::DictionaryAttr>(a);
  if (std::string problem = checkRecords(d.get("stages"), kPipelineStageFields);
      !problem.empty())
    return "field 'stages': " + problem;
  if (std::string problem =
          checkRecords(d.get("transfers"), kPipelineTransferFields);
      !problem.empty())
    return "field 'transfers': " + problem;
  return "";
}

/// Whether |key| is one of kRematSummaryKeys.
inline bool isRematSummaryKey(llvm::StringRef key) {
  return llvm::is_contained(kRematSummaryKeys, key);
}

} // namespace dlc::records

#endif // DLC_DIALECTS_PHASERECORDS_H
