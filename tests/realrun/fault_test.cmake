# Fault test driver (ctest: realrun_fault_<action>). Runs
#   mpirun -np 3 collkit bench --backend mpi ... --json WORKDIR/out.json
# with COLLKIT_FAULT_INJECT making rank 1 exit, SIGKILL itself or hang at its
# 20th collective run, and asserts that the job ends within the bound
# (60 s), with a non-zero exit, a clear message, and no JSON file left.
# Inputs: -DCOLLKIT= -DMPIEXEC= -DACTION=exit|kill|hang -DWORKDIR=
cmake_minimum_required(VERSION 3.25)
set(_bound 60)
file(REMOVE_RECURSE "${WORKDIR}")
file(MAKE_DIRECTORY "${WORKDIR}")
set(_json "${WORKDIR}/out.json")
set(_flags --collective all_reduce --algorithm ring -b 1K -e 64K -f 2 -n 20 -w 1 -c 1
           --json "${_json}")
if(ACTION STREQUAL "hang")
  # A hung rank is found by the others' watchdogs.
  list(APPEND _flags -T 5)
  set(_expect "timeout: all_reduce algorithm ring, [0-9]+ bytes \\(float sum, [a-z ]+\\) on rank [02] did not complete within 5 s")
elseif(ACTION STREQUAL "kill")
  set(_expect "rank 1: fault injection \\(COLLKIT_FAULT_INJECT\\): killing itself \\(SIGKILL\\) at run 20")
else()
  set(_expect "rank 1: fault injection \\(COLLKIT_FAULT_INJECT\\): exiting with code 17 at run 20")
endif()

string(TIMESTAMP _t0 "%s")
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env COLLKIT_FAULT_INJECT=rank=1,iter=20,action=${ACTION}
          OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
          ${MPIEXEC} --oversubscribe -np 3 ${COLLKIT} bench --backend mpi ${_flags}
  OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc TIMEOUT ${_bound})
string(TIMESTAMP _t1 "%s")
math(EXPR _elapsed "${_t1} - ${_t0}")
set(_all "${_out}\n${_err}")
message(STATUS "fault ${ACTION}: exit '${_rc}' after ${_elapsed} s")

if(_rc MATCHES "timeout" OR _elapsed GREATER_EQUAL ${_bound})
  message(FATAL_ERROR "the job did not end within ${_bound} s (${_rc})\n${_all}")
endif()
if(_rc EQUAL 0)
  message(FATAL_ERROR "the job exited with 0 after a fault\n${_all}")
endif()
if(NOT _all MATCHES "${_expect}")
  message(FATAL_ERROR "missing message /${_expect}/\n${_all}")
endif()
if(EXISTS "${_json}")
  message(FATAL_ERROR "${_json} was left behind")
endif()
file(GLOB _left "${WORKDIR}/*")
if(_left)
  message(FATAL_ERROR "files left behind: ${_left}")
endif()
file(REMOVE_RECURSE "${WORKDIR}")
