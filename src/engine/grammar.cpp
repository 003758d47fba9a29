#include "engine/grammar.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <xgrammar/xgrammar.h>

#include "tokenizer/tokenizer.h"

namespace zl {

class CompiledGrammar {
 public:
  explicit CompiledGrammar(xgrammar::CompiledGrammar grammar) : grammar(std::move(grammar)) {}
  const xgrammar::CompiledGrammar grammar;
};

namespace {

// JSON without whitespace between tokens (vLLM's disable_any_whitespace):
// with it allowed, a model (random weights surely) may emit whitespace
// until max_tokens, and the output never parses.
constexpr bool kAnyWhitespace = false;

// Bounds the compiler's cache of compiled grammars: clients choose schemas.
constexpr int64_t kCacheBytes = int64_t{256} << 20;

xgrammar::VocabType vocab_type(TokenSpelling spelling) {
  switch (spelling) {
    case TokenSpelling::kByteLevel: return xgrammar::VocabType::BYTE_LEVEL;
    case TokenSpelling::kByteFallback: return xgrammar::VocabType::BYTE_FALLBACK;
    case TokenSpelling::kRaw: break;
  }
  return xgrammar::VocabType::RAW;
}

// The first `size` tokens as the tokenizer spells them, special ones as ""
// (xgrammar never allows those, but for the stop ids).
std::vector<std::string> encoded_vocab(const Tokenizer& tokenizer, int32_t size) {
  std::vector<std::string> vocab(static_cast<size_t>(std::min(tokenizer.vocab_size(), size)));
  for (int32_t id = 0; id < static_cast<int32_t>(vocab.size()); ++id)
    if (!tokenizer.is_special(id)) vocab[static_cast<size_t>(id)] = tokenizer.token_text(id);
  return vocab;
}

// A string literal of xgrammar's EBNF.
std::string ebnf_literal(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

struct GrammarCompiler::Impl {
  const Tokenizer& tokenizer;
  int32_t vocab_size;
  std::vector<int32_t> stop_ids;
  // Built on first use: the vocabulary's trie costs tens of milliseconds for
  // 150k tokens, which servers that never see a grammar need not pay.
  mutable std::once_flag once;
  mutable std::optional<xgrammar::GrammarCompiler> compiler;

  xgrammar::GrammarCompiler& get() const {
    std::call_once(once, [this] {
      xgrammar::TokenizerInfo info(encoded_vocab(tokenizer, vocab_size), vocab_type(tokenizer.token_spelling()), vocab_size,
                                   stop_ids);
      // One thread: compilation runs on the caller's (an HTTP worker's).
      compiler.emplace(info, /*max_threads=*/1, /*cache_enabled=*/true, kCacheBytes);
    });
    return *compiler;
  }
};

GrammarCompiler::GrammarCompiler(const Tokenizer& tokenizer, int32_t vocab_size, std::vector<int32_t> stop_ids)
{
  std::erase_if(stop_ids, [&](int32_t id) { return id < 0 || id >= vocab_size; });
  impl_.reset(new Impl{tokenizer, vocab_size, std::move(stop_ids), {}, {}});
}

GrammarCompiler::~GrammarCompiler() = default;

StatusOr<std::shared_ptr<const CompiledGrammar>> GrammarCompiler::compile(const StructuredOutput& output) const {
  using Kind = StructuredOutput::Kind;
  try {
    xgrammar::GrammarCompiler& compiler = impl_->get();
    std::optional<xgrammar::CompiledGrammar> compiled;
    switch (output.kind) {
      case Kind::kNone: return invalid_argument(output.field, ": no grammar to compile");
      case Kind::kJsonObject:
        compiled = compiler.CompileJSONSchema(R"({"type": "object"})", kAnyWhitespace);
        break;
      case Kind::kJsonSchema:
        compiled = compiler.CompileJSONSchema(output.spec, kAnyWhitespace);
        break;
      case Kind::kRegex: compiled = compiler.CompileRegex(output.spec); break;
      case Kind::kGrammar: compiled = compiler.CompileGrammar(output.spec, "root"); break;
      case Kind::kStructuralTag: compiled = compiler.CompileStructuralTag(output.spec); break;
      case Kind::kChoice: {
        if (output.choices.empty()) return invalid_argument(output.field, ": the list of choices is empty");
        std::string ebnf = "root ::= ";
        for (size_t i = 0; i < output.choices.size(); ++i)
          ebnf += (i ? " | " : "") + ebnf_literal(output.choices[i]);
        compiled = compiler.CompileGrammar(ebnf, "root");
        break;
      }
    }
    return std::shared_ptr<const CompiledGrammar>(std::make_shared<CompiledGrammar>(std::move(*compiled)));
  } catch (const std::exception& e) {
    return invalid_argument(output.field, ": ", e.what());
  }
}

struct GrammarMatcher::Impl {
  std::shared_ptr<const CompiledGrammar> grammar;  // the matcher reads it
  xgrammar::GrammarMatcher matcher;
  int32_t vocab_size;
  std::vector<int32_t> bitmask;  // [ceil(vocab_size / 32)], bit i of word w: id 32 w + i allowed
};

namespace {

std::vector<int> merged_stop_ids(const CompiledGrammar& grammar, std::span<const int32_t> extra) {
  std::vector<int> ids = grammar.grammar.GetTokenizerInfo().GetStopTokenIds();
  for (int32_t id : extra)
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  return ids;
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, std::span<const int32_t> stop_ids,
                               std::vector<int32_t> after_ids)
    : after_ids_(std::move(after_ids)) {
  const int32_t vocab = grammar->grammar.GetTokenizerInfo().GetVocabSize();
  xgrammar::GrammarMatcher matcher(grammar->grammar, merged_stop_ids(*grammar, stop_ids));
  impl_ = std::make_unique<Impl>(Impl{std::move(grammar), std::move(matcher), vocab,
                                      std::vector<int32_t>(static_cast<size_t>(xgrammar::GetBitmaskSize(vocab)))});
}

GrammarMatcher::~GrammarMatcher() = default;

void GrammarMatcher::fill_mask() {
  if (ended_ || filled_ || !active()) return;
  std::vector<int32_t>& bits = impl_->bitmask;
  int64_t shape[1] = {static_cast<int64_t>(bits.size())};
  DLTensor tensor{};
  tensor.data = bits.data();
  tensor.device = DLDevice{kDLCPU, 0};
  tensor.ndim = 1;
  tensor.dtype = DLDataType{kDLInt, 32, 1};
  tensor.shape = shape;
  try {
    impl_->matcher.FillNextTokenBitmask(&tensor);
  } catch (const std::exception&) {
    std::fill(bits.begin(), bits.end(), 0);  // nothing allowed: accept() rejects what is drawn
  }
  filled_ = true;
}

void GrammarMatcher::apply_mask(float* logits) {
  if (ended_ || !active()) return;
  fill_mask();
  const std::vector<int32_t>& bits = impl_->bitmask;
  constexpr float kNever = -std::numeric_limits<float>::infinity();
  const int32_t vocab = impl_->vocab_size;
  for (int32_t w = 0; w < static_cast<int32_t>(bits.size()); ++w) {
    uint32_t allowed = static_cast<uint32_t>(bits[static_cast<size_t>(w)]);
    if (allowed == ~0u) continue;
    const int32_t end = std::min(32, vocab - 32 * w);
    for (int32_t i = 0; i < end; ++i)
      if (!((allowed >> i) & 1u)) logits[32 * w + i] = kNever;
  }
}

GrammarStep GrammarMatcher::accept(int32_t token) {
  if (ended_) return GrammarStep::kEnded;
  if (!active()) {  // free text (the reasoning) until after_ids_
    recent_.push_back(token);
    if (recent_.size() > after_ids_.size()) recent_.erase(recent_.begin());
    if (recent_ == after_ids_) after_ids_.clear();
    return GrammarStep::kNone;
  }
  filled_ = false;
  bool accepted = false;
  try {
    accepted = impl_->matcher.AcceptToken(token);
  } catch (const std::exception&) {
  }
  if (!accepted) return GrammarStep::kRejected;
  ended_ = impl_->matcher.IsTerminated();
  return ended_ ? GrammarStep::kEnded : GrammarStep::kNone;
}

}  // namespace zl
