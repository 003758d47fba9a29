#include "jinja/chat_template_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace zl::jinja {

const Value* ValueDict::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void ValueDict::set(const std::string& key, Value value) {
  for (auto& [k, v] : items) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(key, std::move(value));
}

Value Value::undefined(std::string name) {
  Value v;
  v.s_ = std::move(name);
  return v;
}
Value Value::none() {
  Value v;
  v.kind_ = ValueKind::kNone;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.kind_ = ValueKind::kBool;
  v.b_ = b;
  v.i_ = b ? 1 : 0;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = ValueKind::kInt;
  v.i_ = i;
  return v;
}
Value Value::number(double f) {
  Value v;
  v.kind_ = ValueKind::kFloat;
  v.f_ = f;
  return v;
}
Value Value::string(std::string s) {
  Value v;
  v.kind_ = ValueKind::kString;
  v.s_ = std::move(s);
  return v;
}
Value Value::list(ValueList items) {
  Value v;
  v.kind_ = ValueKind::kList;
  v.list_ = std::make_shared<ValueList>(std::move(items));
  return v;
}
Value Value::dict(ValueDict d) {
  Value v;
  v.kind_ = ValueKind::kDict;
  v.dict_ = std::make_shared<ValueDict>(std::move(d));
  return v;
}
Value Value::ns(ValueDict d) {
  Value v = dict(std::move(d));
  v.kind_ = ValueKind::kNamespace;
  return v;
}
Value Value::callable(std::string name, decltype(Callable::fn) fn) {
  Value v;
  v.kind_ = ValueKind::kCallable;
  v.fn_ = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      return u > static_cast<uint64_t>(INT64_MAX) ? number(static_cast<double>(u)) : integer(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return number(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      ValueList items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json(e));
      return list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      ValueDict d;
      d.items.reserve(j.size());
      for (const auto& [k, e] : j.items()) d.items.emplace_back(k, from_json(e));
      return dict(std::move(d));
    }
    default: return none();  // binary / discarded never come from JSON text
  }
}

bool Value::truthy() const {
  switch (kind_) {
    case ValueKind::kUndefined:
    case ValueKind::kNone: return false;
    case ValueKind::kBool:
    case ValueKind::kInt: return i_ != 0;
    case ValueKind::kFloat: return f_ != 0;
    case ValueKind::kString: return !s_.empty();
    case ValueKind::kList: return !list_->empty();
    case ValueKind::kDict: return !dict_->items.empty();
    case ValueKind::kNamespace:
    case ValueKind::kCallable: return true;
  }
  return false;
}

std::string float_repr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  size_t e_pos = sci.find('e');
  std::string digits = sci.substr(0, e_pos);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  int exp10 = std::stoi(sci.substr(e_pos + 1));
  std::string out;
  if (exp10 >= -4 && exp10 < 16) {
    if (exp10 >= 0) {
      std::string int_part = digits.substr(0, std::min<size_t>(digits.size(), exp10 + 1));
      int_part.append(exp10 + 1 - int_part.size(), '0');
      std::string frac = digits.size() > static_cast<size_t>(exp10 + 1) ? digits.substr(exp10 + 1) : "0";
      out = int_part + "." + frac;
    } else {
      out = "0." + std::string(-exp10 - 1, '0') + digits;
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out.append(".").append(digits, 1);
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += exp_buf;
  }
  return negative ? "-" + out : out;
}

