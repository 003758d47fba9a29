// Unicode NFC through utf8proc (Debian libutf8proc-dev), which ships the
// Unicode Character Database tables so we do not keep a copy of them.
// Pythia's tokenizer.json (and Qwen2's) normalize input with NFC.
#include <utf8proc.h>

#include <cstdlib>

#include "tokenizer/unicode_util.h"

namespace zl::unicode {

std::string nfc(std::string_view text) {
  utf8proc_uint8_t* out = nullptr;
  utf8proc_ssize_t len = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                      static_cast<utf8proc_ssize_t>(text.size()), &out,
                                      static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  // Invalid UTF-8 cannot be normalised; HF only ever sees valid strings, so
  // such input passes through unchanged.
  if (len < 0) return std::string(text);
  std::string result(reinterpret_cast<const char*>(out), static_cast<size_t>(len));
  std::free(out);
  return result;
}

}  // namespace zl::unicode
