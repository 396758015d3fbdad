# dlrt CMake package: the imported target dlrt::dlrt (libdlrt and
# <dlrt/dlrt.h>, <dlrt/dlrt.hpp>). Usage:
#   find_package(dlrt REQUIRED)
#   target_link_libraries(app PRIVATE dlrt::dlrt)
include(${CMAKE_CURRENT_LIST_DIR}/dlrtTargets.cmake)
