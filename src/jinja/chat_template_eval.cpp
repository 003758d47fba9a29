#include "jinja/chat_template_eval.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace zl::jinja {
namespace {

// The message jinja2 gives when an Undefined is used for more than printing.
Status undefined_error(const Value& v) {
  return invalid_argument(v.str().empty() ? "value is undefined" : v.str());
}

bool has_position(const Status& s) { return s.message().rfind("line ", 0) == 0; }

StatusOr<Value> arith_int(const std::string& op, int64_t a, int64_t b) {
  int64_t r = 0;
  if (op == "+" && !__builtin_add_overflow(a, b, &r)) return Value::integer(r);
  if (op == "-" && !__builtin_sub_overflow(a, b, &r)) return Value::integer(r);
  if (op == "*" && !__builtin_mul_overflow(a, b, &r)) return Value::integer(r);
  if (op == "//" || op == "%") {
    if (b == 0) return invalid_argument("integer division or modulo by zero");
    if (a == std::numeric_limits<int64_t>::min() && b == -1) return out_of_range("integer overflow");
    int64_t q = a / b, m = a % b;
    if (m != 0 && ((m < 0) != (b < 0))) {
      --q;
      m += b;
    }
    return Value::integer(op == "//" ? q : m);
  }
  if (op == "**" && b >= 0) {
    int64_t result = 1;
    for (int64_t i = 0; i < b; ++i) {
      if (__builtin_mul_overflow(result, a, &result)) return out_of_range("integer overflow in **");
      if (result == 0 || result == 1) break;
    }
    return Value::integer(result);
  }
  if (op == "**") return Value::number(std::pow(static_cast<double>(a), static_cast<double>(b)));
  return out_of_range("integer overflow in ", op);
}

StatusOr<Value> arith_float(const std::string& op, double a, double b) {
  if (op == "+") return Value::number(a + b);
  if (op == "-") return Value::number(a - b);
  if (op == "*") return Value::number(a * b);
  if (op == "**") return Value::number(std::pow(a, b));
  if (b == 0) return invalid_argument("float division by zero");
  if (op == "/") return Value::number(a / b);
  double q = std::floor(a / b);
  return Value::number(op == "//" ? q : a - q * b);
}

// printf-style `"%s" % x` with the conversions templates use (%s %d %i %r %%).
StatusOr<Value> percent_format(const std::string& fmt, const Value& arg) {
  ValueList args = arg.is_list() ? arg.items() : ValueList{arg};
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) return invalid_argument("incomplete format");
    char c = fmt[i];
    if (c == '%') {
      out += '%';
      continue;
    }
    if (next >= args.size()) return invalid_argument("not enough arguments for format string");
    const Value& v = args[next++];
    if (c == 's') out += v.to_str();
    else if (c == 'r') out += v.repr();
    else if ((c == 'd' || c == 'i') && v.is_number()) out += std::to_string(v.as_int());
    else return invalid_argument("unsupported format character '", std::string(1, c), "'");
  }
  if (next < args.size()) return invalid_argument("not all arguments converted during string formatting");
  return Value::string(std::move(out));
}

}  // namespace

const Value* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent.get()) {
    if (const Value* v = s->vars.find(name)) return v;
  }
  return nullptr;
}

Renderer::Renderer(const Program& program, const RenderEnv& env) : program_(program), env_(env) {}

StatusOr<std::string> Renderer::render(const Value& context) {
  auto globals = std::make_shared<Scope>();
  add_globals(*globals);
  auto root = std::make_shared<Scope>();
  root->parent = globals;
  if (context.is_dict()) root->vars = context.entries();
  scope_ = root;
  std::string out;
  out_ = &out;
  Status s = exec_body(program_.body);
  if (!s.ok()) return s;
  return out;
}

Status Renderer::at(int line, int col, const Status& s) const {
  if (s.ok() || has_position(s)) return s;
  return Status(s.code(), str_cat("line ", line, ", column ", col, ": ", s.message()));
}

Status Renderer::check_size(size_t size) const {
  if (size > env_.limits.max_output_bytes) {
    return resource_exhausted("output larger than the limit of ", env_.limits.max_output_bytes, " bytes");
  }
  return ok_status();
}

