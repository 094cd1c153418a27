# cmake -DAR=ar -DMRI=script.mri -P ar_mri.cmake: runs `ar -M < script.mri`
# (combines static libraries into one archive; used for lib/libdlrun.a).
execute_process(COMMAND ${AR} -M INPUT_FILE ${MRI} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ar -M ${MRI} failed (${rc}): ${out}${err}")
endif()
