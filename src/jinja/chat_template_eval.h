// Evaluates a parsed chat template the way jinja2's ImmutableSandboxedEnvironment
// does (transformers' settings): Undefined is falsy and prints as "", but any
// attribute, item, call or arithmetic on it fails; lists and dicts cannot be
// mutated (list.append and friends are "unsafe"); for-loops and macros open
// scopes, `if` does not.
//
// Every render is bounded: output size, loop iterations, macro call depth and
// evaluation depth (so hostile templates end with an error, never a hang or
// a stack overflow). One Renderer per render call; not thread-safe, but many
// Renderers may share one Program.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "jinja/chat_template_ast.h"

namespace zl::jinja {

struct RenderLimits {
  size_t max_output_bytes = 16u << 20;      // any one rendered string
  int64_t max_loop_iterations = 1'000'000;  // all loops of one render together
  int max_call_depth = 100;                 // macro calls inside macro calls
  int max_eval_depth = 1000;                // nested statements + expressions + calls
};

struct RenderEnv {
  RenderLimits limits;
  // strftime_now() formats this UTC time (seconds since the epoch) instead of
  // the local clock; goldens and tests fix it.
  std::optional<int64_t> fixed_time;
};

struct Scope {
  Scope() { live.fetch_add(1, std::memory_order_relaxed); }
  ~Scope() { live.fetch_sub(1, std::memory_order_relaxed); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

  // Scopes alive in the process: a render that returns leaves none behind
  // (tests check it; a macro holding its own scope once leaked them all).
  static inline std::atomic<int64_t> live{0};

  ValueDict vars;
  std::shared_ptr<Scope> parent;
  // Innermost binding of `name` along the parent chain, or null.
  const Value* find(const std::string& name) const;
  void set(const std::string& name, Value value) { vars.set(name, std::move(value)); }
};

class Renderer {
 public:
  Renderer(const Program& program, const RenderEnv& env);

  // `context` is a dict value: the template's variables.
  StatusOr<std::string> render(const Value& context);

  // For builtins that call back (map, select, macros, caller).
  StatusOr<Value> call(const Value& fn, ValueList args, KwArgs kwargs);
  StatusOr<Value> apply_filter(const std::string& name, Value input, ValueList args, KwArgs kwargs);
  StatusOr<bool> apply_test(const std::string& name, const Value& v, const ValueList& args);
  // Fails when a string or list built by the template would exceed the limits.
  Status check_size(size_t size) const;
  // One more loop iteration (also used by range() and other builtins that loop).
  Status count_iterations(int64_t n);
  const RenderEnv& env() const { return env_; }

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Status exec_body(const NodeList& body);
  Status exec(const Node& node);
  Status exec_for(const Node& node);
  Status exec_set(const Node& node);
  Status exec_macro(const Node& node);
  Status exec_call_block(const Node& node);
  StatusOr<std::string> capture(const NodeList& body, std::shared_ptr<Scope> scope);
  Status emit(const std::string& text);
  Status assign(const std::vector<std::string>& targets, const Value& value);

  StatusOr<Value> eval(const Expr& e);
  StatusOr<Value> eval_inner(const Expr& e);
  StatusOr<Value> eval_binary(const Expr& e);
  StatusOr<Value> eval_compare(const Expr& e);
  StatusOr<Value> eval_call(const Expr& e);
  StatusOr<Value> eval_slice(const Expr& e);
  Status eval_args(const Expr& e, size_t first, ValueList& args, KwArgs& kwargs);
  Value lookup(const std::string& name) const;
  Status at(int line, int col, const Status& s) const;

  const Program& program_;
  RenderEnv env_;
  std::shared_ptr<Scope> scope_;
  std::string* out_ = nullptr;
  Flow flow_ = Flow::kNormal;
  int64_t iterations_ = 0;
  int depth_ = 0;
  int call_depth_ = 0;
};

// Builtins (chat_template_builtins.cpp). Attribute access, with methods bound
// as callables: `s.strip`, `d.items`, `d.get`; item access `obj[key]`.
StatusOr<Value> get_attribute(const Value& obj, const std::string& name);
StatusOr<Value> get_item(const Value& obj, const Value& key);
// Globals transformers defines: raise_exception, strftime_now, range, dict,
// namespace, plus jinja2's defaults that templates use (lipsum etc. are not).
void add_globals(Scope& scope);
StatusOr<Value> run_filter(Renderer& r, const std::string& name, Value input, ValueList& args, KwArgs& kwargs);
StatusOr<bool> run_test(Renderer& r, const std::string& name, const Value& v, const ValueList& args);
bool is_known_filter(const std::string& name);
bool is_known_test(const std::string& name);

}  // namespace zl::jinja
