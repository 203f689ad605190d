// The owner of the test programs' shared precompiled header (tests/CMakeLists.txt, ZP_TEST_PCH):
// CMake compiles the header with this target's flags, the test programs reuse it.
#include <gtest/gtest.h>
