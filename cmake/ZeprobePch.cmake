# ZP_PCH: precompiled headers, to cut the compile CPU of CI's two builds (.ci/run on 2 cores).
#  - The test programs that link GoogleTest reuse one precompiled header (zp_test_pch in
#    tests/CMakeLists.txt): GoogleTest, nlohmann/json and the standard headers, parsed once per
#    build instead of once per test file (gcc 12 -O1: 258 -> 207 s of CPU for the test files).
#  - With clang, the libraries of many source files precompile those headers each (clang 14 at
#    -O0 with ASan: probe/src/gate.cpp 4.4 -> 2.7 s with -fpch-instantiate-templates, which CMake
#    adds; the whole sanitizer build of .ci/run: 350 -> 280 s of CPU). Not with gcc: at -O2 it
#    saves about a tenth there, and gcc 12 loses its system-header exemption from -Warray-bounds
#    inside a precompiled header (a false report in std::string operator+ that -Werror turns into
#    a failed build).
# The headers are only system headers: editing the project's own headers rebuilds as before.
option(ZP_PCH "Precompiled headers for the test programs and, with clang, the larger libraries" ON)

set(ZP_PCH_STD_HEADERS
  <algorithm> <array> <chrono> <cmath> <cstdint> <cstdlib> <cstring> <filesystem> <fstream> <functional>
  <map> <memory> <optional> <set> <span> <sstream> <stdexcept> <string> <string_view> <thread> <vector>)

# zp_precompile_libraries(TARGET...): each existing target precompiles the standard headers,
# nlohmann/json, fmt and yaml-cpp (clang only, see above).
function(zp_precompile_libraries)
  if(NOT ZP_PCH OR NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    return()
  endif()
  foreach(t IN LISTS ARGN)
    if(TARGET ${t})
      target_precompile_headers(${t} PRIVATE ${ZP_PCH_STD_HEADERS} <nlohmann/json.hpp> <fmt/format.h> <yaml-cpp/yaml.h>)
    endif()
  endforeach()
endfunction()
