#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8_text.h"

namespace zl {
namespace {

// A SentencePiece-like tokenizer: "▁" is a space, <0xNN> pieces are bytes,
// and one leading space of the whole sequence is stripped (the quirk that
// makes windowed decoding tricky).
class FakeSpmTokenizer final : public Tokenizer {
 public:
  FakeSpmTokenizer() {
    pieces_ = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "\xE2\x96\x81Hello", "\xE2\x96\x81world", "!",
               "\xE2\x96\x81\xE2\x96\x81", "lo"};
    for (int b = 0; b < 256; ++b) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
      pieces_.push_back(buf);
    }
    special_.bos = 1;
    special_.eos = 2;
  }
  int32_t byte_id(uint8_t b) const { return 9 + b; }

  std::vector<int32_t> encode(std::string_view, bool, bool) const override { return {}; }
  std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
    std::string out;
    for (int32_t id : ids) {
      if (id < 0 || id >= vocab_size()) continue;
      if (is_special(id)) {
        if (!skip_special) out += pieces_[id];
      } else if (id >= 9) {
        out.push_back(static_cast<char>(id - 9));
      } else {
        const std::string& p = pieces_[id];
        for (size_t i = 0; i < p.size(); ++i) {
          bool space = p.compare(i, 3, "\xE2\x96\x81") == 0;
          out.push_back(space ? ' ' : p[i]);
          if (space) i += 2;
        }
      }
    }
    if (!out.empty() && out[0] == ' ') out.erase(0, 1);
    return utf8_sanitize(out);
  }
  int32_t vocab_size() const override { return static_cast<int32_t>(pieces_.size()); }
  std::string token_text(int32_t id) const override { return pieces_.at(id); }
  bool is_special(int32_t id) const override { return id >= 0 && id <= 2; }
  TokenSpelling token_spelling() const override { return TokenSpelling::kByteFallback; }
  const SpecialTokenIds& special_ids() const override { return special_; }
  std::string describe() const override { return "fake spm"; }

 private:
  std::vector<std::string> pieces_;
  SpecialTokenIds special_;
};

// Pushes every id, checks that no piece splits a character, and returns the
// concatenation of all pieces plus the flush. Streams twice, with and without
// the ContinuationPieces fast path, and checks that the pieces are identical.
std::string stream_all(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special = true) {
  ContinuationPieces table(tok);
  StreamDecoder slow(tok, skip_special);
  StreamDecoder fast(tok, skip_special, &table);
  std::string all;
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string piece = slow.push(ids[i]);
    EXPECT_EQ(utf8_sanitize(piece), piece) << "piece splits a UTF-8 character";
    EXPECT_EQ(fast.push(ids[i]), piece) << "fast path differs at id " << i;
    all += piece;
  }
  std::string rest = slow.flush();
  EXPECT_EQ(utf8_sanitize(rest), rest);
  EXPECT_EQ(fast.flush(), rest);
  return all + rest;
}

TEST(StreamDecoderTest, ContinuationPiecesKeepSpmSpacesAndSkipPartialTokens) {
  FakeSpmTokenizer tok;
  ContinuationPieces table(tok);
  std::string_view piece;
  size_t alone = 0;
  ASSERT_TRUE(table.find(4, &piece, &alone));  // ▁Hello: " Hello" after a token, "Hello" first
  EXPECT_EQ(piece, " Hello");
  EXPECT_EQ(alone, 5u);
  EXPECT_FALSE(table.find(1, &piece, &alone)) << "special";
  EXPECT_FALSE(table.find(3, &piece, &alone)) << "a lone ▁ decodes to nothing first";
  EXPECT_FALSE(table.find(tok.byte_id(0xE4), &piece, &alone)) << "a partial character";
  EXPECT_FALSE(table.find(-1, &piece, &alone));
  EXPECT_FALSE(table.find(tok.vocab_size(), &piece, &alone));
}

TEST(StreamDecoderTest, HoldsBackPartialCharacters) {
  auto tok = make_byte_tokenizer(258);
  StreamDecoder dec(*tok);
  EXPECT_EQ(dec.push('a'), "a");
  EXPECT_EQ(dec.push(0xE4), "");
  EXPECT_EQ(dec.push(0xBD), "");
  EXPECT_EQ(dec.push(0xA0), "\xE4\xBD\xA0");
  EXPECT_EQ(dec.push(0xF0), "");
  EXPECT_EQ(dec.flush(), "\xEF\xBF\xBD");
}

TEST(StreamDecoderTest, InvalidBytesAreReleasedByLaterText) {
  auto tok = make_byte_tokenizer(258);
  StreamDecoder dec(*tok);
  EXPECT_EQ(dec.push(0xFF), "");  // a lone U+FFFD is held: it might be a partial char
  EXPECT_EQ(dec.push('x'), "\xEF\xBF\xBDx");
  EXPECT_EQ(dec.flush(), "");
}

TEST(StreamDecoderTest, SkipsOrKeepsSpecialTokens) {
  auto tok = make_byte_tokenizer(300);
  std::vector<int32_t> ids = {256, 'h', 'i', 299, 257};
  EXPECT_EQ(stream_all(*tok, ids), "hi<t299>");
  EXPECT_EQ(stream_all(*tok, ids, false), "<s>hi<t299></s>");
}

TEST(StreamDecoderTest, LongRandomByteStreamsMatchDecode) {
  auto tok = make_byte_tokenizer(300);
  std::mt19937 rng(1234);
  const std::string sample = "héllo wörld 世界 🦙🚀 ok ";
  for (int round = 0; round < 5; ++round) {
    std::vector<int32_t> ids;
    for (int i = 0; i < 3000; ++i) {
      uint32_t r = rng() % 100;
      if (r < 80) {
        ids.push_back(static_cast<uint8_t>(sample[rng() % sample.size()]));
      } else if (r < 90) {
        for (char c : std::string("\xF0\x9F\xA6\x99")) ids.push_back(static_cast<uint8_t>(c));
      } else if (r < 95) {
        ids.push_back(static_cast<int32_t>(rng() % 300));  // anything, invalid bytes included
      } else {
        ids.push_back(256 + static_cast<int32_t>(rng() % 2));
      }
    }
    EXPECT_EQ(stream_all(*tok, ids), tok->decode(ids));
    EXPECT_EQ(stream_all(*tok, ids, false), tok->decode(ids, false));
  }
}

TEST(StreamDecoderTest, SentencePieceLeadingSpaceIsStrippedOnlyOnce) {
  FakeSpmTokenizer tok;
  std::vector<int32_t> ids = {1, 4, 5, 6};  // <s> ▁Hello ▁world !
  EXPECT_EQ(stream_all(tok, ids), "Hello world!");
  EXPECT_EQ(stream_all(tok, ids, false), "<s> Hello world!");
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    std::vector<int32_t> long_ids;
    for (int i = 0; i < 400; ++i) {
      uint32_t r = rng() % 10;
      if (r < 6) {
        long_ids.push_back(1 + static_cast<int32_t>(rng() % 8));
      } else if (r < 9) {
        for (char c : std::string("\xE4\xB8\x96")) long_ids.push_back(tok.byte_id(static_cast<uint8_t>(c)));
      } else {
        long_ids.push_back(tok.byte_id(static_cast<uint8_t>(rng() % 256)));
      }
    }
    EXPECT_EQ(stream_all(tok, long_ids), tok.decode(long_ids, true));
    EXPECT_EQ(stream_all(tok, long_ids, false), tok.decode(long_ids, false));
  }
}

}  // namespace
}  // namespace zl
