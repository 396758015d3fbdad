# The runtime's CUDA device on the stand-in (issue 9): the device tests that
# skip without a GPU, and every e2e model against the host device. A test
# that still skips on the stand-in fails.
set(DLRT_STANDIN_ENV
  "DLRT_CUDA_STANDIN=$<TARGET_FILE:dlrt-cuda-standin>"
  "DLRT_CACHE_DIR=${CMAKE_CURRENT_BINARY_DIR}/cubin-cache")

if(TARGET dlrt-cuda-tests OR DEFINED DLRT_CUDA_SOURCES)
  add_test(NAME dlrt-cuda-tests-standin COMMAND dlrt-cuda-tests)
  set_tests_properties(dlrt-cuda-tests-standin PROPERTIES
    ENVIRONMENT "${DLRT_STANDIN_ENV}"
    FAIL_REGULAR_EXPRESSION "\\[  SKIPPED \\]"
    LABELS cuda-standin TIMEOUT 600)
endif()

add_test(NAME dlrt-runtime-tests-standin
  COMMAND dlrt-runtime-tests
          --gtest_filter=Devices/DeviceTest.*/cuda:Devices/LowPrecisionCalls.*/cuda_*:Devices/MemoryTest.*/cuda)
set_tests_properties(dlrt-runtime-tests-standin PROPERTIES
  ENVIRONMENT "${DLRT_STANDIN_ENV}"
  FAIL_REGULAR_EXPRESSION "\\[  SKIPPED \\];Running 0 tests"
  LABELS cuda-standin TIMEOUT 600)

# The gemm epilogues again where cuBLASLt has no algorithm for them: the
# CUDA device's fallbacks (a broadcast bias, a ReLU kernel, the bias
# gradient as a product with ones, the f32 bias of a 16-bit gemm added to
# an f32 product then rounded by a kernel, its f32 bias gradient as a
# product with ones into f32) must give the same results.
add_test(NAME dlrt-runtime-tests-standin-no-epilogue
  COMMAND dlrt-runtime-tests
          --gtest_filter=Devices/DeviceTest.Gemm*/cuda:Devices/LowPrecisionCalls.GemmF32Bias*/cuda_*)
set_tests_properties(dlrt-runtime-tests-standin-no-epilogue PROPERTIES
  ENVIRONMENT "${DLRT_STANDIN_ENV};DLRT_CUDA_STANDIN_LT_NO_EPILOGUE=1"
  FAIL_REGULAR_EXPRESSION "\\[  SKIPPED \\];Running 0 tests"
  LABELS cuda-standin TIMEOUT 600)

# Every e2e model, training and inference, host vs CUDA on the stand-in.
# mlp also embeds real sm_90 cubins (dlc --target), which the stand-in
# refuses, so the runtime's recompile-from-source fallback runs too.
if(DLC_BUILD_COMPILER AND TARGET dlc AND TARGET dlrt)
  foreach(spec "mlp;adam;sm_90" "cnn;sgd;" "resnet18;sgd;" "gpt;sgd;"
               "transformer;sgd;")
    list(GET spec 0 model)
    list(GET spec 1 optimizer)
    list(GET spec 2 target)
    add_test(NAME e2e_cuda_standin_${model}
      COMMAND /usr/bin/python3 ${DLC_SOURCE_DIR}/test/e2e/cuda_vs_host.py
              --model ${model} --optimizer ${optimizer} --target "${target}"
              --dlc $<TARGET_FILE:dlc> --dlrt $<TARGET_FILE:dlrt>
              --standin $<TARGET_FILE:dlrt-cuda-standin>
              --workdir ${CMAKE_CURRENT_BINARY_DIR}/e2e/${model})
    set_tests_properties(e2e_cuda_standin_${model} PROPERTIES
      ENVIRONMENT "DLRT_CACHE_DIR=${CMAKE_CURRENT_BINARY_DIR}/cubin-cache"
      TIMEOUT 1200 LABELS "e2e;cuda-standin")
  endforeach()
  # Mixed precision (issue 10): bf16/fp16 training on the CUDA device
  # (cuBLASLt/cuDNN on low-precision operands, f32 compute) against the host.
  foreach(spec "mlp;adam;bf16" "cnn;sgd;bf16" "gpt;sgd;bf16" "mlp;sgd;fp16"
               "cnn;adam;fp16")
    list(GET spec 0 model)
    list(GET spec 1 optimizer)
    list(GET spec 2 precision)
    add_test(NAME e2e_cuda_standin_${model}_${precision}
      COMMAND /usr/bin/python3 ${DLC_SOURCE_DIR}/test/e2e/cuda_vs_host.py
              --model ${model} --optimizer ${optimizer} --precision ${precision}
              --dlc $<TARGET_FILE:dlc> --dlrt $<TARGET_FILE:dlrt>
              --standin $<TARGET_FILE:dlrt-cuda-standin>
              --workdir ${CMAKE_CURRENT_BINARY_DIR}/e2e/${model}_${precision})
    set_tests_properties(e2e_cuda_standin_${model}_${precision} PROPERTIES
      ENVIRONMENT "DLRT_CACHE_DIR=${CMAKE_CURRENT_BINARY_DIR}/cubin-cache"
      TIMEOUT 1200 LABELS "e2e;cuda-standin")
  endforeach()
endif()

