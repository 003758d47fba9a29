// The values a chat template computes with, modelled on the Python objects
// jinja2 hands around: None, bool, int, float, str, list, dict (insertion
// ordered, string keys), jinja2's Undefined, namespace() objects and callables
// (macros, globals, bound methods). Lists, dicts and namespaces are shared by
// reference as in Python; everything else is copied.
//
// str()/repr()/json follow CPython so rendered text matches transformers byte
// for byte: `{{ 1.0 }}` is "1.0", `{{ ['a'] }}` is "['a']", tojson uses
// json.dumps' ", " / ": " separators.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "zerolayer/status.h"

namespace zl::jinja {

class Value;
class Renderer;
using ValueList = std::vector<Value>;
using KwArgs = std::vector<std::pair<std::string, Value>>;

struct ValueDict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value value);
};

// A builtin or macro. Errors come back as Status; the caller adds the position.
struct Callable {
  std::string name;
  std::function<StatusOr<Value>(Renderer&, ValueList& args, KwArgs& kwargs)> fn;
};

enum class ValueKind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kCallable };

class Value {
 public:
  Value() = default;  // Undefined
  static Value undefined(std::string name = {});
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double f);
  static Value string(std::string s);
  static Value list(ValueList items = {});
  static Value dict(ValueDict d = {});
  static Value ns(ValueDict d = {});
  static Value callable(std::string name, decltype(Callable::fn) fn);
  static Value from_json(const nlohmann::ordered_json& j);

  ValueKind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == ValueKind::kUndefined; }
  bool is_none() const { return kind_ == ValueKind::kNone; }
  bool is_string() const { return kind_ == ValueKind::kString; }
  bool is_list() const { return kind_ == ValueKind::kList; }
  bool is_dict() const { return kind_ == ValueKind::kDict; }
  bool is_number() const { return kind_ == ValueKind::kBool || kind_ == ValueKind::kInt || kind_ == ValueKind::kFloat; }
  bool is_integer() const { return kind_ == ValueKind::kBool || kind_ == ValueKind::kInt; }
  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == ValueKind::kFloat ? static_cast<int64_t>(f_) : i_; }
  double as_float() const { return kind_ == ValueKind::kFloat ? f_ : static_cast<double>(i_); }
  const std::string& str() const { return s_; }  // string value, or Undefined's name
  ValueList& items() const { return *list_; }
  ValueDict& entries() const { return *dict_; }  // dict and namespace
  const Callable& fn() const { return *fn_; }

  bool truthy() const;
  // Python str(): what {{ x }} prints.
  std::string to_str() const;
  // Python repr(): how x prints inside a list or dict.
  std::string repr() const;
  // The elements `for x in v` visits: list items, dict keys, string characters.
  StatusOr<ValueList> iterate() const;
  // Python len(); error for numbers and None.
  StatusOr<int64_t> length() const;
  std::string type_name() const;

 private:
  ValueKind kind_ = ValueKind::kUndefined;
  bool b_ = false;
  int64_t i_ = 0;  // also bool as 0/1, so arithmetic treats bools as ints
  double f_ = 0;
  std::string s_;
  std::shared_ptr<ValueList> list_;
  std::shared_ptr<ValueDict> dict_;
  std::shared_ptr<Callable> fn_;
};

// Python ==.
bool values_equal(const Value& a, const Value& b);
// Python <: -1/0/1, or an error for unorderable types.
StatusOr<int> values_compare(const Value& a, const Value& b);

struct JsonDumpOptions {
  int indent = -1;             // < 0: one line
  std::string indent_str;      // used when indent was given as a string
  bool use_indent_str = false;
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::string item_sep = ", ";
  std::string key_sep = ": ";
  size_t max_bytes = SIZE_MAX;  // longer output is an error naming the limit
};
// json.dumps(v, ...); error for Undefined and callables as Python raises.
StatusOr<std::string> to_json(const Value& v, const JsonDumpOptions& options);
// Python repr(float).
std::string float_repr(double f);

// UTF-8 code point boundaries: Python indexes strings by code point.
std::vector<std::string_view> utf8_chars(std::string_view s);

}  // namespace zl::jinja
