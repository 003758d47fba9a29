#include "jinja/chat_template_strings.h"

#include <algorithm>
#include <cctype>

namespace zl::jinja {
namespace {

bool is_py_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

// Python str.split(None, maxsplit): runs of whitespace, no empty parts.
ValueList split_whitespace(std::string_view s, int64_t maxsplit) {
  ValueList out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_py_space(s[i])) ++i;
    if (i >= s.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      std::string rest(s.substr(i));
      out.push_back(Value::string(py_strip(rest, nullptr, false, true)));
      break;
    }
    size_t j = i;
    while (j < s.size() && !is_py_space(s[j])) ++j;
    out.push_back(Value::string(std::string(s.substr(i, j - i))));
    i = j;
  }
  return out;
}

ValueList split_sep(std::string_view s, std::string_view sep, int64_t maxsplit, bool from_right) {
  std::vector<std::string> parts;
  if (!from_right) {
    size_t start = 0;
    while (true) {
      size_t p = (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) ? std::string_view::npos : s.find(sep, start);
      if (p == std::string_view::npos) {
        parts.emplace_back(s.substr(start));
        break;
      }
      parts.emplace_back(s.substr(start, p - start));
      start = p + sep.size();
    }
  } else {
    size_t end = s.size();
    while (true) {
      size_t p = (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) || end < sep.size()
                     ? std::string_view::npos
                     : s.rfind(sep, end - sep.size());
      if (p == std::string_view::npos) {
        parts.emplace_back(s.substr(0, end));
        break;
      }
      parts.emplace_back(s.substr(p + sep.size(), end - p - sep.size()));
      end = p;
    }
    std::reverse(parts.begin(), parts.end());
  }
  ValueList out;
  for (auto& p : parts) out.push_back(Value::string(std::move(p)));
  return out;
}

// Byte offset to code point index, as Python's find() reports it.
int64_t char_index(const std::string& s, size_t byte_pos) {
  int64_t n = 0;
  for (size_t i = 0; i < byte_pos; ++i) n += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
  return n;
}

StatusOr<std::string> format_braces(const std::string& fmt, const ValueList& args, const KwArgs& kwargs) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') {
      out += '}';
      ++i;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t close = fmt.find('}', i);
    if (close == std::string::npos) return invalid_argument("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    if (field.find_first_of(":!") != std::string::npos) return unimplemented("format specs in str.format are not supported");
    if (field.empty()) {
      if (auto_index >= args.size()) return invalid_argument("Replacement index ", auto_index, " out of range");
      out += args[auto_index++].to_str();
    } else if (std::all_of(field.begin(), field.end(), ::isdigit)) {
      size_t k = std::stoul(field);
      if (k >= args.size()) return invalid_argument("Replacement index ", k, " out of range");
      out += args[k].to_str();
    } else {
      auto it = std::find_if(kwargs.begin(), kwargs.end(), [&](const auto& kv) { return kv.first == field; });
      if (it == kwargs.end()) return invalid_argument("KeyError: '", field, "'");
      out += it->second.to_str();
    }
  }
  return out;
}

StatusOr<bool> affix_test(const std::string& s, const Value& arg, bool prefix) {
  ValueList options = arg.is_list() ? arg.items() : ValueList{arg};
  for (const Value& o : options) {
    if (!o.is_string()) return invalid_argument(prefix ? "startswith" : "endswith", " first arg must be str or a tuple of str");
    const std::string& a = o.str();
    if (a.size() <= s.size() && (prefix ? s.compare(0, a.size(), a) : s.compare(s.size() - a.size(), a.size(), a)) == 0) return true;
  }
  return false;
}

StatusOr<Value> call_string_search(Renderer& r, const std::string& s, const std::string& name, ValueList& args,
                                   KwArgs& kwargs);

}  // namespace

std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right) {
  auto strip_char = [&](unsigned char c) { return chars ? chars->find(static_cast<char>(c)) != std::string::npos : is_py_space(c); };
  size_t b = 0, e = s.size();
  if (left) {
    while (b < e && strip_char(s[b])) ++b;
  }
  if (right) {
    while (e > b && strip_char(s[e - 1])) --e;
  }
  return std::string(s.substr(b, e - b));
}

std::string py_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string py_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string py_title(std::string_view s) {
  std::string out(s);
  bool prev_cased = false;
  for (char& c : out) {
    unsigned char u = static_cast<unsigned char>(c);
    bool alpha = std::isalpha(u);
    c = static_cast<char>(alpha ? (prev_cased ? std::tolower(u) : std::toupper(u)) : u);
    prev_cased = alpha || u >= 0x80;
  }
  return out;
}

std::string py_capitalize(std::string_view s) {
  std::string out = py_lower(s);
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

std::string py_replace(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
  std::string out;
  size_t pos = 0;
  int64_t done = 0;
  if (from.empty()) {
    // Python inserts `to` between every character (and at both ends).
    for (std::string_view c : utf8_chars(s)) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      out += c;
    }
    if (count < 0 || done < count) out += to;
    return out;
  }
  while (count < 0 || done < count) {
    size_t p = s.find(from, pos);
    if (p == std::string_view::npos) break;
    out.append(s.substr(pos, p - pos));
    out.append(to);
    pos = p + from.size();
    ++done;
  }
  out.append(s.substr(pos));
  return out;
}

