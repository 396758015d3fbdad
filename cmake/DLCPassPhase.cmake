# dlc_add_pass_phase(NAME [SUBDIRS dirs...] DEPENDS libs...): the library
# NAME of one phase folder of the compiler (compiler/Training,
# compiler/Partition, ...): its one Passes.td's declarations in Passes.h.inc
# (registration function register<NAME>Passes) and every .cpp of the folder
# and of the SUBDIRS (families of several files), so a new pass is its .td
# entry, its .cpp and its line in the pipeline.
function(dlc_add_pass_phase name)
  cmake_parse_arguments(ARG "" "" "SUBDIRS;DEPENDS" ${ARGN})
  set(LLVM_TARGET_DEFINITIONS Passes.td)
  mlir_tablegen(Passes.h.inc -gen-pass-decls -name ${name})
  add_public_tablegen_target(${name}PassIncGen)
  set(_globs ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  foreach(_dir ${ARG_SUBDIRS})
    list(APPEND _globs ${CMAKE_CURRENT_SOURCE_DIR}/${_dir}/*.cpp)
  endforeach()
  file(GLOB _sources CONFIGURE_DEPENDS ${_globs})
  list(SORT _sources)
  add_library(${name} ${_sources})
  add_dependencies(${name} ${name}PassIncGen DLCGraphOpsIncGen
                   DLCGraphTrainingOpsIncGen DLCExecOpsIncGen)
  target_link_libraries(${name} PUBLIC ${ARG_DEPENDS} MLIR LLVM)
endfunction()
