// JSON text of a value whose strings may hold bytes that are not UTF-8 (a
// model's text, a client's): they become U+FFFD instead of throwing, so
// writing an answer cannot fail.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace zl::server {

template <typename Json>
std::string json_text(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace zl::server
