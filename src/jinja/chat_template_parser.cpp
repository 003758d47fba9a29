// Recursive-descent parser following jinja2/parser.py's grammar and operator
// precedence (condexpr < or < and < not < compare < + - < ~ < * / // % < ** <
// unary < postfix/filter/test). Statements that would read other files
// (include, import, extends, from, block) are rejected with a clear error.
#include <algorithm>
#include <set>

#include "jinja/chat_template_ast.h"

namespace zl::jinja {
namespace {

// Nesting beyond this is rejected so that hostile templates cannot overflow
// the parser's (or later the evaluator's) stack.
constexpr int kMaxNesting = 200;
constexpr int kMaxExprDepth = 256;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  StatusOr<NodeList> parse_all() {
    std::string end;
    ZL_ASSIGN_OR_RETURN(NodeList body, parse_body({}, &end));
    return body;
  }

 private:
  const Token& cur() const { return tokens_[pos_]; }
  const Token& peek(size_t n = 1) const { return tokens_[std::min(pos_ + n, tokens_.size() - 1)]; }
  void advance() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool is_op(const char* op) const { return cur().kind == TokenKind::kOp && cur().text == op; }
  bool is_name(const char* name) const { return cur().kind == TokenKind::kName && cur().text == name; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    advance();
    return true;
  }
  Status error_at(const Token& t, const std::string& msg) const {
    return invalid_argument("line ", t.line, ", column ", t.col, ": ", msg);
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::kEof: return "end of template";
      case TokenKind::kBlockEnd: return "end of statement block";
      case TokenKind::kVarEnd: return "end of print statement";
      case TokenKind::kData: return "template data";
      default: return "'" + t.text + "'";
    }
  }
  Status expect_op(const char* op) {
    if (skip_op(op)) return ok_status();
    return error_at(cur(), "expected '" + std::string(op) + "', got " + describe(cur()));
  }
  StatusOr<std::string> expect_name() {
    if (cur().kind != TokenKind::kName) return error_at(cur(), "expected a name, got " + describe(cur()));
    std::string n = cur().text;
    advance();
    return n;
  }
  Status expect_block_end() {
    if (cur().kind == TokenKind::kBlockEnd) {
      advance();
      return ok_status();
    }
    return error_at(cur(), "expected end of statement block, got " + describe(cur()));
  }
  ExprPtr make(ExprKind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->col = at.col;
    return e;
  }
  NodePtr make_node(NodeKind kind, const Token& at) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->line = at.line;
    n->col = at.col;
    return n;
  }
  // Appends a child and keeps e.depth (the height of the tree under e) bounded:
  // `1+1+...+1` builds a left-deep tree that evaluation and destruction recurse over.
  Status add_arg(Expr& e, ExprPtr child) {
    if (child) e.depth = std::max(e.depth, child->depth + 1);
    e.args.push_back(std::move(child));
    if (e.depth > kMaxExprDepth) return error_at(cur(), "expression nested too deeply");
    return ok_status();
  }
  Status add_kwarg(Expr& e, std::string key, ExprPtr child) {
    e.depth = std::max(e.depth, child->depth + 1);
    e.kwargs.emplace_back(std::move(key), std::move(child));
    if (e.depth > kMaxExprDepth) return error_at(cur(), "expression nested too deeply");
    return ok_status();
  }
  struct DepthGuard {
    explicit DepthGuard(int& d) : depth(d) { ++depth; }
    ~DepthGuard() { --depth; }
    int& depth;
  };

  // Parses until a `{% name %}` with name in `ends` (left unconsumed after
  // the "{%"), or the end of the template when `ends` is empty.
  StatusOr<NodeList> parse_body(const std::set<std::string>& ends, std::string* end_found) {
    DepthGuard guard(depth_);
    if (depth_ > kMaxNesting) return error_at(cur(), "statements nested too deeply");
    NodeList body;
    while (true) {
      const Token& t = cur();
      if (t.kind == TokenKind::kEof) {
        if (ends.empty()) return body;
        std::string names;
        for (const std::string& e : ends) names += (names.empty() ? "'" : " or '") + e + "'";
        return error_at(t, "unexpected end of template, looking for " + names);
      }
      if (t.kind == TokenKind::kData) {
        NodePtr n = make_node(NodeKind::kData, t);
        n->text = t.text;
        body.push_back(std::move(n));
        advance();
      } else if (t.kind == TokenKind::kVarBegin) {
        advance();
        NodePtr n = make_node(NodeKind::kOutput, t);
        ZL_ASSIGN_OR_RETURN(n->expr, parse_tuple(true));
        if (cur().kind != TokenKind::kVarEnd) return error_at(cur(), "expected end of print statement, got " + describe(cur()));
        advance();
        body.push_back(std::move(n));
      } else if (t.kind == TokenKind::kBlockBegin) {
        advance();
        if (cur().kind == TokenKind::kName && ends.count(cur().text)) {
          *end_found = cur().text;
          advance();
          return body;
        }
        ZL_ASSIGN_OR_RETURN(NodePtr n, parse_statement());
        if (n) body.push_back(std::move(n));
      } else {
        return error_at(t, "unexpected " + describe(t));
      }
    }
  }

  StatusOr<NodePtr> parse_statement() {
    const Token& t = cur();
    if (t.kind != TokenKind::kName) return error_at(t, "tag name expected");
    const std::string& n = t.text;
    if (n == "if") return parse_if();
    if (n == "for") return parse_for();
    if (n == "set") return parse_set();
    if (n == "macro") return parse_macro();
    if (n == "call") return parse_call_block();
    if (n == "generation") {
      advance();
      NodePtr node = make_node(NodeKind::kGeneration, t);
      ZL_RETURN_IF_ERROR(expect_block_end());
      std::string end;
      ZL_ASSIGN_OR_RETURN(node->body, parse_body({"endgeneration"}, &end));
      ZL_RETURN_IF_ERROR(expect_block_end());
      return node;
    }
    if (n == "break" || n == "continue") {
      if (loop_depth_ == 0) return error_at(t, "'" + n + "' outside of a for loop");
      NodePtr node = make_node(n == "break" ? NodeKind::kBreak : NodeKind::kContinue, t);
      advance();
      ZL_RETURN_IF_ERROR(expect_block_end());
      return node;
    }
    if (n == "include" || n == "import" || n == "extends" || n == "from" || n == "block") {
      return error_at(t, "'" + n + "' is not supported: a chat template cannot load other templates");
    }
    return error_at(t, "unknown or unsupported tag '" + n + "'");
  }

  StatusOr<NodePtr> parse_if() {
    NodePtr node = make_node(NodeKind::kIf, cur());
    advance();
    ZL_ASSIGN_OR_RETURN(node->expr, parse_tuple(true));
    ZL_RETURN_IF_ERROR(expect_block_end());
    std::string end;
    ZL_ASSIGN_OR_RETURN(node->body, parse_body({"elif", "else", "endif"}, &end));
    if (end == "elif") {
      // `elif` is an `if` nested in the else branch; it shares the endif.
      --pos_;
      ZL_ASSIGN_OR_RETURN(NodePtr nested, parse_if());
      node->else_body.push_back(std::move(nested));
      return node;
    }
    if (end == "else") {
      ZL_RETURN_IF_ERROR(expect_block_end());
      ZL_ASSIGN_OR_RETURN(node->else_body, parse_body({"endif"}, &end));
    }
    ZL_RETURN_IF_ERROR(expect_block_end());
    return node;
  }

  StatusOr<std::vector<std::string>> parse_targets() {
    std::vector<std::string> targets;
    bool parens = skip_op("(");
    do {
      ZL_ASSIGN_OR_RETURN(std::string n, expect_name());
      targets.push_back(std::move(n));
    } while (skip_op(","));
    if (parens) ZL_RETURN_IF_ERROR(expect_op(")"));
    return targets;
  }

  StatusOr<NodePtr> parse_for() {
    NodePtr node = make_node(NodeKind::kFor, cur());
    advance();
    ZL_ASSIGN_OR_RETURN(node->targets, parse_targets());
    if (!skip_name("in")) return error_at(cur(), "expected 'in', got " + describe(cur()));
    ZL_ASSIGN_OR_RETURN(node->expr, parse_tuple(false));
    if (skip_name("if")) { ZL_ASSIGN_OR_RETURN(node->filter, parse_expression(true)); }
    if (is_name("recursive")) return error_at(cur(), "recursive for loops are not supported");
    ZL_RETURN_IF_ERROR(expect_block_end());
    ++loop_depth_;
    std::string end;
    auto body = parse_body({"else", "endfor"}, &end);
    --loop_depth_;
    if (!body.ok()) return body.status();
    node->body = std::move(*body);
    if (end == "else") {
      ZL_RETURN_IF_ERROR(expect_block_end());
      ZL_ASSIGN_OR_RETURN(node->else_body, parse_body({"endfor"}, &end));
    }
    ZL_RETURN_IF_ERROR(expect_block_end());
    return node;
  }

  StatusOr<NodePtr> parse_set() {
    NodePtr node = make_node(NodeKind::kSet, cur());
    advance();
    if (cur().kind == TokenKind::kName && peek().kind == TokenKind::kOp && peek().text == ".") {
      node->targets.push_back(cur().text);
      advance();
      advance();
      ZL_ASSIGN_OR_RETURN(node->text, expect_name());
    } else {
      ZL_ASSIGN_OR_RETURN(node->targets, parse_targets());
    }
    if (skip_op("=")) {
      ZL_ASSIGN_OR_RETURN(node->expr, parse_tuple(true));
      ZL_RETURN_IF_ERROR(expect_block_end());
      return node;
    }
    if (node->targets.size() != 1 || !node->text.empty()) return error_at(cur(), "expected '='");
    node->kind = NodeKind::kSetBlock;
    ZL_RETURN_IF_ERROR(expect_block_end());
    std::string end;
    ZL_ASSIGN_OR_RETURN(node->body, parse_body({"endset"}, &end));
    ZL_RETURN_IF_ERROR(expect_block_end());
    return node;
  }

  Status parse_params(std::vector<std::pair<std::string, ExprPtr>>& params) {
    ZL_RETURN_IF_ERROR(expect_op("("));
    while (!is_op(")")) {
      if (!params.empty()) ZL_RETURN_IF_ERROR(expect_op(","));
      if (is_op(")")) break;
      ZL_ASSIGN_OR_RETURN(std::string name, expect_name());
      ExprPtr def;
      if (skip_op("=")) { ZL_ASSIGN_OR_RETURN(def, parse_expression(true)); }
      params.emplace_back(std::move(name), std::move(def));
    }
    advance();
    return ok_status();
  }

  StatusOr<NodePtr> parse_macro() {
    NodePtr node = make_node(NodeKind::kMacro, cur());
    advance();
    ZL_ASSIGN_OR_RETURN(node->text, expect_name());
    ZL_RETURN_IF_ERROR(parse_params(node->params));
    ZL_RETURN_IF_ERROR(expect_block_end());
    int saved_loops = loop_depth_;
    loop_depth_ = 0;
    std::string end;
    auto body = parse_body({"endmacro"}, &end);
    loop_depth_ = saved_loops;
    if (!body.ok()) return body.status();
    node->body = std::move(*body);
    if (cur().kind == TokenKind::kName) advance();  // {% endmacro name %}
    ZL_RETURN_IF_ERROR(expect_block_end());
    return node;
  }

  StatusOr<NodePtr> parse_call_block() {
    NodePtr node = make_node(NodeKind::kCallBlock, cur());
    advance();
    if (is_op("(")) ZL_RETURN_IF_ERROR(parse_params(node->params));
    ZL_ASSIGN_OR_RETURN(node->expr, parse_expression(true));
    if (node->expr->kind != ExprKind::kCall) return error_at(cur(), "expected a call after 'call'");
    ZL_RETURN_IF_ERROR(expect_block_end());
    std::string end;
    ZL_ASSIGN_OR_RETURN(node->body, parse_body({"endcall"}, &end));
    ZL_RETURN_IF_ERROR(expect_block_end());
    return node;
  }

  // ---- expressions ----

  StatusOr<ExprPtr> parse_tuple(bool with_condexpr) {
    const Token& start = cur();
    ZL_ASSIGN_OR_RETURN(ExprPtr first, parse_expression(with_condexpr));
    if (!is_op(",")) return first;
    ExprPtr tuple = make(ExprKind::kTuple, start);
    ZL_RETURN_IF_ERROR(add_arg(*tuple, std::move(first)));
    while (skip_op(",")) {
      if (cur().kind == TokenKind::kBlockEnd || cur().kind == TokenKind::kVarEnd || is_op(")")) break;
      ZL_ASSIGN_OR_RETURN(ExprPtr e, parse_expression(with_condexpr));
      ZL_RETURN_IF_ERROR(add_arg(*tuple, std::move(e)));
    }
    return tuple;
  }

  StatusOr<ExprPtr> parse_expression(bool with_condexpr) {
    DepthGuard guard(depth_);
    if (depth_ > kMaxNesting) return error_at(cur(), "expression nested too deeply");
    if (!with_condexpr) return parse_or();
    ZL_ASSIGN_OR_RETURN(ExprPtr expr, parse_or());
    while (is_name("if")) {
      ExprPtr cond = make(ExprKind::kCondition, cur());
      advance();
      ZL_RETURN_IF_ERROR(add_arg(*cond, std::move(expr)));
      ZL_ASSIGN_OR_RETURN(ExprPtr test, parse_or());
      ZL_RETURN_IF_ERROR(add_arg(*cond, std::move(test)));
      ExprPtr otherwise;
      if (skip_name("else")) { ZL_ASSIGN_OR_RETURN(otherwise, parse_expression(true)); }
      ZL_RETURN_IF_ERROR(add_arg(*cond, std::move(otherwise)));
      expr = std::move(cond);
    }
    return expr;
  }

  StatusOr<ExprPtr> parse_or() { return parse_logical(ExprKind::kOr); }
  StatusOr<ExprPtr> parse_and() { return parse_logical(ExprKind::kAnd); }

  // `a or b or ...` over and-expressions; `a and b and ...` over not-expressions.
  StatusOr<ExprPtr> parse_logical(ExprKind kind) {
    const bool is_or = kind == ExprKind::kOr;
    ZL_ASSIGN_OR_RETURN(ExprPtr left, is_or ? parse_and() : parse_not());
    while (is_name(is_or ? "or" : "and")) {
      ExprPtr e = make(kind, cur());
      advance();
      ZL_ASSIGN_OR_RETURN(ExprPtr right, is_or ? parse_and() : parse_not());
      ZL_RETURN_IF_ERROR(add_arg(*e, std::move(left)));
      ZL_RETURN_IF_ERROR(add_arg(*e, std::move(right)));
      left = std::move(e);
    }
    return left;
  }

  StatusOr<ExprPtr> parse_not() {
    if (!is_name("not")) return parse_compare();
    DepthGuard guard(depth_);
    if (depth_ > kMaxNesting) return error_at(cur(), "expression nested too deeply");
    ExprPtr e = make(ExprKind::kUnary, cur());
    e->name = "not";
    advance();
    ZL_ASSIGN_OR_RETURN(ExprPtr operand, parse_not());
    ZL_RETURN_IF_ERROR(add_arg(*e, std::move(operand)));
    return e;
  }

  StatusOr<ExprPtr> parse_compare() {
    const Token& start = cur();
    ZL_ASSIGN_OR_RETURN(ExprPtr first, parse_binary(0));
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().kind == TokenKind::kOp &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == ">" ||
           cur().text == "<=" || cur().text == ">=")) {
        op = cur().text;
        advance();
      } else if (is_name("in")) {
        op = "in";
        advance();
      } else if (is_name("not") && peek().kind == TokenKind::kName && peek().text == "in") {
        op = "not in";
        advance();
        advance();
      } else {
        break;
      }
      if (!cmp) {
        cmp = make(ExprKind::kCompare, start);
        ZL_RETURN_IF_ERROR(add_arg(*cmp, std::move(first)));
      }
      ZL_ASSIGN_OR_RETURN(ExprPtr next, parse_binary(0));
      cmp->ops.push_back(op);
      ZL_RETURN_IF_ERROR(add_arg(*cmp, std::move(next)));
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  // Binary operator levels, loosest first: + -, ~, * / // %, **.
  StatusOr<ExprPtr> parse_binary(int level) {
    static const std::vector<std::vector<std::string>> kLevels = {{"+", "-"}, {"~"}, {"*", "/", "//", "%"}, {"**"}};
    if (level == static_cast<int>(kLevels.size())) return parse_unary(true);
    ZL_ASSIGN_OR_RETURN(ExprPtr left, parse_binary(level + 1));
    while (cur().kind == TokenKind::kOp) {
      const auto& ops = kLevels[level];
      if (std::find(ops.begin(), ops.end(), cur().text) == ops.end()) break;
      ExprPtr e = make(ExprKind::kBinary, cur());
      e->name = cur().text;
      advance();
      ZL_ASSIGN_OR_RETURN(ExprPtr right, parse_binary(level + 1));
      ZL_RETURN_IF_ERROR(add_arg(*e, std::move(left)));
      ZL_RETURN_IF_ERROR(add_arg(*e, std::move(right)));
      left = std::move(e);
    }
    return left;
  }

  StatusOr<ExprPtr> parse_unary(bool with_filter) {
    DepthGuard guard(depth_);
    if (depth_ > kMaxNesting) return error_at(cur(), "expression nested too deeply");
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      node = make(ExprKind::kUnary, cur());
      node->name = cur().text;
      advance();
      ZL_ASSIGN_OR_RETURN(ExprPtr operand, parse_unary(false));
      ZL_RETURN_IF_ERROR(add_arg(*node, std::move(operand)));
    } else {
      ZL_ASSIGN_OR_RETURN(node, parse_primary());
    }
    ZL_ASSIGN_OR_RETURN(node, parse_postfix(std::move(node)));
    if (with_filter) return parse_filter_expr(std::move(node));
    return node;
  }

  StatusOr<ExprPtr> parse_primary() {
    const Token& t = cur();
    switch (t.kind) {
      case TokenKind::kName: {
        advance();
        ExprPtr e = make(ExprKind::kLiteral, t);
        if (t.text == "true" || t.text == "True") e->literal = Value::boolean(true);
        else if (t.text == "false" || t.text == "False") e->literal = Value::boolean(false);
        else if (t.text == "none" || t.text == "None") e->literal = Value::none();
        else {
          e->kind = ExprKind::kName;
          e->name = t.text;
        }
        return e;
      }
      case TokenKind::kString: {
        ExprPtr e = make(ExprKind::kLiteral, t);
        std::string s;
        while (cur().kind == TokenKind::kString) {
          s += cur().text;
          advance();
        }
        e->literal = Value::string(std::move(s));
        return e;
      }
      case TokenKind::kInt:
      case TokenKind::kFloat: {
        ExprPtr e = make(ExprKind::kLiteral, t);
        e->literal = t.kind == TokenKind::kInt ? Value::integer(t.int_value) : Value::number(t.float_value);
        advance();
        return e;
      }
      case TokenKind::kOp:
        if (t.text == "(") return parse_paren();
        if (t.text == "[") return parse_list();
        if (t.text == "{") return parse_dict();
        break;
      default: break;
    }
    return error_at(t, "unexpected " + describe(t));
  }

  StatusOr<ExprPtr> parse_paren() {
    const Token& start = cur();
    advance();
    if (skip_op(")")) return make(ExprKind::kTuple, start);
    ZL_ASSIGN_OR_RETURN(ExprPtr e, parse_tuple(true));
    ZL_RETURN_IF_ERROR(expect_op(")"));
    return e;
  }

  StatusOr<ExprPtr> parse_list() {
    ExprPtr e = make(ExprKind::kList, cur());
    advance();
    while (!is_op("]")) {
      if (!e->args.empty()) ZL_RETURN_IF_ERROR(expect_op(","));
      if (is_op("]")) break;
      ZL_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(true));
      ZL_RETURN_IF_ERROR(add_arg(*e, std::move(item)));
    }
    advance();
    return e;
  }

  StatusOr<ExprPtr> parse_dict() {
    ExprPtr e = make(ExprKind::kDict, cur());
    advance();
    while (!is_op("}")) {
      if (!e->args.empty()) ZL_RETURN_IF_ERROR(expect_op(","));
      if (is_op("}")) break;
      ZL_ASSIGN_OR_RETURN(ExprPtr key, parse_expression(true));
      ZL_RETURN_IF_ERROR(expect_op(":"));
      ZL_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
      ZL_RETURN_IF_ERROR(add_arg(*e, std::move(key)));
      ZL_RETURN_IF_ERROR(add_arg(*e, std::move(value)));
    }
    advance();
    return e;
  }

  StatusOr<ExprPtr> parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".")) {
        const Token& dot = cur();
        advance();
        if (cur().kind == TokenKind::kName) {
          ExprPtr e = make(ExprKind::kAttr, dot);
          e->name = cur().text;
          ZL_RETURN_IF_ERROR(add_arg(*e, std::move(node)));
          node = std::move(e);
        } else if (cur().kind == TokenKind::kInt) {
          ExprPtr e = make(ExprKind::kItem, dot);
          ZL_RETURN_IF_ERROR(add_arg(*e, std::move(node)));
          e->args.push_back(make(ExprKind::kLiteral, cur()));
          e->args.back()->literal = Value::integer(cur().int_value);
          node = std::move(e);
        } else {
          return error_at(cur(), "expected an attribute name after '.'");
        }
        advance();
      } else if (is_op("[")) {
        ZL_ASSIGN_OR_RETURN(node, parse_subscript(std::move(node)));
      } else if (is_op("(")) {
        ZL_ASSIGN_OR_RETURN(node, parse_call(std::move(node)));
      } else {
        return node;
      }
    }
  }

  StatusOr<ExprPtr> parse_subscript(ExprPtr node) {
    ExprPtr e = make(ExprKind::kItem, cur());
    advance();
    ZL_RETURN_IF_ERROR(add_arg(*e, std::move(node)));
    ExprPtr parts[3];
    int part = 0;
    bool is_slice = false;
    while (!is_op("]")) {
      if (skip_op(":")) {
        is_slice = true;
        if (++part > 2) return error_at(cur(), "too many ':' in slice");
        continue;
      }
      if (parts[part]) return error_at(cur(), "expected ']' or ':', got " + describe(cur()));
      ZL_ASSIGN_OR_RETURN(parts[part], parse_expression(true));
    }
    advance();
    if (is_slice) {
      e->kind = ExprKind::kSlice;
      for (auto& p : parts) ZL_RETURN_IF_ERROR(add_arg(*e, std::move(p)));
    } else {
      if (!parts[0]) return error_at(cur(), "empty subscript");
      ZL_RETURN_IF_ERROR(add_arg(*e, std::move(parts[0])));
    }
    return e;
  }

  Status parse_args(Expr& e) {
    ZL_RETURN_IF_ERROR(expect_op("("));
    bool first = true;
    while (!is_op(")")) {
      if (!first) ZL_RETURN_IF_ERROR(expect_op(","));
      first = false;
      if (is_op(")")) break;
      if (cur().kind == TokenKind::kName && peek().kind == TokenKind::kOp && peek().text == "=") {
        std::string key = cur().text;
        advance();
        advance();
        ZL_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
        ZL_RETURN_IF_ERROR(add_kwarg(e, std::move(key), std::move(value)));
      } else {
        if (!e.kwargs.empty()) return error_at(cur(), "positional argument after keyword argument");
        ZL_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
        ZL_RETURN_IF_ERROR(add_arg(e, std::move(value)));
      }
    }
    advance();
    return ok_status();
  }

  StatusOr<ExprPtr> parse_call(ExprPtr callee) {
    ExprPtr e = make(ExprKind::kCall, cur());
    ZL_RETURN_IF_ERROR(add_arg(*e, std::move(callee)));
    ZL_RETURN_IF_ERROR(parse_args(*e));
    return e;
  }

  StatusOr<ExprPtr> parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        ExprPtr e = make(ExprKind::kFilter, cur());
        advance();
        ZL_ASSIGN_OR_RETURN(e->name, expect_name());
        ZL_RETURN_IF_ERROR(add_arg(*e, std::move(node)));
        if (is_op("(")) ZL_RETURN_IF_ERROR(parse_args(*e));
        node = std::move(e);
      } else if (is_name("is")) {
        ExprPtr e = make(ExprKind::kTest, cur());
        advance();
        e->negated = skip_name("not");
        ZL_ASSIGN_OR_RETURN(e->name, expect_name());
        ZL_RETURN_IF_ERROR(add_arg(*e, std::move(node)));
        ZL_RETURN_IF_ERROR(parse_test_args(*e));
        node = std::move(e);
      } else if (is_op("(")) {
        ZL_ASSIGN_OR_RETURN(node, parse_call(std::move(node)));
      } else {
        return node;
      }
    }
  }

  // `x is divisibleby(3)` or `x is divisibleby 3` (one primary, as jinja2).
  Status parse_test_args(Expr& e) {
    if (is_op("(")) return parse_args(e);
    const Token& t = cur();
    bool starts_primary = t.kind == TokenKind::kName || t.kind == TokenKind::kString || t.kind == TokenKind::kInt ||
                          t.kind == TokenKind::kFloat || is_op("(") || is_op("[") || is_op("{");
    if (!starts_primary || is_name("else") || is_name("or") || is_name("and")) return ok_status();
    if (is_name("is")) return error_at(t, "You cannot chain multiple tests with is");
    ZL_ASSIGN_OR_RETURN(ExprPtr arg, parse_primary());
    ZL_ASSIGN_OR_RETURN(arg, parse_postfix(std::move(arg)));
    ZL_RETURN_IF_ERROR(add_arg(e, std::move(arg)));
    return ok_status();
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<Program>> parse_template(const std::string& source, const std::string& name) {
  ZL_ASSIGN_OR_RETURN(std::vector<Token> tokens, lex_template(source));
  Parser parser(std::move(tokens));
  ZL_ASSIGN_OR_RETURN(NodeList body, parser.parse_all());
  auto program = std::make_unique<Program>();
  program->name = name;
  program->body = std::move(body);
  return program;
}

}  // namespace zl::jinja
