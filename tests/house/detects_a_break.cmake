# ctest docs.house_includes_detects_a_break: check_includes.cmake fails, naming the file and the
# include, on a tree where oracle/ (which may use nothing) includes a probe/ header.
# cmake -DCHECKER=<check_includes.cmake> -DDESIGN=<docs/design.md> -DWORK=<scratch dir> -P detects_a_break.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/docs" "${WORK}/oracle/src" "${WORK}/probe/include/zp/probe")
configure_file("${DESIGN}" "${WORK}/docs/design.md" COPYONLY)
file(WRITE "${WORK}/probe/include/zp/probe/config.hpp" "#pragma once\n")
file(WRITE "${WORK}/oracle/src/numerics.cpp" "#include <vector>\n\n#include \"zp/probe/config.hpp\"\n")
execute_process(COMMAND "${CMAKE_COMMAND}" "-DROOT=${WORK}" -P "${CHECKER}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE out)
file(REMOVE_RECURSE "${WORK}")
if(rc EQUAL 0 OR NOT out MATCHES "oracle/src/numerics.cpp includes zp/probe/config.hpp \\(probe/\\)")
  message(FATAL_ERROR "check_includes.cmake let oracle/ include a probe/ header (exit ${rc}):\n${out}")
endif()
message(STATUS "check_includes.cmake refuses oracle/ including probe/")
