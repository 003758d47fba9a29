# src/ is one static library per layer. A layer sees its own headers,
# include/zerolayer (the public API) and the layers it names below, nothing
# else, so an #include that runs back up the stack (a model file including an
# engine header) is a compile error, not a review comment:
#
#   core ← kernels ← model ─────┐
#   core ← tokenizer ───────────┼─ bundle ← engine ← server, transport
#   core ← jinja (chat templates)┘
#   core ← loadgen (a client of servers: the C client library, never the engine)
#
# A layer's headers are reached as "<layer>/x.h" through a directory holding
# only a link to src/<layer> (<build>/layers/<layer>/<layer>). PUBLIC: the
# layer's own headers include that layer's; PRIVATE: only its sources do.
function(zl_layer layer)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "PUBLIC;PRIVATE")
  set(dir ${PROJECT_BINARY_DIR}/layers/${layer})
  file(MAKE_DIRECTORY ${dir})
  file(RELATIVE_PATH link_target ${dir} ${PROJECT_SOURCE_DIR}/src/${layer})
  file(CREATE_LINK ${link_target} ${dir}/${layer} SYMBOLIC)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${layer}/*.cpp)
  add_library(zl_${layer} STATIC ${sources})
  target_include_directories(zl_${layer} PUBLIC ${dir})
  target_link_libraries(zl_${layer} PUBLIC ${arg_PUBLIC} PRIVATE ${arg_PRIVATE})
  zl_cuda_objects(${layer} ${dir} "${arg_PUBLIC};${arg_PRIVATE}")
endfunction()

# CMAKE_DL_LIBS: dlopen, for NVML, which is loaded at run time (core/gpu_counters.h).
zl_layer(core PUBLIC Threads::Threads PRIVATE ${CMAKE_DL_LIBS})
# Everything sees the public headers; none of them includes anything of src/
# (checked by zl_public_headers below).
target_include_directories(zl_core PUBLIC ${PROJECT_SOURCE_DIR}/include)
if(ZL_HAVE_CUDA)
  target_compile_definitions(zl_core PUBLIC ZL_HAVE_CUDA=1)
endif()
zl_layer(kernels PUBLIC zl_core)
zl_layer(model PUBLIC zl_kernels zl_core nlohmann_json::nlohmann_json
         PRIVATE Boost::system OpenSSL::SSL OpenSSL::Crypto)
zl_layer(tokenizer PUBLIC zl_core
         PRIVATE nlohmann_json::nlohmann_json PkgConfig::PCRE2 PkgConfig::SENTENCEPIECE PkgConfig::UTF8PROC)
zl_layer(jinja PUBLIC zl_core nlohmann_json::nlohmann_json)
zl_layer(bundle PUBLIC zl_model zl_tokenizer zl_jinja zl_core)
zl_layer(engine PUBLIC zl_model zl_tokenizer zl_core PRIVATE zl_bundle zl_kernels zl_xgrammar PkgConfig::XXHASH PkgConfig::ZMQ)
# The server and the transport use the engine only through
# include/zerolayer/engine.h: they link it without its headers (LINK_ONLY).
zl_layer(server PUBLIC zl_bundle zl_jinja zl_tokenizer zl_core
         PRIVATE $<LINK_ONLY:zl_engine> Boost::system OpenSSL::SSL OpenSSL::Crypto nlohmann_json::nlohmann_json)
# Responses' system_fingerprint names the build.
target_compile_definitions(zl_server PRIVATE ZL_VERSION_STRING="${PROJECT_VERSION}")
zl_layer(transport PUBLIC zl_core PRIVATE $<LINK_ONLY:zl_engine> zl_bundle zl_tokenizer)
# zerolayer_client_static is defined later (clients/c); CMake resolves names at generate time.
zl_layer(loadgen PUBLIC zl_core zerolayer_client_static nlohmann_json::nlohmann_json PRIVATE Boost::system)

# The whole engine and both front ends, for the CLI, the tests, bench/ and fuzz/.
add_library(zl INTERFACE)
target_link_libraries(zl INTERFACE zl_core zl_kernels zl_model zl_tokenizer zl_jinja zl_bundle zl_engine
                      zl_server zl_transport)

# Each public header compiles alone, with include/ as its only project path:
# one generated source per header, built with everything else.
file(GLOB ZL_PUBLIC_HEADERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/zerolayer/*.h)
set(ZL_PUBLIC_HEADER_CHECKS "")
foreach(header ${ZL_PUBLIC_HEADERS})
  get_filename_component(name ${header} NAME_WE)
  set(check ${PROJECT_BINARY_DIR}/public_headers/${name}.cpp)
  file(CONFIGURE OUTPUT ${check} CONTENT "#include \"zerolayer/${name}.h\"\n")
  list(APPEND ZL_PUBLIC_HEADER_CHECKS ${check})
  # The headers of the C client library compile as C as well.
  file(READ ${header} text)
  if(text MATCHES "__cplusplus")
    set(check ${PROJECT_BINARY_DIR}/public_headers/${name}.c)
    file(CONFIGURE OUTPUT ${check} CONTENT "#include \"zerolayer/${name}.h\"\n")
    list(APPEND ZL_PUBLIC_HEADER_CHECKS ${check})
  endif()
endforeach()
add_library(zl_public_headers OBJECT ${ZL_PUBLIC_HEADER_CHECKS})
target_include_directories(zl_public_headers PRIVATE ${PROJECT_SOURCE_DIR}/include)