namespace {

std::string string_repr(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == quote || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

}  // namespace

std::string Value::to_str() const {
  switch (kind_) {
    case ValueKind::kUndefined: return "";
    case ValueKind::kString: return s_;
    default: return repr();
  }
}

std::string Value::repr() const {
  switch (kind_) {
    case ValueKind::kUndefined: return "";
    case ValueKind::kNone: return "None";
    case ValueKind::kBool: return b_ ? "True" : "False";
    case ValueKind::kInt: return std::to_string(i_);
    case ValueKind::kFloat: return float_repr(f_);
    case ValueKind::kString: return string_repr(s_);
    case ValueKind::kList: {
      std::string out = "[";
      for (size_t i = 0; i < list_->size(); ++i) {
        if (i > 0) out += ", ";
        out += (*list_)[i].repr();
      }
      return out + "]";
    }
    case ValueKind::kDict:
    case ValueKind::kNamespace: {
      std::string out = kind_ == ValueKind::kNamespace ? "<Namespace {" : "{";
      for (size_t i = 0; i < dict_->items.size(); ++i) {
        if (i > 0) out += ", ";
        out += string_repr(dict_->items[i].first) + ": " + dict_->items[i].second.repr();
      }
      return out + (kind_ == ValueKind::kNamespace ? "}>" : "}");
    }
    case ValueKind::kCallable: return "<function " + fn_->name + ">";
  }
  return "";
}

std::vector<std::string_view> utf8_chars(std::string_view s) {
  std::vector<std::string_view> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    len = std::min(len, s.size() - i);
    out.push_back(s.substr(i, len));
    i += len;
  }
  return out;
}

StatusOr<ValueList> Value::iterate() const {
  switch (kind_) {
    case ValueKind::kUndefined: return ValueList{};
    case ValueKind::kList: return *list_;
    case ValueKind::kDict: {
      ValueList keys;
      for (const auto& kv : dict_->items) keys.push_back(string(kv.first));
      return keys;
    }
    case ValueKind::kString: {
      ValueList chars;
      for (std::string_view c : utf8_chars(s_)) chars.push_back(string(std::string(c)));
      return chars;
    }
    default: return invalid_argument("'", type_name(), "' object is not iterable");
  }
}

StatusOr<int64_t> Value::length() const {
  switch (kind_) {
    case ValueKind::kUndefined: return int64_t{0};
    case ValueKind::kString: return static_cast<int64_t>(utf8_chars(s_).size());
    case ValueKind::kList: return static_cast<int64_t>(list_->size());
    case ValueKind::kDict: return static_cast<int64_t>(dict_->items.size());
    default: return invalid_argument("object of type '", type_name(), "' has no len()");
  }
}

std::string Value::type_name() const {
  switch (kind_) {
    case ValueKind::kUndefined: return "Undefined";
    case ValueKind::kNone: return "NoneType";
    case ValueKind::kBool: return "bool";
    case ValueKind::kInt: return "int";
    case ValueKind::kFloat: return "float";
    case ValueKind::kString: return "str";
    case ValueKind::kList: return "list";
    case ValueKind::kDict: return "dict";
    case ValueKind::kNamespace: return "Namespace";
    case ValueKind::kCallable: return "function";
  }
  return "object";
}

bool values_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind() == ValueKind::kFloat || b.kind() == ValueKind::kFloat) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case ValueKind::kUndefined:
    case ValueKind::kNone: return true;
    case ValueKind::kString: return a.str() == b.str();
    case ValueKind::kList: {
      if (a.items().size() != b.items().size()) return false;
      for (size_t i = 0; i < a.items().size(); ++i) {
        if (!values_equal(a.items()[i], b.items()[i])) return false;
      }
      return true;
    }
    case ValueKind::kDict: {
      if (a.entries().items.size() != b.entries().items.size()) return false;
      for (const auto& [k, v] : a.entries().items) {
        const Value* other = b.entries().find(k);
        if (other == nullptr || !values_equal(v, *other)) return false;
      }
      return true;
    }
    case ValueKind::kNamespace: return &a.entries() == &b.entries();
    case ValueKind::kCallable: return &a.fn() == &b.fn();
    default: return false;
  }
}

StatusOr<int> values_compare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    double x = a.as_float(), y = b.as_float();
    if (a.kind() != ValueKind::kFloat && b.kind() != ValueKind::kFloat) {
      return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
    }
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    // Byte order of UTF-8 is code point order, which is what Python compares.
    int c = a.str().compare(b.str());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list()) {
    size_t n = std::min(a.items().size(), b.items().size());
    for (size_t i = 0; i < n; ++i) {
      if (values_equal(a.items()[i], b.items()[i])) continue;
      return values_compare(a.items()[i], b.items()[i]);
    }
    return a.items().size() < b.items().size() ? -1 : a.items().size() > b.items().size() ? 1 : 0;
  }
  return invalid_argument("'<' not supported between instances of '", a.type_name(), "' and '", b.type_name(), "'");
}