bool is_string_method(const std::string& name) {
  static const char* const kMethods[] = {"strip", "lstrip", "rstrip", "split", "rsplit", "startswith", "endswith",
                                         "upper", "lower", "title", "capitalize", "replace", "find", "rfind",
                                         "count", "join", "format", "splitlines", "isdigit", "isalpha", "isspace",
                                         "islower", "isupper", "isalnum"};
  return std::find(std::begin(kMethods), std::end(kMethods), name) != std::end(kMethods);
}

StatusOr<Value> call_string_method(Renderer& r, const std::string& s, const std::string& name, ValueList& args,
                                   KwArgs& kwargs) {
  auto arg = [&](size_t i, const char* kw) -> const Value* {
    if (i < args.size()) return &args[i];
    for (const auto& [k, v] : kwargs) {
      if (k == kw) return &v;
    }
    return nullptr;
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const Value* chars = arg(0, "chars");
    const std::string* set = chars && chars->is_string() ? &chars->str() : nullptr;
    return Value::string(py_strip(s, set, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    const Value* sep = arg(0, "sep");
    const Value* max = arg(1, "maxsplit");
    int64_t maxsplit = max && max->is_integer() ? max->as_int() : -1;
    if (!sep || sep->is_none()) {
      if (name == "rsplit" && maxsplit >= 0) return unimplemented("rsplit(None, maxsplit) is not supported");
      return Value::list(split_whitespace(s, maxsplit));
    }
    if (!sep->is_string() || sep->str().empty()) return invalid_argument("empty separator");
    ValueList parts = split_sep(s, sep->str(), maxsplit, name == "rsplit");
    ZL_RETURN_IF_ERROR(r.check_size(parts.size()));
    return Value::list(std::move(parts));
  }
  if (name == "startswith" || name == "endswith") {
    if (args.empty()) return invalid_argument(name, "() takes at least 1 argument (0 given)");
    ZL_ASSIGN_OR_RETURN(bool b, affix_test(s, args[0], name == "startswith"));
    return Value::boolean(b);
  }
  if (name == "upper") return Value::string(py_upper(s));
  if (name == "lower") return Value::string(py_lower(s));
  if (name == "title") return Value::string(py_title(s));
  if (name == "capitalize") return Value::string(py_capitalize(s));
  if (name == "replace") {
    if (args.size() < 2 || !args[0].is_string() || !args[1].is_string()) return invalid_argument("replace() needs two strings");
    int64_t count = args.size() > 2 && args[2].is_integer() ? args[2].as_int() : -1;
    std::string out = py_replace(s, args[0].str(), args[1].str(), count);
    ZL_RETURN_IF_ERROR(r.check_size(out.size()));
    return Value::string(std::move(out));
  }
  return call_string_search(r, s, name, args, kwargs);
}

namespace {

// find/rfind/count/join/format/splitlines and the is*() predicates.
StatusOr<Value> call_string_search(Renderer& r, const std::string& s, const std::string& name, ValueList& args,
                                   KwArgs& kwargs) {
  if (name == "find" || name == "rfind" || name == "count") {
    if (args.empty() || !args[0].is_string()) return invalid_argument(name, "() needs a string argument");
    const std::string& sub = args[0].str();
    if (name == "count") {
      if (sub.empty()) return Value::integer(static_cast<int64_t>(utf8_chars(s).size()) + 1);
      int64_t n = 0;
      for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
      return Value::integer(n);
    }
    size_t p = name == "find" ? s.find(sub) : s.rfind(sub);
    return Value::integer(p == std::string::npos ? -1 : char_index(s, p));
  }
  if (name == "join") {
    if (args.size() != 1) return invalid_argument("join() takes exactly one argument");
    ZL_ASSIGN_OR_RETURN(ValueList items, args[0].iterate());
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string()) return invalid_argument("sequence item ", i, ": expected str instance, ", items[i].type_name(), " found");
      if (i > 0) out += s;
      out += items[i].str();
      ZL_RETURN_IF_ERROR(r.check_size(out.size()));
    }
    return Value::string(std::move(out));
  }
  if (name == "format") {
    ZL_ASSIGN_OR_RETURN(std::string out, format_braces(s, args, kwargs));
    return Value::string(std::move(out));
  }
  if (name == "splitlines") {
    ValueList out;
    size_t start = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\n' && s[i] != '\r') continue;
      out.push_back(Value::string(s.substr(start, i - start)));
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      start = i + 1;
    }
    if (start < s.size()) out.push_back(Value::string(s.substr(start)));
    return Value::list(std::move(out));
  }
  // The is*() predicates, ASCII classes.
  auto all = [&](auto pred) {
    return Value::boolean(!s.empty() && std::all_of(s.begin(), s.end(), [&](char c) { return pred(static_cast<unsigned char>(c)); }));
  };
  if (name == "isdigit") return all([](unsigned char c) { return std::isdigit(c) != 0; });
  if (name == "isalpha") return all([](unsigned char c) { return std::isalpha(c) != 0; });
  if (name == "isalnum") return all([](unsigned char c) { return std::isalnum(c) != 0; });
  if (name == "isspace") return all([](unsigned char c) { return is_py_space(c); });
  bool has_cased = std::any_of(s.begin(), s.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; });
  if (name == "islower") return Value::boolean(has_cased && py_lower(s) == s);
  if (name == "isupper") return Value::boolean(has_cased && py_upper(s) == s);
  return invalid_argument("'str' object has no attribute '", name, "'");
}

}  // namespace
}  // namespace zl::jinja
