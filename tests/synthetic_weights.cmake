# CTest fixture `synthetic_weights` (tests/CMakeLists.txt): writes dlgen's seed-1
# synthetic weights for every shared cfg the tests run into OUT, once per test run
# instead of once per test process. A file is rewritten only when it is missing or
# older than dlgen or its cfg (dlgen output is a pure function of both).
#   cmake -DDLGEN=<dlgen> -DOUT=<dir> -DSOURCE_DIR=<source> -DCFGS=<rel,rel,...> [-DEMULATOR=<cmd,arg,...>]
#         -P synthetic_weights.cmake
# EMULATOR (empty unless cross-compiled): the command dlgen runs under, e.g. qemu-aarch64.
# The shared folder is found like tests/common/test_paths.cpp does: $DLR_SHARED_DIR,
# <source>/../shared, /work/shared. Without one there is nothing to generate.
set(shared "")
foreach(cand "$ENV{DLR_SHARED_DIR}" "${SOURCE_DIR}/../shared" "/work/shared")
  if(NOT cand STREQUAL "" AND IS_DIRECTORY "${cand}")
    set(shared "${cand}")
    break()
  endif()
endforeach()
if(shared STREQUAL "")
  message(STATUS "synthetic_weights: no shared folder, nothing to generate")
  return()
endif()
file(MAKE_DIRECTORY "${OUT}")
string(REPLACE "," ";" cfgs "${CFGS}")
string(REPLACE "," ";" emulator "${EMULATOR}")
foreach(rel IN LISTS cfgs)
  set(cfg "${shared}/${rel}")
  if(NOT EXISTS "${cfg}")
    continue()  # the tests that need it report the missing file themselves
  endif()
  get_filename_component(name "${cfg}" NAME)
  set(w "${OUT}/${name}.1.weights")
  if(EXISTS "${w}" AND NOT "${DLGEN}" IS_NEWER_THAN "${w}" AND NOT "${cfg}" IS_NEWER_THAN "${w}")
    continue()
  endif()
  execute_process(COMMAND ${emulator} "${DLGEN}" "${cfg}" "${w}" --seed 1 RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "synthetic_weights: dlgen ${cfg} failed (${rc}): ${err}")
  endif()
  message(STATUS "${out}")
endforeach()
