// Tables for Unicode NFC (generated into unicode_nfc_data.cpp by
// scripts/gen_unicode_nfc_data.py). Both tables are sorted by code point.
#pragma once

#include <cstddef>
#include <cstdint>

namespace zl::unicode {

struct CccRange {
  uint32_t first, last;  // inclusive
  uint8_t ccc;           // canonical combining class, non-zero
};
struct Decomposition {
  uint32_t cp;      // high bit set: a primary composite (NFC recomposes it)
  uint32_t first;
  uint32_t second;  // 0 for a singleton decomposition
};

extern const CccRange kCccRanges[];
extern const size_t kNumCccRanges;
extern const Decomposition kDecompositions[];
extern const size_t kNumDecompositions;

}  // namespace zl::unicode
