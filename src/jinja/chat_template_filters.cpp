// jinja2's builtin filters and tests, with transformers' tojson override
// (json.dumps with ensure_ascii=False, no HTML escaping, indent/sort_keys).
// Signatures, defaults and edge cases follow jinja2/filters.py and tests.py.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "jinja/chat_template_eval.h"
#include "jinja/chat_template_strings.h"

namespace zl::jinja {
namespace {

// Argument `i` by position, else by keyword, else null.
struct Args {
  ValueList& pos;
  KwArgs& kw;
  const Value* get(size_t i, const char* name) const {
    if (i < pos.size()) return &pos[i];
    for (const auto& [k, v] : kw) {
      if (k == name) return &v;
    }
    return nullptr;
  }
  bool flag(size_t i, const char* name, bool def) const {
    const Value* v = get(i, name);
    return v ? v->truthy() : def;
  }
};

// jinja2's make_attrgetter: "a.b.0" walks items/attributes.
StatusOr<Value> get_path(const Value& item, const std::string& path) {
  Value cur = item;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    ZL_ASSIGN_OR_RETURN(cur, get_item(cur, numeric ? Value::integer(std::stoll(part)) : Value::string(part)));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

StatusOr<Value> filter_tojson(const Value& input, const Args& a, size_t max_bytes) {
  JsonDumpOptions o;
  o.max_bytes = max_bytes;
  o.ensure_ascii = a.flag(0, "ensure_ascii", false);
  const Value* indent = a.get(1, "indent");
  if (indent && indent->is_integer()) {
    o.indent = static_cast<int>(std::clamp<int64_t>(indent->as_int(), 0, INT32_MAX));
  } else if (indent && indent->is_string()) {
    o.use_indent_str = true;
    o.indent_str = indent->str();
  }
  if (indent && !indent->is_none() && !indent->is_undefined()) o.item_sep = ",";
  const Value* seps = a.get(2, "separators");
  if (seps && seps->is_list() && seps->items().size() == 2) {
    o.item_sep = seps->items()[0].to_str();
    o.key_sep = seps->items()[1].to_str();
  }
  o.sort_keys = a.flag(3, "sort_keys", false);
  ZL_ASSIGN_OR_RETURN(std::string s, to_json(input, o));
  return Value::string(std::move(s));
}

// select/reject/selectattr/rejectattr: keep items whose (attribute's) test result == keep.
StatusOr<Value> filter_select(Renderer& r, const Value& input, ValueList& args, bool by_attr, bool keep) {
  ZL_ASSIGN_OR_RETURN(ValueList items, input.iterate());
  size_t next = 0;
  std::string attr;
  if (by_attr) {
    if (args.empty() || !args[0].is_string()) return invalid_argument("selectattr/rejectattr need an attribute name");
    attr = args[next++].str();
  }
  std::string test;
  if (next < args.size()) test = args[next++].to_str();
  ValueList test_args(args.begin() + static_cast<std::ptrdiff_t>(next), args.end());
  ValueList out;
  for (const Value& item : items) {
    Value subject = item;
    if (by_attr) { ZL_ASSIGN_OR_RETURN(subject, get_path(item, attr)); }
    bool result = subject.truthy();
    if (!test.empty()) { ZL_ASSIGN_OR_RETURN(result, r.apply_test(test, subject, test_args)); }
    if (result == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

StatusOr<Value> filter_map(Renderer& r, const Value& input, ValueList& args, KwArgs& kwargs) {
  ZL_ASSIGN_OR_RETURN(ValueList items, input.iterate());
  const Value* attribute = nullptr;
  const Value* def = nullptr;
  for (const auto& [k, v] : kwargs) {
    if (k == "attribute") attribute = &v;
    if (k == "default") def = &v;
  }
  ValueList out;
  for (const Value& item : items) {
    if (attribute) {
      ZL_ASSIGN_OR_RETURN(Value v, get_path(item, attribute->to_str()));
      out.push_back(v.is_undefined() && def ? *def : v);
    } else {
      if (args.empty()) return invalid_argument("map requires a filter argument");
      ValueList rest(args.begin() + 1, args.end());
      ZL_ASSIGN_OR_RETURN(Value v, r.apply_filter(args[0].to_str(), item, rest, {}));
      out.push_back(std::move(v));
    }
  }
  return Value::list(std::move(out));
}

// Sort key: the (attribute's) value, lowercased strings unless case_sensitive.
StatusOr<Value> sort_key(const Value& item, const std::string& attr, bool case_sensitive) {
  Value v = item;
  if (!attr.empty()) { ZL_ASSIGN_OR_RETURN(v, get_path(item, attr)); }
  if (!case_sensitive && v.is_string()) return Value::string(py_lower(v.str()));
  return v;
}

StatusOr<Value> filter_sort(const Value& input, const Args& a) {
  ZL_ASSIGN_OR_RETURN(ValueList items, input.iterate());
  bool reverse = a.flag(0, "reverse", false);
  bool case_sensitive = a.flag(1, "case_sensitive", false);
  const Value* attr = a.get(2, "attribute");
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& item : items) {
    ZL_ASSIGN_OR_RETURN(Value k, sort_key(item, attr ? attr->to_str() : "", case_sensitive));
    keyed.emplace_back(std::move(k), item);
  }
  Status error;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    StatusOr<int> c = values_compare(reverse ? y.first : x.first, reverse ? x.first : y.first);
    if (!c.ok()) error = c.status();
    return c.ok() && *c < 0;
  });
  ZL_RETURN_IF_ERROR(error);
  ValueList out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return Value::list(std::move(out));
}

StatusOr<Value> filter_unique(const Value& input, const Args& a) {
  ZL_ASSIGN_OR_RETURN(ValueList items, input.iterate());
  bool case_sensitive = a.flag(0, "case_sensitive", false);
  const Value* attr = a.get(1, "attribute");
  ValueList out, seen;
  for (const Value& item : items) {
    ZL_ASSIGN_OR_RETURN(Value k, sort_key(item, attr ? attr->to_str() : "", case_sensitive));
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return values_equal(s, k); })) continue;
    seen.push_back(k);
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

StatusOr<Value> filter_indent(const Renderer& r, const Value& input, const Args& a) {
  const Value* width = a.get(0, "width");
  std::string s = input.to_str();
  // Every line may get the pad: bound the output before building it.
  const int64_t pad_size = width && width->is_string() ? static_cast<int64_t>(width->str().size())
                                                       : width ? std::max<int64_t>(0, width->as_int()) : 4;
  const auto lines = static_cast<uint64_t>(std::count(s.begin(), s.end(), '\n')) + 1;
  // Lines are bounded by the input, so only a pad past the limit can overflow.
  const bool pad_fits = static_cast<uint64_t>(pad_size) <= r.env().limits.max_output_bytes;
  ZL_RETURN_IF_ERROR(r.check_size(pad_fits ? s.size() + lines * static_cast<uint64_t>(pad_size) : SIZE_MAX).with_prefix("indent"));
  std::string pad = width && width->is_string() ? width->str() : std::string(static_cast<size_t>(pad_size), ' ');
  bool first = a.flag(1, "first", false), blank = a.flag(2, "blank", false);
  std::string out;
  size_t start = 0;
  bool is_first = true;
  while (start <= s.size()) {
    size_t nl = s.find('\n', start);
    std::string line = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    bool indent_line = is_first ? first : (blank || !py_strip(line, nullptr, true, true).empty());
    if (!is_first) out += '\n';
    if (indent_line) out += pad;
    out += line;
    is_first = false;
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return Value::string(std::move(out));
}

StatusOr<Value> filter_number(const Value& input, const Args& a, bool to_int) {
  const Value* def = a.get(0, "default");
  Value fallback = def ? *def : (to_int ? Value::integer(0) : Value::number(0.0));
  if (input.is_number()) return to_int ? Value::integer(input.as_int()) : Value::number(input.as_float());
  if (!input.is_string()) return fallback;
  std::string s = py_strip(input.str(), nullptr, true, true);
  try {
    size_t used = 0;
    if (to_int) {
      int64_t i = std::stoll(s, &used, 10);
      if (used == s.size()) return Value::integer(i);
    }
    double f = std::stod(s, &used);
    if (used == s.size()) return to_int ? Value::integer(static_cast<int64_t>(f)) : Value::number(f);
  } catch (const std::exception&) {
  }
  return fallback;
}

StatusOr<Value> filter_round(const Value& input, const Args& a) {
  if (!input.is_number()) return invalid_argument("round needs a number");
  const Value* precision = a.get(0, "precision");
  const Value* method = a.get(1, "method");
  const int64_t digits = precision ? precision->as_int() : 0;
  double scale = std::pow(10.0, static_cast<double>(std::clamp<int64_t>(digits, -400, 400)));
  double x = input.as_float() * scale;
  std::string m = method ? method->to_str() : "common";
  if (m == "common" && digits >= 0 && digits <= 340 && std::isfinite(input.as_float())) {
    // Python's round: the decimal nearest the double's exact value, ties to
    // even (2.675 is 2.67499.. so 2.67), which printf computes exactly.
    char text[720];  // sign, 309 integer digits, point, 340 decimals
    std::snprintf(text, sizeof(text), "%.*f", static_cast<int>(digits), input.as_float());
    return Value::number(std::strtod(text, nullptr));
  }
  double r = m == "ceil" ? std::ceil(x) : m == "floor" ? std::floor(x) : std::nearbyint(x);
  const double rounded = r / scale;
  // More digits than a double holds (10**p overflows): the number itself, as
  // Python gives; fewer than none (10**p underflows): 0.
  if (!std::isfinite(rounded) && std::isfinite(input.as_float())) return Value::number(digits > 0 ? input.as_float() : 0.0);
  return Value::number(rounded);
}

StatusOr<Value> filter_min_max(const Value& input, const Args& a, bool want_max) {
  ZL_ASSIGN_OR_RETURN(ValueList items, input.iterate());
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  bool case_sensitive = a.flag(0, "case_sensitive", false);
  const Value* attr = a.get(1, "attribute");
  size_t best = 0;
  ZL_ASSIGN_OR_RETURN(Value best_key, sort_key(items[0], attr ? attr->to_str() : "", case_sensitive));
  for (size_t i = 1; i < items.size(); ++i) {
    ZL_ASSIGN_OR_RETURN(Value k, sort_key(items[i], attr ? attr->to_str() : "", case_sensitive));
    ZL_ASSIGN_OR_RETURN(int c, values_compare(k, best_key));
    if (want_max ? c > 0 : c < 0) {
      best = i;
      best_key = k;
    }
  }
  return items[best];
}

StatusOr<Value> filter_misc(Renderer& r, const std::string& name, const Value& input, const Args& a);

}  // namespace

StatusOr<Value> run_filter(Renderer& r, const std::string& name, Value input, ValueList& args, KwArgs& kwargs) {
  Args a{args, kwargs};
  if (name == "tojson") return filter_tojson(input, a, r.env().limits.max_output_bytes);
  if (name == "length" || name == "count") {
    ZL_ASSIGN_OR_RETURN(int64_t n, input.length());
    return Value::integer(n);
  }
  if (name == "safe" || name == "string") return input.is_string() ? input : Value::string(input.to_str());
  if (name == "trim") {
    const Value* chars = a.get(0, "chars");
    return Value::string(py_strip(input.to_str(), chars && chars->is_string() ? &chars->str() : nullptr, true, true));
  }
  if (name == "lower") return Value::string(py_lower(input.to_str()));
  if (name == "upper") return Value::string(py_upper(input.to_str()));
  if (name == "capitalize") return Value::string(py_capitalize(input.to_str()));
  if (name == "title") return Value::string(py_title(input.to_str()));
  if (name == "default" || name == "d") {
    const Value* def = a.get(0, "default_value");
    bool boolean = a.flag(1, "boolean", false);
    if (input.is_undefined() || (boolean && !input.truthy())) return def ? *def : Value::string("");
    return input;
  }
  if (name == "list") {
    ZL_ASSIGN_OR_RETURN(ValueList items, input.iterate());
    return Value::list(std::move(items));
  }
  if (name == "items") {
    if (input.is_undefined()) return Value::list();
    if (!input.is_dict()) return invalid_argument("Can only get item pairs from a mapping.");
    ValueList out;
    for (const auto& [k, v] : input.entries().items) out.push_back(Value::list({Value::string(k), v}));
    return Value::list(std::move(out));
  }
  if (name == "join") {
    ZL_ASSIGN_OR_RETURN(ValueList items, input.iterate());
    const Value* sep = a.get(0, "d");
    const Value* attr = a.get(1, "attribute");
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0 && sep) out += sep->to_str();
      Value v = items[i];
      if (attr) { ZL_ASSIGN_OR_RETURN(v, get_path(v, attr->to_str())); }
      out += v.to_str();
      ZL_RETURN_IF_ERROR(r.check_size(out.size()));
    }
    return Value::string(std::move(out));
  }
  if (name == "selectattr" || name == "rejectattr") return filter_select(r, input, args, true, name == "selectattr");
  if (name == "select" || name == "reject") return filter_select(r, input, args, false, name == "select");
  if (name == "map") return filter_map(r, input, args, kwargs);
  if (name == "unique") return filter_unique(input, a);
  if (name == "sort") return filter_sort(input, a);
  if (name == "replace") {
    const Value* from = a.get(0, "old");
    const Value* to = a.get(1, "new");
    const Value* count = a.get(2, "count");
    if (!from || !to) return invalid_argument("replace needs two arguments");
    std::string out = py_replace(input.to_str(), from->to_str(), to->to_str(), count && count->is_integer() ? count->as_int() : -1);
    ZL_RETURN_IF_ERROR(r.check_size(out.size()));
    return Value::string(std::move(out));
  }
  if (name == "int" || name == "float") return filter_number(input, a, name == "int");
  if (name == "round") return filter_round(input, a);
  if (name == "indent") return filter_indent(r, input, a);
  if (name == "min" || name == "max") return filter_min_max(input, a, name == "max");
  return filter_misc(r, name, input, a);
}