Status Renderer::count_iterations(int64_t n) {
  // Saturating: a builtin may ask for INT64_MAX at once.
  iterations_ = n > env_.limits.max_loop_iterations - iterations_ ? env_.limits.max_loop_iterations + 1 : iterations_ + n;
  if (iterations_ > env_.limits.max_loop_iterations) {
    return resource_exhausted("more than ", env_.limits.max_loop_iterations, " loop iterations");
  }
  return ok_status();
}

Status Renderer::emit(const std::string& text) {
  ZL_RETURN_IF_ERROR(check_size(out_->size() + text.size()));
  out_->append(text);
  return ok_status();
}

Value Renderer::lookup(const std::string& name) const {
  const Value* v = scope_->find(name);
  return v ? *v : Value::undefined("'" + name + "' is undefined");
}

Status Renderer::exec_body(const NodeList& body) {
  for (const NodePtr& node : body) {
    ZL_RETURN_IF_ERROR(exec(*node));
    if (flow_ != Flow::kNormal) break;
  }
  return ok_status();
}

Status Renderer::exec(const Node& node) {
  struct Depth {
    explicit Depth(int& d) : d(d) { ++d; }
    ~Depth() { --d; }
    int& d;
  } depth(depth_);
  if (depth_ > env_.limits.max_eval_depth) return at(node.line, node.col, resource_exhausted("template nested or recursing too deeply"));
  Status s;
  switch (node.kind) {
    case NodeKind::kData: s = emit(node.text); break;
    case NodeKind::kOutput: {
      StatusOr<Value> v = eval(*node.expr);
      s = v.ok() ? emit(v->to_str()) : v.status();
      break;
    }
    case NodeKind::kIf: {
      StatusOr<Value> cond = eval(*node.expr);
      if (!cond.ok()) return cond.status();
      s = exec_body(cond->truthy() ? node.body : node.else_body);
      break;
    }
    case NodeKind::kFor: s = exec_for(node); break;
    case NodeKind::kSet:
    case NodeKind::kSetBlock: s = exec_set(node); break;
    case NodeKind::kMacro: s = exec_macro(node); break;
    case NodeKind::kCallBlock: s = exec_call_block(node); break;
    case NodeKind::kBreak: flow_ = Flow::kBreak; break;
    case NodeKind::kContinue: flow_ = Flow::kContinue; break;
    case NodeKind::kGeneration: s = exec_body(node.body); break;
  }
  return at(node.line, node.col, s);
}

Status Renderer::assign(const std::vector<std::string>& targets, const Value& value) {
  if (targets.size() == 1) {
    scope_->set(targets[0], value);
    return ok_status();
  }
  ZL_ASSIGN_OR_RETURN(ValueList items, value.iterate());
  if (items.size() != targets.size()) {
    return invalid_argument(items.size() < targets.size() ? "not enough" : "too many", " values to unpack (expected ",
                            targets.size(), ", got ", items.size(), ")");
  }
  for (size_t i = 0; i < targets.size(); ++i) scope_->set(targets[i], items[i]);
  return ok_status();
}

