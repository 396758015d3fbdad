//===- Limits.h - limits of the package format shared by dlc and dlrt ----===//
// MLIR-free: the dlexec verifier (what dlc may write) and the package loader
// (what dlrt accepts) include the same numbers, so that a package dlc writes
// is never one dlrt calls corrupt.
#ifndef DLC_RUNTIME_SCHEMA_LIMITS_H
#define DLC_RUNTIME_SCHEMA_LIMITS_H

namespace dlc::schema {

/// The largest rank of a buffer (input, output, variable or activation) in
/// a package: the C API's tensor descriptor (dlrt_tensor_desc_t::shape)
/// holds 8 dimensions.
inline constexpr int kMaxBufferRank = 8;

} // namespace dlc::schema

#endif // DLC_RUNTIME_SCHEMA_LIMITS_H
