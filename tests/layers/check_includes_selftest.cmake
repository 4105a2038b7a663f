# The include check must fail on a wrong include: builds a small tree with one
# include per kind (allowed, from an upper layer, from a program folder) and
# runs check_includes.cmake on it, expecting exactly the two wrong ones.
#   cmake -DSOURCE_DIR=<repo> -DWORKDIR=<scratch dir> -P check_includes_selftest.cmake
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE ${WORKDIR})
file(WRITE ${WORKDIR}/core/ok.h "#include \"core/error.h\"\n#include <vector>\n#include \"local.h\"\n")
file(WRITE ${WORKDIR}/sim/ok.cc "#include \"algorithms/schedule.h\"\n#include \"topologies/topology.h\"\n")
file(WRITE ${WORKDIR}/realrun/device/bad.h "#include \"core/json.h\"\n  #  include \"reports/report.h\"\n")
file(WRITE ${WORKDIR}/algorithms/bad.cc "#include \"cli/commands.h\"\n")
execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${SOURCE_DIR} -DROOT=${WORKDIR}
                        -P ${SOURCE_DIR}/tests/layers/check_includes.cmake
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
set(_all "${_out}${_err}")
if(_rc EQUAL 0)
  message(FATAL_ERROR "the check passed a tree with wrong includes:\n${_all}")
endif()
foreach(_want
        "realrun/device/bad.h: #  include \"reports/report.h\": realrun may not use reports"
        "algorithms/bad.cc: #include \"cli/commands.h\": algorithms may not use cli"
        "2 include(s) against the layer order in 4 files")
  string(FIND "${_all}" "${_want}" _at)
  if(_at EQUAL -1)
    message(FATAL_ERROR "expected '${_want}' in the check's output:\n${_all}")
  endif()
endforeach()
foreach(_unwanted "core/ok.h" "sim/ok.cc" "core/json.h\":")
  string(FIND "${_all}" "${_unwanted}" _at)
  if(NOT _at EQUAL -1)
    message(FATAL_ERROR "the check flagged an allowed include (${_unwanted}):\n${_all}")
  endif()
endforeach()
message("check_includes self-test: both wrong includes found, the allowed ones passed")