Status Renderer::exec_for(const Node& node) {
  ZL_ASSIGN_OR_RETURN(Value iterable, eval(*node.expr));
  if (iterable.is_none() || iterable.is_number() || iterable.kind() == ValueKind::kCallable) {
    return invalid_argument("'", iterable.type_name(), "' object is not iterable");
  }
  ZL_ASSIGN_OR_RETURN(ValueList items, iterable.iterate());
  std::shared_ptr<Scope> outer = scope_;
  struct Restore {
    Renderer* r;
    std::shared_ptr<Scope> s;
    ~Restore() { r->scope_ = s; }
  } restore{this, outer};
  if (node.filter) {
    ValueList kept;
    for (const Value& item : items) {
      ZL_RETURN_IF_ERROR(count_iterations(1));
      scope_ = std::make_shared<Scope>();
      scope_->parent = outer;
      ZL_RETURN_IF_ERROR(assign(node.targets, item));
      ZL_ASSIGN_OR_RETURN(Value keep, eval(*node.filter));
      if (keep.truthy()) kept.push_back(item);
    }
    items = std::move(kept);
  }
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    ZL_RETURN_IF_ERROR(count_iterations(1));
    scope_ = std::make_shared<Scope>();
    scope_->parent = outer;
    ValueDict loop;
    loop.items = {{"index", Value::integer(i + 1)},     {"index0", Value::integer(i)},
                  {"revindex", Value::integer(n - i)},  {"revindex0", Value::integer(n - i - 1)},
                  {"first", Value::boolean(i == 0)},    {"last", Value::boolean(i == n - 1)},
                  {"length", Value::integer(n)},        {"depth", Value::integer(1)},
                  {"depth0", Value::integer(0)}};
    if (i > 0) loop.items.emplace_back("previtem", items[i - 1]);
    if (i + 1 < n) loop.items.emplace_back("nextitem", items[i + 1]);
    loop.items.emplace_back("cycle", Value::callable("cycle", [i](Renderer&, ValueList& args, KwArgs&) -> StatusOr<Value> {
      if (args.empty()) return invalid_argument("no items for cycling given");
      return args[static_cast<size_t>(i) % args.size()];
    }));
    scope_->set("loop", Value::dict(std::move(loop)));
    ZL_RETURN_IF_ERROR(assign(node.targets, items[i]));
    ZL_RETURN_IF_ERROR(exec_body(node.body));
    Flow flow = flow_;
    flow_ = Flow::kNormal;
    if (flow == Flow::kBreak) break;
  }
  if (n == 0) {
    scope_ = outer;
    ZL_RETURN_IF_ERROR(exec_body(node.else_body));
  }
  return ok_status();
}

Status Renderer::exec_set(const Node& node) {
  Value value;
  if (node.kind == NodeKind::kSetBlock) {
    ZL_ASSIGN_OR_RETURN(std::string text, capture(node.body, scope_));
    value = Value::string(std::move(text));
  } else {
    ZL_ASSIGN_OR_RETURN(value, eval(*node.expr));
  }
  if (node.text.empty()) return assign(node.targets, value);
  Value target = lookup(node.targets[0]);
  if (target.kind() != ValueKind::kNamespace) {
    return invalid_argument("cannot assign attribute on non-namespace object");
  }
  if (!node.text.empty() && node.text[0] == '_') {
    return invalid_argument("Chat templates cannot store underscore-prefixed attributes on a namespace, but got '",
                            node.text, "'. Please rename the attribute.");
  }
  target.entries().set(node.text, std::move(value));
  return ok_status();
}

StatusOr<std::string> Renderer::capture(const NodeList& body, std::shared_ptr<Scope> scope) {
  std::string buffer;
  std::string* saved_out = out_;
  std::shared_ptr<Scope> saved_scope = scope_;
  out_ = &buffer;
  scope_ = std::move(scope);
  Status s = exec_body(body);
  out_ = saved_out;
  scope_ = saved_scope;
  flow_ = Flow::kNormal;
  if (!s.ok()) return s;
  return buffer;
}

Status Renderer::exec_macro(const Node& node) {
  // The defining scope holds the macro: holding the scope from the macro
  // would be a cycle that outlives the render.
  std::weak_ptr<Scope> defining_weak = scope_;
  const Node* macro = &node;
  Value fn = Value::callable(node.text, [this, macro, defining_weak](Renderer&, ValueList& args, KwArgs& kwargs) -> StatusOr<Value> {
    if (call_depth_ >= env_.limits.max_call_depth) {
      return resource_exhausted("macro calls nested deeper than ", env_.limits.max_call_depth);
    }
    std::shared_ptr<Scope> defining = defining_weak.lock();
    if (!defining) return invalid_argument("macro '", macro->text, "' called after the block that defined it ended");
    if (args.size() > macro->params.size()) {
      return invalid_argument("macro '", macro->text, "' takes not more than ", macro->params.size(), " argument(s)");
    }
    auto scope = std::make_shared<Scope>();
    scope->parent = defining;
    std::shared_ptr<Scope> saved = scope_;
    scope_ = scope;
    for (size_t i = 0; i < macro->params.size(); ++i) {
      const auto& [name, def] = macro->params[i];
      Value v;
      bool found = i < args.size();
      if (found) v = args[i];
      for (auto& [k, kv] : kwargs) {
        if (k == name) {
          v = kv;
          found = true;
        }
      }
      if (!found && def) {
        StatusOr<Value> d = eval(*def);
        if (!d.ok()) {
          scope_ = saved;
          return d.status();
        }
        v = *d;
      } else if (!found) {
        v = Value::undefined("parameter '" + name + "' was not provided");
      }
      scope->set(name, v);
    }
    for (auto& [k, kv] : kwargs) {
      if (k == "caller") scope->set("caller", kv);
    }
    scope_ = saved;
    ++call_depth_;
    StatusOr<std::string> text = capture(macro->body, scope);
    --call_depth_;
    if (!text.ok()) return text.status();
    return Value::string(std::move(*text));
  });
  scope_->set(node.text, fn);
  return ok_status();
}

