# `cpack -G DEB` (tools/make-deb.sh): one package, dlc, holding what
# cmake/Install.cmake installs, under /usr. dpkg-shlibdeps finds the Debian
# packages of the linked libraries (MLIR/LLVM, ONNX, protobuf, oneDNN, ...).
# NVRTC (linked by dlc) comes from the CUDA toolkit, which no Debian package
# provides: dpkg-shlibdeps finds it (the toolkit's lib folder is passed as a
# private library folder) but no package owns it, and CPack runs
# dpkg-shlibdeps with --ignore-missing-info, so it gets no Depends entry;
# docs/install.md states the toolkit as a requirement. Named here as well:
# - g++: dlc compiles the host kernels with `c++ -fopenmp`;
# - libgomp1: libdlrt loads those kernels, which need the OpenMP runtime;
# - libllvm22: dlc links libLLVM.so.22.1, but dpkg-shlibdeps finds it first
#   through the symlink in /usr/lib/llvm-22/lib (owned by llvm-22-dev, which
#   has no shlibs file) and, depending on the order of its package look-ups,
#   drops it (so it may also appear twice, which dpkg accepts); libmlir-22
#   alone would pull it in only indirectly.
set(CPACK_PACKAGE_NAME dlc)
set(CPACK_PACKAGE_VERSION ${DLRT_VERSION})
set(CPACK_PACKAGE_CONTACT "dlc developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "graph compiler (dlc) and runtime (dlrt, libdlrt) for neural networks")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CUDAToolkit_LIBRARY_DIR})
set(CPACK_DEBIAN_PACKAGE_DEPENDS "g++, libgomp1, libllvm22")
include(CPack)
