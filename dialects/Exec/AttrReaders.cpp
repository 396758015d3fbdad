//===- AttrReaders.cpp - typed reads of dlexec op attributes --------------===//
#include "dialects/Exec/AttrReaders.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace dlc::exec {

FailureOr<SmallVector<int64_t>> getIntList(Operation *op, StringRef name,
                                           ArrayRef<int64_t> fallback,
                                           size_t expectedSize) {
  Attribute attr = op->getAttr(name);
  SmallVector<int64_t> out;
  if (!attr) {
    out.assign(fallback.begin(), fallback.end());
  } else if (auto a = dyn_cast<DenseI64ArrayAttr>(attr)) {
    out.assign(a.asArrayRef().begin(), a.asArrayRef().end());
  } else if (auto a = dyn_cast<ArrayAttr>(attr)) {
    for (Attribute e : a) {
      auto i = dyn_cast<IntegerAttr>(e);
      if (!i)
        return op->emitOpError()
               << "attribute '" << name << "' must be a list of integers";
      out.push_back(i.getInt());
    }
  } else if (auto a = dyn_cast<DenseIntElementsAttr>(attr)) {
    for (const APInt &v : a.getValues<APInt>())
      out.push_back(v.getSExtValue());
  } else {
    return op->emitOpError()
           << "attribute '" << name << "' must be a list of integers";
  }
  if (out.size() != expectedSize)
    return op->emitOpError() << "attribute '" << name << "' has " << out.size()
                             << " values, expected " << expectedSize;
  return out;
}

FailureOr<int64_t> getInt(Operation *op, StringRef name, int64_t fallback) {
  Attribute attr = op->getAttr(name);
  if (!attr)
    return fallback;
  if (auto b = dyn_cast<BoolAttr>(attr))
    return (int64_t)b.getValue();
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return i.getInt();
  return op->emitOpError() << "attribute '" << name
                           << "' must be an integer or a boolean";
}

FailureOr<float> getFloat(Operation *op, StringRef name, float fallback) {
  Attribute attr = op->getAttr(name);
  if (!attr)
    return fallback;
  if (auto f = dyn_cast<FloatAttr>(attr))
    return (float)f.getValueAsDouble();
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return (float)i.getInt();
  return op->emitOpError() << "attribute '" << name << "' must be a number";
}

} // namespace dlc::exec