namespace {

StatusOr<Value> filter_misc(Renderer& r, const std::string& name, const Value& input, const Args& a) {
  if (name == "first" || name == "last") {
    ZL_ASSIGN_OR_RETURN(ValueList items, input.iterate());
    if (items.empty()) return Value::undefined(str_cat("No ", name, " item, sequence was empty."));
    return name == "first" ? items.front() : items.back();
  }
  if (name == "abs") {
    if (!input.is_number()) return invalid_argument("bad operand type for abs(): '", input.type_name(), "'");
    return input.kind() == ValueKind::kFloat ? Value::number(std::fabs(input.as_float())) : Value::integer(std::llabs(input.as_int()));
  }
  if (name == "reverse") {
    if (input.is_string()) {
      std::vector<std::string_view> chars = utf8_chars(input.str());
      std::string out;
      for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
      return Value::string(std::move(out));
    }
    ZL_ASSIGN_OR_RETURN(ValueList items, input.iterate());
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "dictsort") {
    if (!input.is_dict()) return invalid_argument("You can only sort by either \"key\" or \"value\" of a dict");
    ValueList pairs;
    for (const auto& [k, v] : input.entries().items) pairs.push_back(Value::list({Value::string(k), v}));
    const Value* by = a.get(1, "by");
    ValueList sort_args{Value::boolean(a.flag(3, "reverse", false)), Value::boolean(a.flag(0, "case_sensitive", false)),
                        Value::string(by && by->to_str() == "value" ? "1" : "0")};
    KwArgs none;
    return filter_sort(Value::list(std::move(pairs)), Args{sort_args, none});
  }
  if (name == "wordcount") {
    int64_t n = 0;
    bool in_word = false;
    for (unsigned char c : input.to_str()) {
      bool w = std::isalnum(c) || c == '_' || c >= 0x80;
      if (w && !in_word) ++n;
      in_word = w;
    }
    return Value::integer(n);
  }
  if (name == "center") {
    const Value* width = a.get(0, "width");
    std::string s = input.to_str();
    int64_t len = static_cast<int64_t>(utf8_chars(s).size());
    int64_t w = width ? width->as_int() : 80;
    if (w <= len) return Value::string(s);
    ZL_RETURN_IF_ERROR(r.check_size(s.size() + static_cast<uint64_t>(w - len)).with_prefix("center"));
    int64_t total = w - len, left = total / 2 + (total & w & 1);
    return Value::string(std::string(left, ' ') + s + std::string(total - left, ' '));
  }
  if (name == "batch") {
    const Value* size = a.get(0, "linecount");
    const Value* fill = a.get(1, "fill_with");
    if (!size || !size->is_integer() || size->as_int() <= 0) return invalid_argument("batch needs a positive size");
    ZL_ASSIGN_OR_RETURN(ValueList items, input.iterate());
    // Filling pads the last batch to the size: what is built counts as loop
    // iterations, so that batch(10**18, 'x') meets the render's limit.
    const auto n = static_cast<uint64_t>(size->as_int());
    uint64_t built = items.size();
    if (fill && items.size() % n != 0) built += n - items.size() % n;
    ZL_RETURN_IF_ERROR(r.count_iterations(static_cast<int64_t>(std::min<uint64_t>(built, INT64_MAX))));
    ValueList out;
    for (uint64_t i = 0; i < items.size(); i += n) {
      const uint64_t end = std::min<uint64_t>(items.size(), i + n);
      ValueList chunk(items.begin() + static_cast<std::ptrdiff_t>(i), items.begin() + static_cast<std::ptrdiff_t>(end));
      while (fill && chunk.size() < n) chunk.push_back(*fill);
      out.push_back(Value::list(std::move(chunk)));
    }
    return Value::list(std::move(out));
  }
  if (name == "sum") {
    ZL_ASSIGN_OR_RETURN(ValueList items, input.iterate());
    const Value* attr = a.get(0, "attribute");
    const Value* start = a.get(1, "start");
    Value total = start ? *start : Value::integer(0);
    for (const Value& item : items) {
      Value v = item;
      if (attr) { ZL_ASSIGN_OR_RETURN(v, get_path(item, attr->to_str())); }
      if (!v.is_number() || !total.is_number()) return invalid_argument("sum needs numbers");
      total = total.kind() == ValueKind::kFloat || v.kind() == ValueKind::kFloat ? Value::number(total.as_float() + v.as_float())
                                                                                 : Value::integer(total.as_int() + v.as_int());
    }
    return total;
  }
  if (name == "attr") {
    const Value* attr = a.get(0, "name");
    return attr ? get_attribute(input, attr->to_str()) : invalid_argument("attr needs a name");
  }
  if (name == "escape" || name == "e" || name == "forceescape") {
    std::string out;
    for (char c : input.to_str()) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&#34;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
      }
    }
    return Value::string(std::move(out));
  }
  return invalid_argument("No filter named '", name, "'.");
}

}  // namespace

