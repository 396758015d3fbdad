# Sanitizer and fuzzing flags for the whole build, in one place
# (docs/testing.md, "Sanitizers" and "Fuzzing").
#
#   -DDLC_SANITIZE=address,undefined   instruments every target of the build
#       (a list of address, undefined, leak). UBSan findings are fatal
#       (-fno-sanitize-recover), so a test that triggers one fails.
#   -DDLC_FUZZ=ON                      (clang only) builds test/fuzz as
#       libFuzzer targets: the code under test gets -fsanitize=fuzzer-no-link,
#       the fuzz targets link with -fsanitize=fuzzer (dlc_fuzz_link). Meant
#       for a build folder of its own that builds only `fuzz-targets`.
set(DLC_SANITIZE "" CACHE STRING
    "Sanitizers to build with: a comma-separated list of address, undefined, leak")
option(DLC_FUZZ "Build the libFuzzer targets of test/fuzz (clang)" OFF)

if(DLC_SANITIZE)
  string(REPLACE "," ";" _dlc_sanitizers "${DLC_SANITIZE}")
  foreach(_s IN LISTS _dlc_sanitizers)
    if(NOT _s MATCHES "^(address|undefined|leak)$")
      message(FATAL_ERROR "DLC_SANITIZE: unknown sanitizer '${_s}' "
                          "(supported: address, undefined, leak)")
    endif()
  endforeach()
  list(JOIN _dlc_sanitizers "," _dlc_sanitize_flag)
  # Line tables only: symbolized reports at a small cost in build time.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    set(_dlc_line_tables -gline-tables-only)
  else()
    set(_dlc_line_tables -g1)
  endif()
  add_compile_options(-fsanitize=${_dlc_sanitize_flag} -fno-omit-frame-pointer
                      ${_dlc_line_tables})
  add_link_options(-fsanitize=${_dlc_sanitize_flag})
  if("undefined" IN_LIST _dlc_sanitizers)
    add_compile_options(-fno-sanitize-recover=undefined)
    # vptr needs RTTI, which the LLVM/MLIR-based code is built without.
    add_compile_options(-fno-sanitize=vptr)
  endif()
  message(STATUS "dlc: building with -fsanitize=${_dlc_sanitize_flag}")
endif()

# Debian's gcc links with --as-needed by default and clang does not; without
# it, CUDA::nvrtc's interface drags libcuda.so.1 into dlc's NEEDED entries,
# and dlc no longer starts on machines without the driver (the runtime
# dlopens it). Clang builds (sanitized and fuzzing ones) link as gcc does.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  add_link_options(LINKER:--as-needed)
endif()

if(DLC_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "DLC_FUZZ needs clang (libFuzzer), e.g. "
                        "-DCMAKE_CXX_COMPILER=clang++-22 -DCMAKE_C_COMPILER=clang-22")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
  message(STATUS "dlc: building the libFuzzer targets (test/fuzz)")
endif()

# Links |target| (a fuzz target) with libFuzzer's main().
function(dlc_fuzz_link target)
  target_link_options(${target} PRIVATE -fsanitize=fuzzer)
endfunction()
