// Python str semantics the templates rely on (strip, split, title, ...), shared
// by the str methods and the jinja2 filters. Case mapping covers ASCII only:
// the templates apply it to roles and type names, not to user text.
#pragma once

#include <string>
#include <string_view>

#include "jinja/chat_template_eval.h"

namespace zl::jinja {

// str.strip/lstrip/rstrip; chars == nullptr strips whitespace.
std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right);
std::string py_lower(std::string_view s);
std::string py_upper(std::string_view s);
std::string py_title(std::string_view s);
std::string py_capitalize(std::string_view s);
// str.replace(old, new, count); count < 0 replaces all.
std::string py_replace(std::string_view s, std::string_view from, std::string_view to, int64_t count);

bool is_string_method(const std::string& name);
StatusOr<Value> call_string_method(Renderer& r, const std::string& s, const std::string& name, ValueList& args,
                                   KwArgs& kwargs);

}  // namespace zl::jinja
