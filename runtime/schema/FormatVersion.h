//===- FormatVersion.h - the .dlcp package format version ---------*- C++ -*-===//
// MLIR-free and shared: codegen writes this version into every package
// (Package.format_version in package.fbs), dlrt reads packages up to it, and
// `dlc --version` prints it. Bump it with every change to package.fbs that a
// reader must know about.
#ifndef DLC_RUNTIME_SCHEMA_FORMATVERSION_H
#define DLC_RUNTIME_SCHEMA_FORMATVERSION_H

#include <cstdint>

namespace dlc::schema {

/// The package format version a package written now carries.
inline constexpr uint32_t kPackageFormatVersion = 8;

} // namespace dlc::schema

#endif // DLC_RUNTIME_SCHEMA_FORMATVERSION_H
