//===- NvrtcOptions.h - the NVRTC options every dlc kernel compiles with --===//
//
// Shared by the compiler (cubins embedded in packages, codegen/Compile.cpp)
// and the runtime (kernels compiled at load time, KernelCompiler.cpp), so a
// kernel computes the same bits whichever of the two compiled it.
// Header-only, no MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_SCHEMA_NVRTCOPTIONS_H
#define DLC_RUNTIME_SCHEMA_NVRTCOPTIONS_H

namespace dlrt::cuda {

/// NVRTC options fixing the arithmetic of generated and runtime kernels
/// beyond NVRTC's defaults (which already keep denormals, IEEE division and
/// IEEE square root: -ftz=false -prec-div=true -prec-sqrt=true).
///
/// --fmad=false: no contraction of a * b + c into one fused multiply-add.
/// The host kernels are compiled without it too (no -march, -ffp-contract=
/// off), so the CUDA device, the CUDA emulation and the host device round
/// every product and sum alike. With contraction on, whether an a * b + c
/// contracts depends on the kernel it lands in, so an activation recomputed
/// under --remat inside a backward kernel could differ in its last bit from
/// the stored one, and the rematerialization plans' losses would no longer
/// be bit-identical to those of the plan that stores it: on an H200
/// (2026-11-28) the remat CNN's packages run with contraction on repeated
/// none's losses bit for bit but sqrt's and budget's differed from them
/// from step 2 (1.96375275 vs 1.96375263); with --fmad=false all three
/// plans agree bit for bit. dlc's generated kernels are memory-bound
/// (GEMMs and convolutions go to cuBLASLt and cuDNN), so the extra
/// instructions cost no measurable time.
inline constexpr const char *kNvrtcArithmeticOptions[] = {"--fmad=false"};

} // namespace dlrt::cuda

#endif
