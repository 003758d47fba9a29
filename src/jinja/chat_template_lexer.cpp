// jinja2's lexer, reduced to what chat templates need. Whitespace rules, as
// jinja2.lexer applies them with trim_blocks and lstrip_blocks:
//  - `{%-`, `{{-`, `{#-` strip all whitespace before the tag;
//  - `-%}`, `-}}`, `-#}` strip all whitespace after it;
//  - `%}` and `#}` eat one newline right after them (trim_blocks), `+%}` not;
//  - `{%` and `{#` (not `{{`, not `{%+`) remove spaces and tabs between the
//    start of their line and the tag (lstrip_blocks). "Start of line" also
//    holds when the previous tag's match ended with a newline.
// Newlines are normalized to \n and one trailing newline of the source is
// dropped (keep_trailing_newline=False).
#include <algorithm>
#include <cctype>
#include <cstring>

#include "jinja/chat_template_ast.h"

namespace zl::jinja {
namespace {

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  StatusOr<std::vector<Token>> run() {
    size_t pos = 0;
    bool line_starting = true;
    while (pos < src_.size()) {
      size_t tag = find_tag(pos);
      if (tag == std::string::npos) {
        emit_data(pos, src_.substr(pos));
        break;
      }
      char kind = src_[tag + 1];
      char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      std::string text = src_.substr(pos, tag - pos);
      if (sign == '-') {
        size_t end = text.find_last_not_of(" \t\n\r\f\v");
        text.resize(end == std::string::npos ? 0 : end + 1);
      } else if (sign != '+' && kind != '{') {
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if ((l_pos > 0 || line_starting) && text.find_first_not_of(" \t\r\f\v", l_pos) == std::string::npos) {
          text.resize(l_pos);
        }
      }
      emit_data(pos, text);
      size_t body = tag + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      StatusOr<size_t> end = kind == '#' ? skip_comment(tag, body) : lex_tag(tag, body, kind);
      if (!end.ok()) return end.status();
      line_starting = *end > 0 && src_[*end - 1] == '\n';
      pos = *end;
    }
    tokens_.push_back(Token{TokenKind::kEof, "", 0, 0, line_of(src_.size()), col_of(src_.size())});
    return std::move(tokens_);
  }

