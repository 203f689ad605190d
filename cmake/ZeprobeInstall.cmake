# Install rules of the embeddable package; the top-level CMakeLists.txt includes this file last.
#
#   <prefix>/include/zeprobe/zeprobe.hpp
#   <prefix>/<libdir>/libzeprobe.so*            facade with oracle, scheduler, runtime and the kernel
#                                              package linked in (their symbols hidden)
#   <prefix>/<libdir>/libze_zecl.so*            zecl (soname libze_zecl.so.0); libzeprobe finds it next to itself
#   <prefix>/bin/ze-probe, moe-server           the tools (they find the libdir through their RUNPATH)
#   <prefix>/<libdir>/cmake/zeprobe/            zeprobeConfig.cmake, ...ConfigVersion.cmake, zeprobeTargets*.cmake
#   <prefix>/<libdir>/pkgconfig/zeprobe.pc
#   <prefix>/share/zeprobe/card.schema.json     the schemas of ze-probe's card<N>.json and step.json, for
#   <prefix>/share/zeprobe/step.schema.json     programs that read the results (the tool checks each write)
#
# zeprobe's link interface is its header only, so zeprobeConfig.cmake finds no other package;
# the shared libraries it needs at run time (libze_loader, libyaml-cpp, libfmt, libstdc++) are
# the distribution's. Everything here is relocatable: `cmake --install build --prefix DIR` works.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ZEPROBE_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/zeprobe" CACHE STRING
    "Where zeprobeConfig.cmake is installed (relative to the prefix)")
mark_as_advanced(ZEPROBE_INSTALL_CMAKEDIR)

install(TARGETS zeprobe EXPORT zeprobeTargets
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
  FILE_SET HEADERS DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")

# The driver is loaded by the Level Zero loader (ZE_ENABLE_ALT_DRIVERS), never linked: a plain
# library, not an exported target. zeprobeConfig.cmake names its path in zeprobe_ZECL_LIBRARY.
if(TARGET ze_zecl)
  install(TARGETS ze_zecl LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}")
endif()

# The tools: ze-probe links the internal libraries statically and finds zecl at ../<libdir>;
# moe-server links libzeprobe.so, found through its RUNPATH relative to bin/.
foreach(tool ze-probe moe-server)
  if(TARGET ${tool})
    set_target_properties(${tool} PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
    install(TARGETS ${tool} RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
  endif()
endforeach()

install(FILES "${PROJECT_SOURCE_DIR}/docs/card.schema.json" "${PROJECT_SOURCE_DIR}/docs/step.schema.json"
  DESTINATION "${CMAKE_INSTALL_DATADIR}/zeprobe")

install(EXPORT zeprobeTargets NAMESPACE zeprobe:: DESTINATION "${ZEPROBE_INSTALL_CMAKEDIR}")

configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/zeprobeConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/zeprobe-package/zeprobeConfig.cmake"
  INSTALL_DESTINATION "${ZEPROBE_INSTALL_CMAKEDIR}")
write_basic_package_version_file("${PROJECT_BINARY_DIR}/zeprobe-package/zeprobeConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  # 0.x: a minor release may change the API.
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/zeprobe-package/zeprobeConfig.cmake"
              "${PROJECT_BINARY_DIR}/zeprobe-package/zeprobeConfigVersion.cmake"
  DESTINATION "${ZEPROBE_INSTALL_CMAKEDIR}")

# pkg-config: prefix relative to the .pc file (${pcfiledir}), so a moved prefix still works.
file(RELATIVE_PATH ZEPROBE_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" ZEPROBE_PC_TO_PREFIX "${ZEPROBE_PC_TO_PREFIX}")
configure_file("${CMAKE_CURRENT_LIST_DIR}/zeprobe.pc.in" "${PROJECT_BINARY_DIR}/zeprobe-package/zeprobe.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/zeprobe-package/zeprobe.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