namespace {

void json_escape(const std::string& s, bool ensure_ascii, std::string& out) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    char buf[16];
    if (c < 0x20 || (ensure_ascii && c == 0x7f)) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else if (c >= 0x80 && ensure_ascii) {
      size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
      uint32_t cp = c & (len == 4 ? 0x07 : len == 3 ? 0x0F : 0x1F);
      for (size_t k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (s[i + k] & 0x3F);
      i += len - 1;
      if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
      } else {
        std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      }
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

// Checked before each separator and indentation is written, so that the
// output never grows far past the limit (an indent of 10**9 once took 9 GB).
Status check_room(const std::string& out, size_t add, const JsonDumpOptions& o) {
  if (add > o.max_bytes || out.size() > o.max_bytes - add)
    return resource_exhausted("tojson: output larger than the limit of ", o.max_bytes, " bytes");
  return ok_status();
}

Status dump(const Value& v, const JsonDumpOptions& o, int depth, std::string& out) {
  if (depth > 256) return invalid_argument("tojson: value nested too deeply");
  ZL_RETURN_IF_ERROR(check_room(out, 0, o));
  bool pretty = o.indent >= 0 || o.use_indent_str;
  const size_t unit_size = o.use_indent_str ? o.indent_str.size() : static_cast<size_t>(std::max(o.indent, 0));
  auto separate = [&](bool first, int level) -> Status {
    const size_t add = (first ? 0 : o.item_sep.size()) + (pretty ? 1 + static_cast<size_t>(level) * unit_size : 0);
    ZL_RETURN_IF_ERROR(check_room(out, add, o));
    if (!first) out += o.item_sep;
    if (!pretty) return ok_status();
    out += '\n';
    for (int i = 0; i < level; ++i) {
      if (o.use_indent_str) out += o.indent_str;
      else out.append(unit_size, ' ');
    }
    return ok_status();
  };
  switch (v.kind()) {
    case ValueKind::kNone: out += "null"; return ok_status();
    case ValueKind::kBool: out += v.as_bool() ? "true" : "false"; return ok_status();
    case ValueKind::kInt: out += std::to_string(v.as_int()); return ok_status();
    case ValueKind::kFloat: {
      double f = v.as_float();
      out += std::isnan(f) ? "NaN" : std::isinf(f) ? (f > 0 ? "Infinity" : "-Infinity") : float_repr(f);
      return ok_status();
    }
    case ValueKind::kString: json_escape(v.str(), o.ensure_ascii, out); return ok_status();
    case ValueKind::kList: {
      if (v.items().empty()) {
        out += "[]";
        return ok_status();
      }
      out += '[';
      for (size_t i = 0; i < v.items().size(); ++i) {
        ZL_RETURN_IF_ERROR(separate(i == 0, depth + 1));
        ZL_RETURN_IF_ERROR(dump(v.items()[i], o, depth + 1, out));
      }
      if (pretty) ZL_RETURN_IF_ERROR(separate(true, depth));
      out += ']';
      return ok_status();
    }
    case ValueKind::kDict: {
      if (v.entries().items.empty()) {
        out += "{}";
        return ok_status();
      }
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& kv : v.entries().items) entries.push_back(&kv);
      if (o.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
      }
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        ZL_RETURN_IF_ERROR(separate(i == 0, depth + 1));
        json_escape(entries[i]->first, o.ensure_ascii, out);
        out += o.key_sep;
        ZL_RETURN_IF_ERROR(dump(entries[i]->second, o, depth + 1, out));
      }
      if (pretty) ZL_RETURN_IF_ERROR(separate(true, depth));
      out += '}';
      return ok_status();
    }
    default: return invalid_argument("Object of type ", v.type_name(), " is not JSON serializable");
  }
}

}  // namespace

StatusOr<std::string> to_json(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  ZL_RETURN_IF_ERROR(dump(v, options, 0, out));
  return out;
}

}  // namespace zl::jinja
