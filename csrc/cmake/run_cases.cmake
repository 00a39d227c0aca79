# ctest driver of a case-per-invocation test executable (sim_cases_<soc>, <op>_opp_test):
#   cmake -DEXE=<executable> -DMODE=pass|pass_or_fault -P run_cases.cmake
# runs `EXE --list`, then `EXE <case>` for every case, each in its own process. MODE=pass: every case
# must exit 0. MODE=pass_or_fault (the simulation's own cases, where a broken kernel must fail its
# launch): a case may also exit 1 with the simulator's fault message ("fla-npu sim: kernel '...");
# wrong values (exit 2), a disagreeing C interface (3), a crash or a timeout fail. The pytest drivers
# (tests/sim/test_sim.py, tests/kernels/test_opp_kernel_entries.py) hold the exact outcome and
# message of every case.
if(NOT EXE OR NOT MODE MATCHES "^(pass|pass_or_fault)$")
  message(FATAL_ERROR "usage: cmake -DEXE=<executable> -DMODE=pass|pass_or_fault -P run_cases.cmake")
endif()
execute_process(COMMAND "${EXE}" --list RESULT_VARIABLE rc OUTPUT_VARIABLE listed ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} --list: exit ${rc}: ${err}")
endif()
string(REGEX MATCHALL "[^\n]+" cases "${listed}")
list(LENGTH cases n)
if(n EQUAL 0)
  message(FATAL_ERROR "${EXE} --list: no cases")
endif()
set(failed 0)
foreach(case IN LISTS cases)
  execute_process(COMMAND "${EXE}" "${case}" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err TIMEOUT 300)
  if(rc STREQUAL "0")
    continue()
  endif()
  if(MODE STREQUAL "pass_or_fault" AND rc STREQUAL "1" AND err MATCHES "^fla-npu sim: kernel '")
    continue()
  endif()
  message(SEND_ERROR "case ${case}: exit ${rc}: ${err}")
  math(EXPR failed "${failed} + 1")
endforeach()
if(failed GREATER 0)
  message(FATAL_ERROR "${failed} of ${n} cases failed")
endif()
message(STATUS "${n} cases passed")