# The GPU benchmark suite's kernel cases (issue 14 item 5) at small sizes on
# the CUDA device against NumPy (test/e2e/CMakeLists.txt has the host run).
if(DLC_BUILD_COMPILER AND TARGET dlc AND TARGET dlrt)
  set(_bench ${DLC_SOURCE_DIR}/test/benchmarks/gpu)
  set(_dir ${CMAKE_CURRENT_BINARY_DIR}/gpu_bench/kernels)
  add_test(NAME e2e_cuda_standin_gpu_bench_kernels
    COMMAND /bin/sh -c "/usr/bin/python3 ${_bench}/kernels.py prepare --small --dlc $<TARGET_FILE:dlc> --out ${_dir} && /usr/bin/python3 ${_bench}/kernels.py check --dlrt $<TARGET_FILE:dlrt> --dir ${_dir} --device cuda")
  set_tests_properties(e2e_cuda_standin_gpu_bench_kernels PROPERTIES
    ENVIRONMENT "${DLRT_STANDIN_ENV}"
    TIMEOUT 300 LABELS "e2e;cuda-standin")
endif()

# Self-tests of the stand-in (issue 9): copies of the CUDA device with one
# planted bug each, run against the stand-in, must fail the device test
# that covers the call. Each mutation must match its source file (in
# runtime/cuda) exactly once; when that file changes, update the pattern here.
if(DEFINED DLRT_CUDA_SOURCES)
  # name | file | code to replace | replacement | test filter | what must appear
  set(_mutants
    "gemm-ld|CudaBlasLt.cpp|mm.type, mm.rowsA,
                                                 mm.colsA, int64_t(mm.rowsA))|mm.type, mm.rowsA,
                                                 mm.colsA, int64_t(mm.rowsA + 1))|CudaGpuTest.Gemm*|FAILED +. CudaGpuTest.Gemm"
    "conv-x-descriptor|CudaDnn.cpp|type, int(p.n), int(p.c),
                                                   int(p.h), int(p.w)),
                    \"cudnnSetTensor4dDescriptor(x)\"|type, int(p.n), int(p.c),
                                                   int(p.w), int(p.h)),
                    \"cudnnSetTensor4dDescriptor(x)\"|CudaGpuTest.Convolutions*|FAILED +. CudaGpuTest.Convolutions")
  foreach(_m IN LISTS _mutants)
    string(REPLACE "|" ";" _parts "${_m}")
    list(GET _parts 0 _name)
    list(GET _parts 1 _file)
    list(GET _parts 2 _from)
    list(GET _parts 3 _to)
    list(GET _parts 4 _filter)
    list(GET _parts 5 _expect)
    file(READ ${DLC_SOURCE_DIR}/runtime/cuda/${_file} _source)
    string(FIND "${_source}" "${_from}" _at)
    if(_at EQUAL -1)
      message(FATAL_ERROR "StandinTests.cmake: the mutation '${_name}' no longer matches runtime/cuda/${_file}; update its pattern")
    endif()
    string(REPLACE "${_from}" "${_to}" _mutated "${_source}")
    set(_dir ${CMAKE_CURRENT_BINARY_DIR}/mutants/${_name})
    # Written only when it changes: tools/setup.sh configures on every run,
    # and a new time stamp would rebuild both mutants each time.
    file(WRITE ${_dir}/${_file}.new "${_mutated}")
    file(COPY_FILE ${_dir}/${_file}.new ${_dir}/${_file}
         ONLY_IF_DIFFERENT)
    set(_sources ${DLRT_CUDA_SOURCES})
    list(REMOVE_ITEM _sources ${DLC_SOURCE_DIR}/runtime/cuda/${_file})
    add_executable(dlrt-cuda-tests-mutant-${_name}
      ${DLC_SOURCE_DIR}/test/cuda/CudaDeviceTest.cpp ${_dir}/${_file} ${_sources})
    target_include_directories(dlrt-cuda-tests-mutant-${_name} PRIVATE
      ${DLC_SOURCE_DIR}
      ${DLC_SOURCE_DIR}/runtime/include)
    target_include_directories(dlrt-cuda-tests-mutant-${_name} SYSTEM PRIVATE
      ${DLRT_CUDA_INCLUDE_DIRS})
    target_link_libraries(dlrt-cuda-tests-mutant-${_name} PRIVATE
      DLCLibraryCalls GTest::gtest_main ${CMAKE_DL_LIBS} Threads::Threads)
    add_test(NAME dlrt-cuda-standin-catches-${_name}
      COMMAND dlrt-cuda-tests-mutant-${_name} --gtest_filter=${_filter})
    set_tests_properties(dlrt-cuda-standin-catches-${_name} PROPERTIES
      ENVIRONMENT "${DLRT_STANDIN_ENV}"
      PASS_REGULAR_EXPRESSION "${_expect}"
      LABELS cuda-standin TIMEOUT 600)
  endforeach()
endif()

# Every ONNX backend test again, on `dlrt run --device cuda` over the
# stand-in: the same expected outcomes as the host device, so each op's CUDA kernels and library
# calls are checked against ONNX's reference outputs. About 130 s on 2 cores.
# It runs after the host run (DEPENDS), whose packages' host libraries are
# then in the shared compile cache (test/CMakeLists.txt): dlc takes 0.09 s a
# model instead of 1.02 s (measured on node/test_[a-c], 160 models).
if(TARGET dlc AND TARGET dlrt)
  add_test(NAME onnx_conformance_cuda_standin
    COMMAND /usr/bin/python3 ${DLC_SOURCE_DIR}/test/conformance/run_conformance.py
            --dlc $<TARGET_FILE:dlc> --dlrt $<TARGET_FILE:dlrt> --device cuda
            --expected ${DLC_SOURCE_DIR}/test/conformance/expected.txt
            --results ${CMAKE_CURRENT_BINARY_DIR}/conformance-results.txt)
  set_tests_properties(onnx_conformance_cuda_standin PROPERTIES
    ENVIRONMENT "${DLRT_STANDIN_ENV}"
    DEPENDS onnx_conformance
    TIMEOUT 2400 LABELS "conformance;cuda-standin")
endif()
