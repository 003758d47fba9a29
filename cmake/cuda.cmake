# The CUDA backend (src/**/*.cu), built whenever nvcc is found, so that CI
# compiles it on machines without a GPU; without nvcc everything else still
# builds and callers get "built without CUDA" at run time.
#
# Targets: Hopper only. sm_90a machine code (wgmma, setmaxnreg are available
# to kernels) plus compute_90 PTX so a newer driver/arch can JIT it.
# Runtime: cudart is linked statically (no libcudart to carry). cuBLASLt is
# linked dynamically (DT_NEEDED libcublasLt.so.13): its shared object is
# ~520 MB, and no static archive ships with the toolkit here, so it cannot be
# carried to the device machine within the 64 MiB limit. There the binary
# finds the libcublasLt.so.13 of the machine's own CUDA 13 install, or the one
# torch's nvidia-cublas wheel ships; bench/gpu/run_on_device.sh locates it and
# sets LD_LIBRARY_PATH.
option(ZL_ENABLE_CUDA "Build the CUDA backend when nvcc is found" ON)
set(ZL_HAVE_CUDA OFF)
if(ZL_ENABLE_CUDA)
  # CI and these machines keep nvcc at /usr/local/cuda/bin, not always on PATH.
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    find_program(ZL_NVCC nvcc)
    if(NOT ZL_NVCC)
      set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Architectures are given as explicit -gencode flags below (CMake 3.25
    # does not know the "90a" spelling).
    set(CMAKE_CUDA_ARCHITECTURES OFF)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    # CMake 3.25 does not know that nvcc 13 speaks C++20; the project's C++20
    # standard carries over to CUDA targets, so teach it the flag.
    if(NOT CMAKE_CUDA20_COMPILE_FEATURES)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
      list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
    endif()
    set(ZL_HAVE_CUDA ON)
  else()
    message(STATUS "zerolayer: nvcc not found, building without the CUDA backend")
  endif()
endif()

# The .cu files of one layer (cmake/layers.cmake) as an object library whose
# objects join the layer's library; `deps` give it the layer's include paths.
function(zl_cuda_objects layer dir deps)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${layer}/*.cu)
  if(NOT ZL_HAVE_CUDA OR NOT sources)
    return()
  endif()
  add_library(zl_${layer}_cuda OBJECT ${sources})
  set_target_properties(zl_${layer}_cuda PROPERTIES CUDA_STANDARD 20 CUDA_STANDARD_REQUIRED ON
                        CUDA_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON)
  target_include_directories(zl_${layer}_cuda PRIVATE ${dir})
  target_link_libraries(zl_${layer}_cuda PRIVATE ${deps} CUDA::cudart_static CUDA::cublasLt)
  target_compile_options(zl_${layer}_cuda PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_90,code=compute_90
      --expt-relaxed-constexpr -Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>)
  target_sources(zl_${layer} PRIVATE $<TARGET_OBJECTS:zl_${layer}_cuda>)
  target_link_libraries(zl_${layer} PUBLIC CUDA::cudart_static CUDA::cublasLt)
endfunction()