bool is_known_filter(const std::string& name) {
  static const char* const kFilters[] = {
      "tojson", "length", "count", "safe", "string", "trim", "lower", "upper", "capitalize", "title", "default", "d",
      "list", "items", "join", "selectattr", "rejectattr", "select", "reject", "map", "unique", "sort", "replace",
      "int", "float", "round", "indent", "min", "max", "first", "last", "abs", "reverse", "dictsort", "wordcount",
      "center", "batch", "sum", "attr", "escape", "e", "forceescape"};
  return std::find(std::begin(kFilters), std::end(kFilters), name) != std::end(kFilters);
}

StatusOr<bool> run_test(Renderer& r, const std::string& name, const Value& v, const ValueList& args) {
  auto arg = [&]() -> StatusOr<Value> {
    if (args.empty()) return invalid_argument("test '", name, "' needs an argument");
    return args[0];
  };
  ValueKind k = v.kind();
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return k == ValueKind::kInt;
  if (name == "float") return k == ValueKind::kFloat;
  if (name == "boolean") return k == ValueKind::kBool;
  if (name == "true") return k == ValueKind::kBool && v.as_bool();
  if (name == "false") return k == ValueKind::kBool && !v.as_bool();
  if (name == "mapping") return v.is_dict();
  if (name == "iterable") return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
  if (name == "sequence") return v.is_string() || v.is_list() || v.is_dict();
  if (name == "callable") return k == ValueKind::kCallable;
  if (name == "even" || name == "odd") {
    if (!v.is_integer()) return invalid_argument("test '", name, "' needs an integer");
    return (v.as_int() % 2 == 0) == (name == "even");
  }
  if (name == "divisibleby") {
    ZL_ASSIGN_OR_RETURN(Value d, arg());
    if (!v.is_integer() || !d.is_integer() || d.as_int() == 0) return invalid_argument("divisibleby needs nonzero integers");
    return v.as_int() % d.as_int() == 0;
  }
  if (name == "lower" || name == "upper") {
    if (!v.is_string()) return false;
    ValueList none;
    KwArgs kw;
    ZL_ASSIGN_OR_RETURN(Value b, call_string_method(r, v.str(), "is" + name, none, kw));
    return b.as_bool();
  }
  if (name == "in") {
    ZL_ASSIGN_OR_RETURN(Value seq, arg());
    if (seq.is_string()) {
      if (!v.is_string()) return invalid_argument("'in <string>' requires string as left operand, not ", v.type_name());
      return seq.str().find(v.str()) != std::string::npos;
    }
    if (seq.is_dict()) return v.is_string() && seq.entries().find(v.str()) != nullptr;
    if (seq.is_none() || seq.is_number()) return invalid_argument("argument of type '", seq.type_name(), "' is not iterable");
    ZL_ASSIGN_OR_RETURN(ValueList items, seq.iterate());
    return std::any_of(items.begin(), items.end(), [&](const Value& x) { return values_equal(x, v); });
  }
  if (name == "sameas") {
    ZL_ASSIGN_OR_RETURN(Value o, arg());
    if (v.kind() != o.kind()) return false;
    if (v.is_list()) return &v.items() == &o.items();
    if (v.is_dict()) return &v.entries() == &o.entries();
    return values_equal(v, o) && !v.is_string();
  }
  if (name == "filter") return v.is_string() && is_known_filter(v.str());
  if (name == "test") return v.is_string() && is_known_test(v.str());
  static const std::pair<const char*, const char*> kCompare[] = {
      {"eq", "=="}, {"equalto", "=="}, {"==", "=="}, {"ne", "!="}, {"!=", "!="}, {"lt", "<"}, {"lessthan", "<"},
      {"<", "<"},   {"le", "<="},      {"<=", "<="}, {"gt", ">"},  {">", ">"},   {"greaterthan", ">"}, {"ge", ">="},
      {">=", ">="}};
  for (const auto& [test, op] : kCompare) {
    if (name != test) continue;
    ZL_ASSIGN_OR_RETURN(Value o, arg());
    std::string sop = op;
    if (sop == "==") return values_equal(v, o);
    if (sop == "!=") return !values_equal(v, o);
    ZL_ASSIGN_OR_RETURN(int c, values_compare(v, o));
    return sop == "<" ? c < 0 : sop == "<=" ? c <= 0 : sop == ">" ? c > 0 : c >= 0;
  }
  return invalid_argument("No test named '", name, "'.");
}

bool is_known_test(const std::string& name) {
  static const char* const kTests[] = {
      "defined", "undefined", "none", "string", "number", "integer", "float", "boolean", "true", "false", "mapping",
      "iterable", "sequence", "callable", "even", "odd", "divisibleby", "lower", "upper", "in", "sameas", "filter",
      "test", "eq", "equalto", "==", "ne", "!=", "lt", "lessthan", "<", "le", "<=", "gt", ">", "greaterthan", "ge", ">="};
  return std::find(std::begin(kTests), std::end(kTests), name) != std::end(kTests);
}

}  // namespace zl::jinja