Status Renderer::exec_call_block(const Node& node) {
  std::shared_ptr<Scope> defining = scope_;
  const Node* block = &node;
  Value caller = Value::callable("caller", [this, block, defining](Renderer&, ValueList& args, KwArgs&) -> StatusOr<Value> {
    auto scope = std::make_shared<Scope>();
    scope->parent = defining;
    for (size_t i = 0; i < block->params.size(); ++i) {
      scope->set(block->params[i].first, i < args.size() ? args[i] : Value::undefined());
    }
    ZL_ASSIGN_OR_RETURN(std::string text, capture(block->body, scope));
    return Value::string(std::move(text));
  });
  const Expr& call = *node.expr;
  ZL_ASSIGN_OR_RETURN(Value fn, eval(*call.args[0]));
  ValueList args;
  KwArgs kwargs;
  ZL_RETURN_IF_ERROR(eval_args(call, 1, args, kwargs));
  kwargs.emplace_back("caller", caller);
  ZL_ASSIGN_OR_RETURN(Value result, this->call(fn, std::move(args), std::move(kwargs)));
  return emit(result.to_str());
}

StatusOr<Value> Renderer::call(const Value& fn, ValueList args, KwArgs kwargs) {
  if (fn.is_undefined()) return undefined_error(fn);
  if (fn.kind() != ValueKind::kCallable) return invalid_argument("'", fn.type_name(), "' object is not callable");
  return fn.fn().fn(*this, args, kwargs);
}

StatusOr<Value> Renderer::apply_filter(const std::string& name, Value input, ValueList args, KwArgs kwargs) {
  return run_filter(*this, name, std::move(input), args, kwargs);
}

StatusOr<bool> Renderer::apply_test(const std::string& name, const Value& v, const ValueList& args) {
  return run_test(*this, name, v, args);
}

StatusOr<Value> Renderer::eval(const Expr& e) {
  ++depth_;
  StatusOr<Value> v = depth_ > env_.limits.max_eval_depth ? StatusOr<Value>(resource_exhausted("template nested or recursing too deeply"))
                                                          : eval_inner(e);
  --depth_;
  if (!v.ok()) return at(e.line, e.col, v.status());
  return v;
}

Status Renderer::eval_args(const Expr& e, size_t first, ValueList& args, KwArgs& kwargs) {
  for (size_t i = first; i < e.args.size(); ++i) {
    ZL_ASSIGN_OR_RETURN(Value v, eval(*e.args[i]));
    args.push_back(std::move(v));
  }
  for (const auto& [k, ke] : e.kwargs) {
    ZL_ASSIGN_OR_RETURN(Value v, eval(*ke));
    kwargs.emplace_back(k, std::move(v));
  }
  return ok_status();
}

