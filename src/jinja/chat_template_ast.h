// Tokens and syntax tree of a chat template. The lexer applies jinja2's
// whitespace rules (trim_blocks, lstrip_blocks, `-`/`+` markers) so the parser
// and evaluator never see whitespace control; every token and node keeps the
// 1-based line and column it came from for error messages.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/chat_template_value.h"
#include "zerolayer/status.h"

namespace zl::jinja {

enum class TokenKind { kData, kVarBegin, kVarEnd, kBlockBegin, kBlockEnd, kName, kString, kInt, kFloat, kOp, kEof };

struct Token {
  TokenKind kind;
  std::string text;  // data, name, operator, or the unescaped string literal
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
  int col = 1;
};

// Tokenizes a template as jinja2's lexer does with trim_blocks=True and
// lstrip_blocks=True. Comments are dropped. Errors carry line:col.
StatusOr<std::vector<Token>> lex_template(const std::string& source);

enum class ExprKind {
  kLiteral,   // literal
  kName,      // name
  kList,      // args
  kTuple,     // args
  kDict,      // args: key, value, key, value, ...
  kAttr,      // args[0].name
  kItem,      // args[0][args[1]]
  kSlice,     // args[0][args[1]:args[2]:args[3]] (null parts omitted)
  kCall,      // args[0](args[1..], kwargs)
  kFilter,    // args[0] | name(args[1..], kwargs)
  kTest,      // args[0] is [not] name(args[1..]); negated
  kUnary,     // name in {"-", "+", "not"}
  kBinary,    // name is the operator; args[0], args[1]
  kCompare,   // args[0] ops[0] args[1] ops[1] args[2] ... (chained)
  kAnd,
  kOr,
  kCondition, // args[0] if args[1] else args[2] (args[2] may be null)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind;
  int line = 0;
  int col = 0;
  Value literal;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
  bool negated = false;
  int depth = 1;  // height of the tree under this node
};

enum class NodeKind { kData, kOutput, kIf, kFor, kSet, kSetBlock, kMacro, kCallBlock, kBreak, kContinue, kGeneration };

struct Node;
using NodePtr = std::unique_ptr<Node>;
using NodeList = std::vector<NodePtr>;

struct Node {
  NodeKind kind;
  int line = 0;
  int col = 0;
  std::string text;                  // kData; macro name; set attribute (ns.attr)
  ExprPtr expr;                      // output, if condition, for iterable, set value, call-block call
  ExprPtr filter;                    // for ... if <filter>
  std::vector<std::string> targets;  // for/set targets; set ns.attr: {ns}
  NodeList body;
  NodeList else_body;                // if: else/elif chain; for: else
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro / call-block parameters, default or null
};

// The parsed template: owned by ChatTemplate and shared by its copies.
struct Program {
  std::string name;
  NodeList body;
};

StatusOr<std::unique_ptr<Program>> parse_template(const std::string& source, const std::string& name);

}  // namespace zl::jinja
