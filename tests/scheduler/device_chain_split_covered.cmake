# ctest scheduler.device_chain_split_covered: every tiling and shape of test_device_chain is in
# exactly one of the ctests above (CI's or label full's), so a tiling or shape added to the
# test file without its ctest fails here instead of running nowhere.
# -DEXE=test_device_chain -DTILINGS=a;b -DSHAPE_FILTERS=f1;f2;...
function(count_tests filter out)
  execute_process(COMMAND ${EXE} --gtest_list_tests --gtest_filter=${filter} OUTPUT_VARIABLE listing
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${EXE} --gtest_list_tests --gtest_filter=${filter} exited ${rc}")
  endif()
  string(REGEX MATCHALL "\n  [^\n]+" tests "${listing}")
  list(LENGTH tests n)
  set(${out} ${n} PARENT_SCOPE)
endfunction()

list(LENGTH TILINGS n_tilings)
foreach(suite DeviceChainTuned DeviceChainTunedOneLaunch)
  count_tests("Tilings/${suite}.*" n)
  if(NOT n EQUAL n_tilings)
    message(FATAL_ERROR "Tilings/${suite}: ${n} tilings in test_device_chain, ${n_tilings} in tests/scheduler/CMakeLists.txt (${TILINGS})")
  endif()
endforeach()

count_tests("Shapes/OneLaunchShapes.*" n_all)
set(n_sum 0)
foreach(f IN LISTS SHAPE_FILTERS)
  count_tests("${f}" n)
  math(EXPR n_sum "${n_sum} + ${n}")
endforeach()
string(REPLACE ";" ":" union "${SHAPE_FILTERS}")
count_tests("${union}" n_union)
if(NOT n_sum EQUAL n_all OR NOT n_union EQUAL n_all)
  message(FATAL_ERROR "Shapes/OneLaunchShapes: ${n_all} shapes in test_device_chain; the ctests' filters "
                      "select ${n_union} of them, ${n_sum} counted per ctest (each shape must be in exactly one)")
endif()
message(STATUS "${n_tilings} tilings and ${n_all} one_launch shapes, each in exactly one ctest")
