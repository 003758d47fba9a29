// <immintrin.h> for files with AVX-512 code. GCC 12's AVX-512 headers trip
// -Wuninitialized inside _mm512_undefined_* and _mm512_reduce_*; clang has
// no -Wmaybe-uninitialized group and would warn about the pragma itself.
#pragma once

#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
