// Attribute and item access, the Python methods templates call on str, dict
// and list, and the globals transformers defines. The sandbox rules are
// ImmutableSandboxedEnvironment's: methods that mutate a list or dict exist
// but fail with "... is unsafe" when called.
#include <algorithm>
#include <cctype>
#include <ctime>

#include "jinja/chat_template_eval.h"
#include "jinja/chat_template_strings.h"

namespace zl::jinja {
namespace {

using Fn = decltype(Callable::fn);

Status expect_args(const std::string& name, const ValueList& args, size_t min, size_t max) {
  if (args.size() < min || args.size() > max) {
    return invalid_argument(name, "() takes ", min == max ? std::to_string(min) : str_cat(min, " to ", max), " arguments (",
                            args.size(), " given)");
  }
  return ok_status();
}

// "'str object'", "'None'": built by appending, since `"'" + std::string&&`
// trips GCC 12's false -Wrestrict warning (GCC bug 105329).
std::string quoted_desc(const Value& v) {
  std::string s = "'";
  s += v.is_none() ? std::string("None") : v.type_name() + " object";
  s += '\'';
  return s;
}

Value missing_attribute(const Value& obj, const std::string& name) {
  return Value::undefined(quoted_desc(obj) + " has no attribute '" + name + "'");
}

Value unsafe_method(const Value& obj, const std::string& name) {
  std::string msg = "access to attribute '" + name + "' of '" + obj.type_name() + "' object is unsafe.";
  return Value::callable(name, [msg](Renderer&, ValueList&, KwArgs&) -> StatusOr<Value> { return invalid_argument(msg); });
}

StatusOr<Value> dict_method(const Value& obj, const std::string& name) {
  if (name == "items" || name == "keys" || name == "values") {
    return Value::callable(name, [obj, name](Renderer&, ValueList& args, KwArgs&) -> StatusOr<Value> {
      ZL_RETURN_IF_ERROR(expect_args(name, args, 0, 0));
      ValueList out;
      for (const auto& [k, v] : obj.entries().items) {
        if (name == "items") out.push_back(Value::list({Value::string(k), v}));
        else out.push_back(name == "keys" ? Value::string(k) : v);
      }
      return Value::list(std::move(out));
    });
  }
  if (name == "get") {
    return Value::callable(name, [obj](Renderer&, ValueList& args, KwArgs&) -> StatusOr<Value> {
      ZL_RETURN_IF_ERROR(expect_args("get", args, 1, 2));
      const Value* v = args[0].is_string() ? obj.entries().find(args[0].str()) : nullptr;
      if (v) return *v;
      return args.size() > 1 ? args[1] : Value::none();
    });
  }
  if (name == "copy") {
    return Value::callable(name, [obj](Renderer&, ValueList&, KwArgs&) -> StatusOr<Value> { return Value::dict(obj.entries()); });
  }
  static const char* const kUnsafe[] = {"update", "pop", "popitem", "clear", "setdefault"};
  for (const char* u : kUnsafe) {
    if (name == u) return unsafe_method(obj, name);
  }
  const Value* v = obj.entries().find(name);
  return v ? *v : missing_attribute(obj, name);
}

StatusOr<Value> list_method(const Value& obj, const std::string& name) {
  static const char* const kUnsafe[] = {"append", "extend", "insert", "pop", "remove", "sort", "reverse", "clear"};
  for (const char* u : kUnsafe) {
    if (name == u) return unsafe_method(obj, name);
  }
  if (name == "index" || name == "count") {
    return Value::callable(name, [obj, name](Renderer&, ValueList& args, KwArgs&) -> StatusOr<Value> {
      ZL_RETURN_IF_ERROR(expect_args(name, args, 1, 1));
      int64_t count = 0;
      for (size_t i = 0; i < obj.items().size(); ++i) {
        if (!values_equal(obj.items()[i], args[0])) continue;
        if (name == "index") return Value::integer(static_cast<int64_t>(i));
        ++count;
      }
      if (name == "index") return invalid_argument(args[0].repr(), " is not in list");
      return Value::integer(count);
    });
  }
  return missing_attribute(obj, name);
}

StatusOr<Value> string_method(const Value& obj, const std::string& name) {
  if (!is_string_method(name)) return missing_attribute(obj, name);
  return Value::callable(name, [obj, name](Renderer& r, ValueList& args, KwArgs& kwargs) -> StatusOr<Value> {
    return call_string_method(r, obj.str(), name, args, kwargs);
  });
}

std::string strftime_now(const RenderEnv& env, const std::string& format) {
  std::time_t t = env.fixed_time ? static_cast<std::time_t>(*env.fixed_time) : std::time(nullptr);
  std::tm tm{};
  if (env.fixed_time) gmtime_r(&t, &tm);
  else localtime_r(&t, &tm);
  std::string buf(256 + format.size() * 8, '\0');
  size_t n = format.empty() ? 0 : std::strftime(buf.data(), buf.size(), format.c_str(), &tm);
  buf.resize(n);
  return buf;
}

StatusOr<Value> global_range(Renderer& r, ValueList& args) {
  ZL_RETURN_IF_ERROR(expect_args("range", args, 1, 3));
  for (const Value& a : args) {
    if (!a.is_integer()) return invalid_argument("'", a.type_name(), "' object cannot be interpreted as an integer");
  }
  int64_t start = args.size() > 1 ? args[0].as_int() : 0;
  int64_t stop = args.size() > 1 ? args[1].as_int() : args[0].as_int();
  int64_t step = args.size() > 2 ? args[2].as_int() : 1;
  if (step == 0) return invalid_argument("range() arg 3 must not be zero");
  // jinja2's sandbox refuses ranges over MAX_RANGE = 100000 items.
  double count = std::max(0.0, std::ceil((static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step)));
  if (count > 100000) return invalid_argument("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  ZL_RETURN_IF_ERROR(r.count_iterations(static_cast<int64_t>(count)));
  ValueList out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(Value::integer(i));
  return Value::list(std::move(out));
}

StatusOr<Value> global_dict(ValueList& args, KwArgs& kwargs, bool as_namespace) {
  if (args.size() > 1) return invalid_argument("dict expected at most 1 argument, got ", args.size());
  ValueDict d;
  if (!args.empty()) {
    if (args[0].is_dict()) {
      d = args[0].entries();
    } else {
      ZL_ASSIGN_OR_RETURN(ValueList pairs, args[0].iterate());
      for (const Value& p : pairs) {
        if (!p.is_list() || p.items().size() != 2 || !p.items()[0].is_string()) {
          return invalid_argument("dict() needs (string key, value) pairs");
        }
        d.set(p.items()[0].str(), p.items()[1]);
      }
    }
  }
  for (auto& [k, v] : kwargs) d.set(k, v);
  if (!as_namespace) return Value::dict(std::move(d));
  for (const auto& [k, v] : d.items) {
    if (!k.empty() && k[0] == '_') {
      return invalid_argument("Chat templates cannot store underscore-prefixed attributes on a namespace, but got '", k,
                              "'. Please rename the attribute.");
    }
  }
  return Value::ns(std::move(d));
}

}  // namespace

StatusOr<Value> get_attribute(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case ValueKind::kUndefined: return invalid_argument(obj.str().empty() ? "value is undefined" : obj.str());
    case ValueKind::kDict: return dict_method(obj, name);
    case ValueKind::kNamespace: {
      const Value* v = obj.entries().find(name);
      return v ? *v : missing_attribute(obj, name);
    }
    case ValueKind::kList: return list_method(obj, name);
    case ValueKind::kString: return string_method(obj, name);
    default: return missing_attribute(obj, name);
  }
}

StatusOr<Value> get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return invalid_argument(obj.str().empty() ? "value is undefined" : obj.str());
  if ((obj.is_dict() || obj.kind() == ValueKind::kNamespace) && key.is_string()) {
    const Value* v = obj.entries().find(key.str());
    if (v) return *v;
    if (obj.kind() == ValueKind::kNamespace) return missing_attribute(obj, key.str());
    return get_attribute(obj, key.str());
  }
  if ((obj.is_list() || obj.is_string()) && key.is_integer()) {
    std::vector<std::string_view> chars;
    if (obj.is_string()) chars = utf8_chars(obj.str());
    int64_t n = obj.is_list() ? static_cast<int64_t>(obj.items().size()) : static_cast<int64_t>(chars.size());
    int64_t i = key.as_int() < 0 ? key.as_int() + n : key.as_int();
    if (i < 0 || i >= n) return Value::undefined(quoted_desc(obj) + " has no element " + key.repr());
    if (obj.is_list()) return obj.items()[i];
    return Value::string(std::string(chars[i]));
  }
  if (key.is_string()) return get_attribute(obj, key.str());
  return Value::undefined(quoted_desc(obj) + " has no element " + key.repr());
}

void add_globals(Scope& scope) {
  scope.set("range", Value::callable("range", [](Renderer& r, ValueList& args, KwArgs&) { return global_range(r, args); }));
  scope.set("dict", Value::callable("dict", [](Renderer&, ValueList& args, KwArgs& kwargs) { return global_dict(args, kwargs, false); }));
  scope.set("namespace", Value::callable("namespace", [](Renderer&, ValueList& args, KwArgs& kwargs) {
    return global_dict(args, kwargs, true);
  }));
  scope.set("raise_exception", Value::callable("raise_exception", [](Renderer&, ValueList& args, KwArgs&) -> StatusOr<Value> {
    return invalid_argument(args.empty() ? std::string("raise_exception() called") : args[0].to_str());
  }));
  scope.set("strftime_now", Value::callable("strftime_now", [](Renderer& r, ValueList& args, KwArgs&) -> StatusOr<Value> {
    ZL_RETURN_IF_ERROR(expect_args("strftime_now", args, 1, 1));
    return Value::string(strftime_now(r.env(), args[0].to_str()));
  }));
}

}  // namespace zl::jinja
