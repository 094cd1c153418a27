# Install and export: `cmake --install build --prefix P` puts the public headers in
# P/include/dlrun, libdlrun.so + libdlrun.a (+ libdlrun-cuda.so.X.Y, the CUDA backend
# libdlrun.so and dlrun load on first use) in P/<libdir>, the CMake package
# (find_package(dlrun): dlrun::dlrun, dlrun::dlrun_shared, dlrun::dlrun_static) in
# P/<libdir>/cmake/dlrun, dlrun.pc and dlrun-static.pc in P/<libdir>/pkgconfig and
# the tools in P/bin (with libdlrun-opencv.so.X.Y in P/<libdir>, the OpenCV that dlrun
# and dlimage load on first use). Everything relocatable (paths relative to the package files).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(FILES ${PROJECT_SOURCE_DIR}/runtime/include/dlrun/dlrun.h ${PROJECT_SOURCE_DIR}/runtime/include/dlrun/log.h
              ${PROJECT_SOURCE_DIR}/runtime/include/dlrun/options.h ${PROJECT_SOURCE_DIR}/runtime/include/dlrun/result.h
              ${PROJECT_SOURCE_DIR}/runtime/include/dlrun/runtime.h ${PROJECT_SOURCE_DIR}/runtime/include/dlrun/session.h ${PROJECT_SOURCE_DIR}/runtime/include/dlrun/types.h
              ${PROJECT_BINARY_DIR}/include/dlrun/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dlrun COMPONENT dev)
install(TARGETS dlrun_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib)
if(TARGET dlr_cuda_plugin)  # the CUDA backend, loaded on first use from beside libdlrun.so
  install(TARGETS dlr_cuda_plugin LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib)
endif()
install(FILES ${PROJECT_BINARY_DIR}/lib/libdlrun.a DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
if(TARGET dlr_opencv_plugin)  # OpenCV for dlrun and dlimage, loaded on first use from ../<libdir>
  install(TARGETS dlr_opencv_plugin LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT tools)
endif()
foreach(tool dlrun dlbench dlgen dlimage dlprobe dlsoak)
  if(TARGET ${tool})
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
  endif()
endforeach()

# What libdlrun.a needs from the system (libdlrun.so carries these itself).
set(DLRUN_PC_STATIC_LIBS "-lfmt -fopenmp -lpthread")
set(DLRUN_CONFIG_CUDA "")
if(DLR_HAVE_CUDA)
  get_filename_component(_cudnn_dir ${CUDNN_LIBRARY} DIRECTORY)
  string(APPEND DLRUN_PC_STATIC_LIBS " -L${CUDAToolkit_LIBRARY_DIR} -L${_cudnn_dir} -lcudnn -lcudart -ldl")
  set(DLRUN_CONFIG_CUDA "ON")
endif()

set(DLRUN_SHARED_FILE $<TARGET_FILE_NAME:dlrun_shared>)
set(DLRUN_SHARED_SONAME $<TARGET_SONAME_FILE_NAME:dlrun_shared>)
set(DLRUN_CUDNN_LIBRARY_DIR "")
if(DLR_HAVE_CUDA)
  set(DLRUN_CUDNN_LIBRARY_DIR "${_cudnn_dir}")
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/dlrunConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/dlrunConfig.cmake.gen
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dlrun
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/package/dlrunConfig.cmake
     INPUT ${PROJECT_BINARY_DIR}/package/dlrunConfig.cmake.gen)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/dlrunConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/dlrunConfig.cmake ${PROJECT_BINARY_DIR}/package/dlrunConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dlrun COMPONENT dev)

# pkg-config: prefix relative to the .pc file, so an installed tree can move.
file(RELATIVE_PATH DLRUN_PC_UP "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
configure_file(${PROJECT_SOURCE_DIR}/cmake/dlrun.pc.in ${PROJECT_BINARY_DIR}/package/dlrun.pc @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/dlrun-static.pc.in ${PROJECT_BINARY_DIR}/package/dlrun-static.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/package/dlrun.pc ${PROJECT_BINARY_DIR}/package/dlrun-static.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
