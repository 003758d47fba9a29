#include "model/json_util.h"

#include <nlohmann/json.hpp>
#include <unordered_set>
#include <vector>

#include "core/mapped_file.h"

namespace zl {
namespace {

using json = nlohmann::json;

// Depth of bracket nesting outside strings. Checked before parsing so that a
// hostile "[[[[..." never builds a deep tree.
int max_nesting_depth(std::string_view text) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') max_depth = std::max(max_depth, ++depth);
    else if (c == ']' || c == '}') --depth;
  }
  return max_depth;
}

}  // namespace

const char* json_type_name(const json& value) {
  if (value.is_number_integer()) return "integer";
  if (value.is_number_float()) return "number";
  return value.type_name();
}

StatusOr<json> parse_json_text(std::string_view text, const std::string& source,
                               const JsonParseOptions& options) {
  if (max_nesting_depth(text) > options.max_depth)
    return data_loss(source, ": JSON nests deeper than ", options.max_depth, " levels");
  // One key set per open object. The callback always keeps values, so every
  // object_start has its object_end.
  std::vector<std::unordered_set<std::string>> open_objects;
  std::string duplicate;
  json::parser_callback_t callback = [&](int, json::parse_event_t event, json& parsed) {
    if (!options.reject_duplicate_keys || !duplicate.empty()) return true;
    if (event == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!open_objects.empty()) open_objects.pop_back();
    } else if (event == json::parse_event_t::key && !open_objects.empty()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second) duplicate = key;
    }
    return true;
  };
  try {
    json value = json::parse(text.begin(), text.end(), callback);
    if (!duplicate.empty()) return data_loss(source, ": duplicate JSON key \"", duplicate, "\"");
    return value;
  } catch (const json::exception& e) {
    return data_loss(source, ": invalid JSON: ", e.what());
  }
}

StatusOr<json> read_json_file(const std::string& path, uint64_t max_bytes,
                              const JsonParseOptions& options) {
  ZL_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::open(path));
  if (file->size() > max_bytes)
    return data_loss(path, ": ", file->size(), " bytes is larger than the limit of ", max_bytes);
  std::string_view text(reinterpret_cast<const char*>(file->data()), file->size());
  return parse_json_text(text, path, options);
}

}  // namespace zl