 private:
  int line_of(size_t pos) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos);
    return static_cast<int>(it - line_starts_.begin());
  }
  int col_of(size_t pos) const { return static_cast<int>(pos - line_starts_[line_of(pos) - 1]) + 1; }
  Status error(size_t pos, const std::string& msg) const {
    return invalid_argument("line ", line_of(pos), ", column ", col_of(pos), ": ", msg);
  }
  void push(TokenKind kind, std::string text, size_t pos) {
    tokens_.push_back(Token{kind, std::move(text), 0, 0, line_of(pos), col_of(pos)});
  }
  void emit_data(size_t pos, std::string text) {
    if (!text.empty()) push(TokenKind::kData, std::move(text), pos);
  }

  size_t find_tag(size_t pos) const {
    while (true) {
      size_t p = src_.find('{', pos);
      if (p == std::string::npos || p + 1 >= src_.size()) return std::string::npos;
      char c = src_[p + 1];
      if (c == '{' || c == '%' || c == '#') return p;
      pos = p + 1;
    }
  }

  // After "#}": "-#}" eats following whitespace, "#}" one newline, "+#}" nothing.
  size_t after_end(size_t end_pos, char marker, bool trim_newline) const {
    size_t p = end_pos + 2;
    if (marker == '-') {
      while (p < src_.size() && std::isspace(static_cast<unsigned char>(src_[p]))) ++p;
    } else if (marker != '+' && trim_newline && p < src_.size() && src_[p] == '\n') {
      ++p;
    }
    return p;
  }

  StatusOr<size_t> skip_comment(size_t tag, size_t body) {
    size_t end = src_.find("#}", body);
    if (end == std::string::npos) return error(tag, "Missing end of comment tag");
    char marker = end > body && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : '\0';
    return after_end(end, marker, true);
  }

  // Tokens between "{{"/"{%" and the matching end, which only counts outside brackets.
  StatusOr<size_t> lex_tag(size_t tag, size_t pos, char kind) {
    push(kind == '{' ? TokenKind::kVarBegin : TokenKind::kBlockBegin, "", tag);
    const char close = kind == '{' ? '}' : '%';
    std::string brackets;
    while (true) {
      while (pos < src_.size() && std::isspace(static_cast<unsigned char>(src_[pos]))) ++pos;
      if (pos >= src_.size()) return error(tag, kind == '{' ? "unexpected end of template, expected '}}'" : "unexpected end of template, expected '%}'");
      if (brackets.empty()) {
        char c = src_[pos];
        bool marked = (c == '-' || (c == '+' && kind == '%')) &&
                      src_.compare(pos + 1, 2, std::string{close, '}'}) == 0;
        if (marked || src_.compare(pos, 2, std::string{close, '}'}) == 0) {
          push(kind == '{' ? TokenKind::kVarEnd : TokenKind::kBlockEnd, "", pos);
          size_t end_pos = marked ? pos + 1 : pos;
          return after_end(end_pos, marked ? c : '\0', kind == '%');
        }
      }
      ZL_ASSIGN_OR_RETURN(pos, lex_one(pos, brackets));
    }
  }

  StatusOr<size_t> lex_one(size_t pos, std::string& brackets) {
    char c = src_[pos];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = pos;
      while (end < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[end])) || src_[end] == '_')) ++end;
      push(TokenKind::kName, src_.substr(pos, end - pos), pos);
      return end;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return lex_number(pos);
    if (c == '\'' || c == '"') return lex_string(pos);
    static const char* const kTwoChar[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char* op : kTwoChar) {
      if (src_.compare(pos, 2, op) == 0) {
        push(TokenKind::kOp, op, pos);
        return pos + 2;
      }
    }
    if (std::strchr("+-/*%~[](){}<>=.:|,;", c) == nullptr) {
      return error(pos, std::string("unexpected char '") + c + "'");
    }
    if (c == '(' || c == '[' || c == '{') brackets.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    if (c == ')' || c == ']' || c == '}') {
      if (brackets.empty()) return error(pos, std::string("unexpected '") + c + "'");
      if (brackets.back() != c) return error(pos, std::string("unexpected '") + c + "', expected '" + brackets.back() + "'");
      brackets.pop_back();
    }
    push(TokenKind::kOp, std::string(1, c), pos);
    return pos + 1;
  }

  StatusOr<size_t> lex_number(size_t pos) {
    size_t end = pos;
    auto digits = [&] {
      while (end < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[end])) || src_[end] == '_')) ++end;
    };
    digits();
    bool is_float = false;
    if (end + 1 < src_.size() && src_[end] == '.' && std::isdigit(static_cast<unsigned char>(src_[end + 1]))) {
      is_float = true;
      ++end;
      digits();
    }
    if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
      size_t e = end + 1;
      if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
      if (e < src_.size() && std::isdigit(static_cast<unsigned char>(src_[e]))) {
        is_float = true;
        end = e;
        digits();
      }
    }
    std::string text = src_.substr(pos, end - pos);
    std::erase(text, '_');
    Token t{is_float ? TokenKind::kFloat : TokenKind::kInt, text, 0, 0, line_of(pos), col_of(pos)};
    try {
      if (is_float) t.float_value = std::stod(text);
      else t.int_value = std::stoll(text);
    } catch (const std::exception&) {
      return error(pos, "number out of range: " + text);
    }
    tokens_.push_back(std::move(t));
    return end;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // Python string literal escapes; unknown escapes keep their backslash.
  StatusOr<size_t> lex_string(size_t pos) {
    char quote = src_[pos];
    std::string out;
    size_t p = pos + 1;
    while (p < src_.size() && src_[p] != quote) {
      if (src_[p] != '\\' || p + 1 >= src_.size()) {
        out += src_[p++];
        continue;
      }
      char e = src_[p + 1];
      p += 2;
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '0': out += '\0'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case '\n': break;
        case 'x':
        case 'u':
        case 'U': {
          size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (p + n > src_.size()) return error(p, "truncated \\" + std::string(1, e) + " escape");
          uint32_t cp = 0;
          for (size_t k = 0; k < n; ++k) {
            char h = src_[p + k];
            if (!std::isxdigit(static_cast<unsigned char>(h))) return error(p, "bad \\" + std::string(1, e) + " escape");
            cp = cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
          }
          p += n;
          append_utf8(out, cp);
          break;
        }
        default:
          out += '\\';
          out += e;
      }
    }
    if (p >= src_.size()) return error(pos, "unterminated string literal");
    push(TokenKind::kString, std::move(out), pos);
    return p + 1;
  }

  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

}  // namespace

StatusOr<std::vector<Token>> lex_template(const std::string& source) {
  std::string normalized;
  normalized.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      normalized += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      normalized += source[i];
    }
  }
  if (!normalized.empty() && normalized.back() == '\n') normalized.pop_back();
  return Lexer(std::move(normalized)).run();
}

}  // namespace zl::jinja