StatusOr<Value> Renderer::eval_inner(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kLiteral: return e.literal;
    case ExprKind::kName: return lookup(e.name);
    case ExprKind::kList:
    case ExprKind::kTuple: {
      ValueList items;
      for (const ExprPtr& a : e.args) {
        ZL_ASSIGN_OR_RETURN(Value v, eval(*a));
        items.push_back(std::move(v));
      }
      return Value::list(std::move(items));
    }
    case ExprKind::kDict: {
      ValueDict d;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        ZL_ASSIGN_OR_RETURN(Value k, eval(*e.args[i]));
        ZL_ASSIGN_OR_RETURN(Value v, eval(*e.args[i + 1]));
        if (!k.is_string()) return unimplemented("dict keys must be strings in chat templates");
        d.set(k.str(), std::move(v));
      }
      return Value::dict(std::move(d));
    }
    case ExprKind::kAttr: {
      ZL_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0]));
      return get_attribute(obj, e.name);
    }
    case ExprKind::kItem: {
      ZL_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0]));
      ZL_ASSIGN_OR_RETURN(Value key, eval(*e.args[1]));
      return get_item(obj, key);
    }
    case ExprKind::kSlice: return eval_slice(e);
    case ExprKind::kCall: return eval_call(e);
    case ExprKind::kFilter: {
      ZL_ASSIGN_OR_RETURN(Value input, eval(*e.args[0]));
      ValueList args;
      KwArgs kwargs;
      ZL_RETURN_IF_ERROR(eval_args(e, 1, args, kwargs));
      return run_filter(*this, e.name, std::move(input), args, kwargs);
    }
    case ExprKind::kTest: {
      ZL_ASSIGN_OR_RETURN(Value input, eval(*e.args[0]));
      ValueList args;
      KwArgs kwargs;
      ZL_RETURN_IF_ERROR(eval_args(e, 1, args, kwargs));
      ZL_ASSIGN_OR_RETURN(bool result, run_test(*this, e.name, input, args));
      return Value::boolean(result != e.negated);
    }
    case ExprKind::kUnary: {
      ZL_ASSIGN_OR_RETURN(Value v, eval(*e.args[0]));
      if (e.name == "not") return Value::boolean(!v.truthy());
      if (v.is_undefined()) return undefined_error(v);
      if (!v.is_number()) return invalid_argument("bad operand type for unary ", e.name, ": '", v.type_name(), "'");
      if (e.name == "+") return v.kind() == ValueKind::kBool ? Value::integer(v.as_int()) : v;
      if (v.kind() == ValueKind::kFloat) return Value::number(-v.as_float());
      if (v.as_int() == std::numeric_limits<int64_t>::min()) return out_of_range("integer overflow");
      return Value::integer(-v.as_int());
    }
    case ExprKind::kBinary: return eval_binary(e);
    case ExprKind::kCompare: return eval_compare(e);
    case ExprKind::kAnd:
    case ExprKind::kOr: {
      // Python returns the deciding operand, not a bool.
      ZL_ASSIGN_OR_RETURN(Value left, eval(*e.args[0]));
      if (left.truthy() == (e.kind == ExprKind::kOr)) return left;
      return eval(*e.args[1]);
    }
    case ExprKind::kCondition: {
      ZL_ASSIGN_OR_RETURN(Value cond, eval(*e.args[1]));
      if (cond.truthy()) return eval(*e.args[0]);
      if (e.args[2]) return eval(*e.args[2]);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.line) + " evaluated to false and no else section was defined.");
    }
  }
  return internal_error("unknown expression kind");
}

StatusOr<Value> Renderer::eval_binary(const Expr& e) {
  ZL_ASSIGN_OR_RETURN(Value a, eval(*e.args[0]));
  ZL_ASSIGN_OR_RETURN(Value b, eval(*e.args[1]));
  const std::string& op = e.name;
  if (op == "~") {
    std::string s = a.to_str() + b.to_str();
    ZL_RETURN_IF_ERROR(check_size(s.size()));
    return Value::string(std::move(s));
  }
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  if (a.is_number() && b.is_number()) {
    if (op == "/") return arith_float(op, a.as_float(), b.as_float());
    if (a.kind() == ValueKind::kFloat || b.kind() == ValueKind::kFloat) return arith_float(op, a.as_float(), b.as_float());
    return arith_int(op, a.as_int(), b.as_int());
  }
  if (op == "+" && a.is_string() && b.is_string()) {
    ZL_RETURN_IF_ERROR(check_size(a.str().size() + b.str().size()));
    return Value::string(a.str() + b.str());
  }
  if (op == "+" && a.is_list() && b.is_list()) {
    ZL_RETURN_IF_ERROR(check_size(a.items().size() + b.items().size()));
    ValueList items = a.items();
    items.insert(items.end(), b.items().begin(), b.items().end());
    return Value::list(std::move(items));
  }
  if (op == "*" && (a.is_string() || a.is_list()) && b.is_integer()) std::swap(a, b);
  if (op == "*" && a.is_integer() && (b.is_string() || b.is_list())) {
    int64_t times = std::max<int64_t>(0, a.as_int());
    size_t unit = b.is_string() ? b.str().size() : b.items().size();
    if (unit > 0 && times > 0) ZL_RETURN_IF_ERROR(check_size(times > int64_t{1} << 40 ? SIZE_MAX : unit * times));
    if (b.is_string()) {
      std::string s;
      for (int64_t i = 0; i < times && unit > 0; ++i) s += b.str();
      return Value::string(std::move(s));
    }
    ValueList items;
    for (int64_t i = 0; i < times && unit > 0; ++i) items.insert(items.end(), b.items().begin(), b.items().end());
    return Value::list(std::move(items));
  }
  if (op == "%" && a.is_string()) return percent_format(a.str(), b);
  if (op == "+" && (a.is_string() || a.is_list())) {
    return invalid_argument("can only concatenate ", a.type_name(), " (not \"", b.type_name(), "\") to ", a.type_name());
  }
  return invalid_argument("unsupported operand type(s) for ", op, ": '", a.type_name(), "' and '", b.type_name(), "'");
}

