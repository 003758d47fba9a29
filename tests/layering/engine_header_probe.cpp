// Built by the layering tests (tests/CMakeLists.txt), never linked: a source
// that includes an engine header compiles in the engine's layer and must not
// compile in the model's, which lies below it (cmake/layers.cmake).
#include "engine/kv_pool.h"

int layering_probe(const zl::KvPoolConfig& config) { return config.block_size; }
