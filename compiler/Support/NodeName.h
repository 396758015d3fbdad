//===- NodeName.h - the ONNX node name of an op's location ------*- C++ -*-===//
#ifndef DLC_COMPILER_SUPPORT_NODENAME_H
#define DLC_COMPILER_SUPPORT_NODENAME_H

#include "mlir/IR/Location.h"

#include <string>

namespace dlc {

/// The ONNX node name |loc| carries: the importer gives every op
/// NameLoc("<node>") (fused with the file's location); the first NameLoc
/// found, else "".
inline std::string onnxNodeName(mlir::Location loc) {
  if (auto n = mlir::dyn_cast<mlir::NameLoc>(loc))
    return n.getName().str();
  if (auto f = mlir::dyn_cast<mlir::FusedLoc>(loc))
    for (mlir::Location l : f.getLocations())
      if (auto n = mlir::dyn_cast<mlir::NameLoc>(l))
        return n.getName().str();
  return "";
}

} // namespace dlc

#endif