StatusOr<Value> Renderer::eval_compare(const Expr& e) {
  ZL_ASSIGN_OR_RETURN(Value left, eval(*e.args[0]));
  for (size_t i = 0; i < e.ops.size(); ++i) {
    ZL_ASSIGN_OR_RETURN(Value right, eval(*e.args[i + 1]));
    const std::string& op = e.ops[i];
    bool result = false;
    if (op == "==" || op == "!=") {
      result = values_equal(left, right) == (op == "==");
    } else if (op == "in" || op == "not in") {
      ZL_ASSIGN_OR_RETURN(bool found, run_test(*this, "in", left, {right}));
      result = found == (op == "in");
    } else {
      if (left.is_undefined()) return undefined_error(left);
      if (right.is_undefined()) return undefined_error(right);
      StatusOr<int> c = values_compare(left, right);
      if (!c.ok()) {
        return invalid_argument("'", op, "' not supported between instances of '", left.type_name(), "' and '", right.type_name(), "'");
      }
      result = op == "<" ? *c < 0 : op == ">" ? *c > 0 : op == "<=" ? *c <= 0 : *c >= 0;
    }
    if (!result) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

StatusOr<Value> Renderer::eval_call(const Expr& e) {
  ZL_ASSIGN_OR_RETURN(Value fn, eval(*e.args[0]));
  ValueList args;
  KwArgs kwargs;
  ZL_RETURN_IF_ERROR(eval_args(e, 1, args, kwargs));
  return call(fn, std::move(args), std::move(kwargs));
}

StatusOr<Value> Renderer::eval_slice(const Expr& e) {
  ZL_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0]));
  std::optional<int64_t> parts[3];
  for (int i = 0; i < 3; ++i) {
    if (!e.args[i + 1]) continue;
    ZL_ASSIGN_OR_RETURN(Value v, eval(*e.args[i + 1]));
    if (v.is_none()) continue;
    if (!v.is_integer()) return invalid_argument("slice indices must be integers or None");
    parts[i] = v.as_int();
  }
  int64_t step = parts[2].value_or(1);
  if (step == 0) return invalid_argument("slice step cannot be zero");
  std::vector<std::string_view> chars;
  int64_t n = 0;
  if (obj.is_string()) {
    chars = utf8_chars(obj.str());
    n = static_cast<int64_t>(chars.size());
  } else if (obj.is_list()) {
    n = static_cast<int64_t>(obj.items().size());
  } else if (obj.is_undefined()) {
    return undefined_error(obj);
  } else {
    return invalid_argument("'", obj.type_name(), "' object is not subscriptable");
  }
  // Python's slice.indices().
  auto clamp = [&](std::optional<int64_t> v, int64_t def) {
    if (!v) return def;
    int64_t x = *v < 0 ? *v + n : *v;
    if (step > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  int64_t start = clamp(parts[0], step > 0 ? 0 : n - 1);
  int64_t stop = clamp(parts[1], step > 0 ? n : -1);
  std::string s;
  ValueList items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (obj.is_string()) s += chars[i];
    else items.push_back(obj.items()[i]);
  }
  return obj.is_string() ? Value::string(std::move(s)) : Value::list(std::move(items));
}

}  // namespace zl::jinja
