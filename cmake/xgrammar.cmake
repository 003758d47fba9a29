# xgrammar's C++ core (grammar compilation and token masks for structured
# output, src/engine/grammar.h), built from its PyPI source distribution,
# which scripts/fetch_xgrammar.sh unpacks (scripts/setup.sh runs it). Its own
# CMakeLists wants the Python bindings' toolchain, so the library is declared
# here from its sources, compiled with our compiler and flags (sanitizer
# builds instrument it too) and without its warnings, which are not ours.
set(ZL_XGRAMMAR_DIR ${PROJECT_SOURCE_DIR}/.deps/xgrammar-0.2.9 CACHE PATH "xgrammar's unpacked source distribution")
if(NOT EXISTS ${ZL_XGRAMMAR_DIR}/include/xgrammar/xgrammar.h)
  message(FATAL_ERROR "xgrammar's sources are not in ${ZL_XGRAMMAR_DIR}: run scripts/fetch_xgrammar.sh "
                      "(scripts/setup.sh does), or set ZL_XGRAMMAR_DIR")
endif()
file(GLOB_RECURSE ZL_XGRAMMAR_SOURCES ${ZL_XGRAMMAR_DIR}/cpp/*.cc)
# cpp/tvm_ffi is its Python binding.
list(FILTER ZL_XGRAMMAR_SOURCES EXCLUDE REGEX "/cpp/tvm_ffi/")
add_library(zl_xgrammar STATIC ${ZL_XGRAMMAR_SOURCES})
target_include_directories(zl_xgrammar SYSTEM PUBLIC ${ZL_XGRAMMAR_DIR}/include ${ZL_XGRAMMAR_DIR}/3rdparty/picojson
                                                     ${ZL_XGRAMMAR_DIR}/3rdparty/dlpack/include)
target_compile_definitions(zl_xgrammar PUBLIC XGRAMMAR_ENABLE_CPPTRACE=0)
target_compile_options(zl_xgrammar PRIVATE -w)
# Its own standard: clang 14 with libstdc++ 12 rejects its std::variant of a
# type declared later (grammar.cc) under C++20, not under C++17.
set_target_properties(zl_xgrammar PROPERTIES CXX_STANDARD 17)
target_link_libraries(zl_xgrammar PUBLIC Threads::Threads)
