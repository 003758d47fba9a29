// Reading JSON that comes from model files (safetensors headers, config.json,
// index files) as untrusted input: sizes and nesting depth are bounded before
// parsing, parse errors come back as Status (no exception escapes), and
// duplicate object keys can be rejected because nlohmann::json would silently
// keep only the last one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "zerolayer/status.h"

namespace zl {

struct JsonParseOptions {
  int max_depth = 64;                  // deeper nesting is an error
  bool reject_duplicate_keys = false;  // in any object, at any depth
};

// Parses `text`; errors are data_loss and start with "<source>: ".
StatusOr<nlohmann::json> parse_json_text(std::string_view text, const std::string& source,
                                         const JsonParseOptions& options = {});

// Reads and parses a JSON file of at most max_bytes; not_found when missing.
StatusOr<nlohmann::json> read_json_file(const std::string& path, uint64_t max_bytes,
                                        const JsonParseOptions& options = {});

// "string", "number", "array", ... for messages like "expected an integer, got string".
const char* json_type_name(const nlohmann::json& value);

}  // namespace zl
