// ZL_CPU_CLONES: a loop the compiler vectorizes, built for AVX-512, AVX2+FMA
// and baseline x86-64, the best chosen when the program loads (an ifunc).
// ThreadSanitizer builds get the baseline only: clang 14 instruments the
// ifunc resolver, which then runs before the sanitizer's runtime is up and
// crashes or picks a clone the CPU lacks (AVX-512 on an AVX2 machine).
#pragma once

#if defined(__SANITIZE_THREAD__)
#define ZL_CPU_CLONES
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ZL_CPU_CLONES
#endif
#endif

#ifndef ZL_CPU_CLONES
#define ZL_CPU_CLONES __attribute__((target_clones("avx512f", "fma", "default")))
#endif
