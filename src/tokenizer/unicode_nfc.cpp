// Unicode NFC: canonical decomposition, canonical ordering, canonical
// composition (UAX #15), with Hangul syllables handled algorithmically.
// Pythia's tokenizer.json (and Qwen2's) normalize input with NFC.
#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/unicode_nfc_data.h"
#include "tokenizer/unicode_util.h"

namespace zl::unicode {
namespace {

constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28;
constexpr char32_t kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

struct NfcTables {
  std::unordered_map<char32_t, std::pair<char32_t, char32_t>> decompose;
  std::unordered_map<uint64_t, char32_t> compose;  // (first << 32 | second) -> composite
  NfcTables() {
    decompose.reserve(kNumDecompositions);
    for (size_t i = 0; i < kNumDecompositions; ++i) {
      const Decomposition& d = kDecompositions[i];
      const char32_t cp = d.cp & 0x7FFFFFFF;
      decompose[cp] = {d.first, d.second};
      if (d.cp & 0x80000000) compose[(uint64_t{d.first} << 32) | d.second] = cp;
    }
  }
};

const NfcTables& tables() {
  static const NfcTables t;
  return t;
}

uint8_t combining_class(char32_t cp) {
  if (cp < 0x300) return 0;
  const CccRange* end = kCccRanges + kNumCccRanges;
  const CccRange* it = std::upper_bound(kCccRanges, end, cp,
                                        [](char32_t c, const CccRange& r) { return c < r.first; });
  if (it == kCccRanges) return 0;
  --it;
  return cp <= it->last ? it->ccc : 0;
}

void decompose_into(char32_t cp, std::vector<char32_t>* out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out->push_back(kLBase + s / kNCount);
    out->push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out->push_back(kTBase + s % kTCount);
    return;
  }
  const auto& table = tables().decompose;
  const auto it = table.find(cp);
  if (it == table.end()) {
    out->push_back(cp);
    return;
  }
  decompose_into(it->second.first, out);
  if (it->second.second != 0) decompose_into(it->second.second, out);
}

char32_t compose_pair(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount) {
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  }
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount) {
    return a + (b - kTBase);
  }
  const auto& table = tables().compose;
  const auto it = table.find((uint64_t{a} << 32) | b);
  return it == table.end() ? 0 : it->second;
}

}  // namespace

std::string nfc(std::string_view text) {
  if (std::all_of(text.begin(), text.end(), [](char c) { return static_cast<uint8_t>(c) < 0x80; })) {
    return std::string(text);
  }
  // 1. Full canonical decomposition. Input is valid UTF-8 (callers repair it).
  std::vector<char32_t> cps;
  cps.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    char32_t cp = 0xFFFD;
    const size_t len = decode_utf8(text, pos, &cp);
    pos += len == 0 ? 1 : len;
    decompose_into(cp, &cps);
  }
  // 2. Canonical ordering: stable sort of each run of non-starters by class.
  std::vector<uint8_t> ccc(cps.size());
  for (size_t i = 0; i < cps.size(); ++i) ccc[i] = combining_class(cps[i]);
  for (size_t i = 0; i < cps.size();) {
    if (ccc[i] == 0) { ++i; continue; }
    size_t j = i;
    while (j < cps.size() && ccc[j] != 0) ++j;
    std::vector<std::pair<uint8_t, char32_t>> run;
    for (size_t k = i; k < j; ++k) run.push_back({ccc[k], cps[k]});
    std::stable_sort(run.begin(), run.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t k = i; k < j; ++k) std::tie(ccc[k], cps[k]) = run[k - i];
    i = j;
  }
  // 3. Canonical composition: each char joins the last starter unless blocked.
  std::vector<char32_t> out;
  std::vector<uint8_t> out_ccc;
  int64_t starter = -1;
  for (size_t i = 0; i < cps.size(); ++i) {
    const char32_t cp = cps[i];
    const uint8_t c = ccc[i];
    if (starter >= 0) {
      const uint8_t last_ccc = out_ccc.back();
      const bool adjacent = static_cast<size_t>(starter) == out.size() - 1;
      const bool blocked = !adjacent && (last_ccc == 0 || last_ccc >= c);
      if (!blocked) {
        const char32_t composite = compose_pair(out[starter], cp);
        if (composite != 0) {
          out[starter] = composite;
          continue;
        }
      }
    }
    out.push_back(cp);
    out_ccc.push_back(c);
    if (c == 0) starter = static_cast<int64_t>(out.size()) - 1;
  }
  std::string result;
  result.reserve(text.size());
  for (char32_t cp : out) append_utf8(cp, &result);
  return result;
}

}  // namespace zl::unicode
