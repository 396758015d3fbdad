# Install rules: dlc, dlrt, libdlrt with its public headers, the CMake package
# (find_package(dlrt) gives dlrt::dlrt) and dlrt.pc for pkg-config. See
# docs/install.md. Included from the top-level CMakeLists.txt once the targets
# exist; cmake/Packaging.cmake makes a .deb of the same files.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# dlc keeps the directories it was linked from (the MLIR/LLVM shared libraries
# in /usr/lib/llvm-22/lib and NVRTC in the CUDA toolkit) as its run path; dlrt
# finds libdlrt beside it, relative to its own location.
if(TARGET dlc)
  set_target_properties(dlc PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS dlc)
endif()
if(TARGET dlrt)
  file(RELATIVE_PATH _dlrt_bin_to_lib /${CMAKE_INSTALL_BINDIR}
       /${CMAKE_INSTALL_LIBDIR})
  set_target_properties(dlrt PROPERTIES INSTALL_RPATH "$ORIGIN/${_dlrt_bin_to_lib}")
  install(TARGETS dlrt)
endif()

install(TARGETS DLRT EXPORT dlrtTargets
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES runtime/include/dlrt/dlrt.h runtime/include/dlrt/dlrt.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dlrt)

set(_dlrt_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/dlrt)
install(EXPORT dlrtTargets NAMESPACE dlrt:: DESTINATION ${_dlrt_cmake_dir})
get_target_property(DLRT_VERSION DLRT VERSION)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/dlrtConfigVersion.cmake
  VERSION ${DLRT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES cmake/dlrtConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/dlrtConfigVersion.cmake
        DESTINATION ${_dlrt_cmake_dir})

# dlrt.pc names its prefix relative to itself, so it holds for any
# `cmake --install --prefix` and for the .deb.
file(RELATIVE_PATH DLRT_PC_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" DLRT_PC_PREFIX "${DLRT_PC_PREFIX}")
configure_file(cmake/dlrt.pc.in ${CMAKE_CURRENT_BINARY_DIR}/dlrt.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dlrt.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
