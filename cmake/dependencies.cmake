# Finds every dependency once and exposes DLR_HAVE_* switches.
# Why each dependency is here: docs/dependencies.md.

find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(spdlog REQUIRED)          # used header-only: spdlog::spdlog_header_only
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
# xxHash: header-only (XXH_INLINE_ALL in runtime/storage/prepared_file.cpp), so no .so to ship.
find_path(XXHASH_INCLUDE_DIR xxhash.h)
if(NOT XXHASH_INCLUDE_DIR)
  message(FATAL_ERROR "xxhash.h not found (apt-get install libxxhash-dev)")
endif()

# ---- CPU GEMM ----
# AUTO = Eigen: header-only, no runtime library to ship (GPU machine, Jetson), and on
# this project's 2-core Xeon about 2x faster than Debian's OpenBLAS 0.3.21, which does
# not recognise the CPU and falls back to generic kernels (docs/dependencies.md).
set(DLR_BLAS_IMPL "")
if(DLR_BLAS STREQUAL "OPENBLAS")
  find_package(OpenBLAS QUIET)
  if(NOT OpenBLAS_FOUND)
    message(FATAL_ERROR "DLR_BLAS=OPENBLAS but OpenBLAS was not found (apt-get install libopenblas-dev)")
  endif()
  set(DLR_BLAS_IMPL "OpenBLAS")
else()
  find_package(Eigen3 3.3 REQUIRED NO_MODULE)
  set(DLR_BLAS_IMPL "Eigen")
endif()

# ---- OpenCV ----
set(DLR_HAVE_OPENCV OFF)
if(NOT DLR_OPENCV STREQUAL "OFF")
  find_package(OpenCV QUIET COMPONENTS core imgproc imgcodecs videoio dnn)
  if(OpenCV_FOUND)
    set(DLR_HAVE_OPENCV ON)
  elseif(DLR_OPENCV STREQUAL "ON")
    message(FATAL_ERROR "DLR_OPENCV=ON but OpenCV (core imgproc imgcodecs videoio dnn) was not found (apt-get install libopencv-dev)")
  endif()
endif()

# ---- liburing (io_uring reads of streamed weights, runtime/storage) ----
# The static archive first: the GPU machine has no liburing.so. Absent (AUTO): the
# block reader has its threads backend only.
set(DLR_HAVE_LIBURING OFF)
if(NOT DLR_LIBURING STREQUAL "OFF")
  find_path(LIBURING_INCLUDE_DIR liburing.h)
  find_library(LIBURING_LIBRARY NAMES liburing.a uring)
  if(LIBURING_INCLUDE_DIR AND LIBURING_LIBRARY)
    set(DLR_HAVE_LIBURING ON)
    add_library(dlr_liburing INTERFACE)
    target_include_directories(dlr_liburing INTERFACE ${LIBURING_INCLUDE_DIR})
    target_link_libraries(dlr_liburing INTERFACE ${LIBURING_LIBRARY})
  elseif(DLR_LIBURING STREQUAL "ON")
    message(FATAL_ERROR "DLR_LIBURING=ON but liburing was not found (apt-get install liburing-dev)")
  endif()
endif()

# ---- CUDA + cuDNN ----
# DLR_CUDA_ARCHITECTURES -> CMAKE_CUDA_ARCHITECTURES. "users": the GPUs dlrun's users
# run (Jetson Xavier sm_72, Orin sm_87; Turing 75, Ampere 80/86, Ada 89, Hopper 90),
# kept to those this nvcc can compile for (CUDA 13 dropped sm_72: Xavier needs
# JetPack 5's CUDA 11.4), SASS for each and PTX for the newest only (newer GPUs JIT
# it). "native": CMake's, the GPUs of the build machine. Anything else is passed on.
function(dlr_cuda_architectures out)
  set(archs "${DLR_CUDA_ARCHITECTURES}")
  if(archs STREQUAL "users")
    set(wanted 72 75 80 86 87 89 90)
    execute_process(COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} --list-gpu-arch OUTPUT_VARIABLE listed RESULT_VARIABLE rc ERROR_QUIET)
    set(archs "")
    foreach(a ${wanted})
      if(NOT rc EQUAL 0 OR listed MATCHES "compute_${a}")
        list(APPEND archs ${a})
      else()
        message(STATUS "dlrun: this nvcc cannot build sm_${a}; left out (docs/jetson.md)")
      endif()
    endforeach()
    list(POP_BACK archs newest)
    list(TRANSFORM archs APPEND "-real")
    list(APPEND archs ${newest})
  endif()
  set(${out} "${archs}" PARENT_SCOPE)
endfunction()

set(DLR_HAVE_CUDA OFF)
if(NOT DLR_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  find_package(CUDAToolkit QUIET)
  find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include/x86_64-linux-gnu
            /usr/include/aarch64-linux-gnu /usr/include)
  find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu)
  if(CUDAToolkit_FOUND AND CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
    dlr_cuda_architectures(DLR_CUDA_ARCHS_RESOLVED)
    set(CMAKE_CUDA_ARCHITECTURES ${DLR_CUDA_ARCHS_RESOLVED})
    message(STATUS "dlrun: CUDA architectures ${DLR_CUDA_ARCHS_RESOLVED}")
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(DLR_HAVE_CUDA ON)
    add_library(dlr_cudnn INTERFACE)
    target_include_directories(dlr_cudnn INTERFACE ${CUDNN_INCLUDE_DIR})
    target_link_libraries(dlr_cudnn INTERFACE ${CUDNN_LIBRARY})
  elseif(DLR_CUDA STREQUAL "ON")
    message(FATAL_ERROR "DLR_CUDA=ON but the CUDA toolkit or cuDNN was not found (toolkit: ${CUDAToolkit_FOUND}, cudnn.h: ${CUDNN_INCLUDE_DIR}, libcudnn: ${CUDNN_LIBRARY})")
  else()
    message(STATUS "dlrun: no CUDA toolkit with cuDNN found; building the CPU backend only")
  endif()
endif()

# ---- Python bindings (pybind11, Python 3 headers, numpy at run time) ----
set(DLR_HAVE_PYTHON OFF)
if(NOT DLR_PYTHON STREQUAL "OFF")
  # Debian's interpreter, the one python3-dev and python3-numpy belong to, unless one
  # is named with -DPython3_EXECUTABLE (a pyenv or venv shim on PATH may lack numpy).
  if(NOT Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python3_EXECUTABLE /usr/bin/python3)
  endif()
  find_package(Python3 QUIET COMPONENTS Interpreter Development.Module)
  if(Python3_FOUND)
    set(PYBIND11_FINDPYTHON ON)
    find_package(pybind11 CONFIG QUIET)
  endif()
  if(Python3_FOUND AND pybind11_FOUND)
    set(DLR_HAVE_PYTHON ON)
  elseif(DLR_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "DLR_PYTHON=ON but pybind11 or the Python 3 headers were not found (apt-get install pybind11-dev python3-dev)")
  endif()
endif()
