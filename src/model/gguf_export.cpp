#include "model/gguf_export.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace zl {
namespace {

enum GgufValueType : uint32_t { kU32 = 4, kI32 = 5, kF32 = 6, kString = 8, kArray = 9 };

uint32_t ggml_type(DType d) {
  switch (d) {
    case DType::kF32: return 0;
    case DType::kF16: return 1;
    case DType::kQ4_0: return 2;
    case DType::kQ5_0: return 6;
    case DType::kQ5_1: return 7;
    case DType::kQ8_0: return 8;
    case DType::kQ2_K: return 10;
    case DType::kQ3_K: return 11;
    case DType::kQ4_K: return 12;
    case DType::kQ5_K: return 13;
    case DType::kQ6_K: return 14;
    case DType::kIQ4_NL: return 20;
    case DType::kIQ4_XS: return 23;
    case DType::kBF16: return 30;
    case DType::kI8: break;
  }
  return UINT32_MAX;
}

class Bytes {
 public:
  template <typename T>
  void put(T v) {
    size_t n = buf_.size();
    buf_.resize(n + sizeof(T));
    std::memcpy(buf_.data() + n, &v, sizeof(T));
  }
  void str(const std::string& s) {
    put<uint64_t>(s.size());
    buf_.insert(buf_.end(), s.begin(), s.end());
  }
  void key(const std::string& k, uint32_t type) {
    str(k);
    put<uint32_t>(type);
    ++num_kv;
  }
  void kv_u32(const std::string& k, uint32_t v) { key(k, kU32), put(v); }
  void kv_f32(const std::string& k, float v) { key(k, kF32), put(v); }
  void kv_str(const std::string& k, const std::string& v) { key(k, kString), str(v); }
  void pad(size_t align) { buf_.resize((buf_.size() + align - 1) / align * align, 0); }
  std::vector<uint8_t>& data() { return buf_; }
  uint64_t num_kv = 0;

 private:
  std::vector<uint8_t> buf_;
};

struct OutTensor {
  std::string name;
  std::vector<int64_t> shape;  // row-major, outermost first
  uint32_t type = 0;
  std::vector<const uint8_t*> rows;  // in file order
  int64_t row_bytes = 0;
  uint64_t offset = 0;
};

OutTensor vector_tensor(const std::string& name, const float* v, int64_t n) {
  return {name, {n}, 0, {reinterpret_cast<const uint8_t*>(v)}, n * 4, 0};
}

// Rows of a matrix, Q/K permuted from rotate_half order into pair order:
// output row h*hd + 2i + j is input row h*hd + j*hd/2 + i.
StatusOr<OutTensor> matrix_tensor(const std::string& name, const WeightMatrix& w, int32_t permute_heads) {
  OutTensor t{name, {w.rows, w.cols}, ggml_type(w.dtype), {}, w.row_bytes(), 0};
  if (t.type == UINT32_MAX) return unimplemented(name, ": ", dtype_name(w.dtype), " has no GGUF type (use q8_0)");
  t.rows.resize(static_cast<size_t>(w.rows));
  const int64_t head_dim = permute_heads > 0 ? w.rows / permute_heads : 0;
  for (int64_t r = 0; r < w.rows; ++r) {
    int64_t src = r;
    if (permute_heads > 0) {
      int64_t h = r / head_dim, i = (r % head_dim) / 2, j = r % 2;
      src = h * head_dim + j * (head_dim / 2) + i;
    }
    t.rows[static_cast<size_t>(r)] = w.row(src);
  }
  return t;
}

void write_metadata(Bytes& b, const ModelConfig& c, const GgufVocab& v, const std::string& name) {
  b.kv_str("general.architecture", "llama");
  b.kv_str("general.name", name);
  b.kv_u32("general.alignment", 32);
  b.kv_u32("llama.context_length", static_cast<uint32_t>(c.max_seq_len));
  b.kv_u32("llama.embedding_length", static_cast<uint32_t>(c.dim));
  b.kv_u32("llama.block_count", static_cast<uint32_t>(c.num_layers));
  b.kv_u32("llama.feed_forward_length", static_cast<uint32_t>(c.hidden_dim));
  b.kv_u32("llama.attention.head_count", static_cast<uint32_t>(c.num_heads));
  b.kv_u32("llama.attention.head_count_kv", static_cast<uint32_t>(c.num_kv_heads));
  b.kv_u32("llama.rope.dimension_count", static_cast<uint32_t>(c.head_dim));
  // llama.cpp's head size is dim / heads unless these say otherwise.
  b.kv_u32("llama.attention.key_length", static_cast<uint32_t>(c.head_dim));
  b.kv_u32("llama.attention.value_length", static_cast<uint32_t>(c.head_dim));
  b.kv_u32("llama.vocab_size", static_cast<uint32_t>(c.vocab_size));
  b.kv_f32("llama.rope.freq_base", c.rope_theta);
  b.kv_f32("llama.attention.layer_norm_rms_epsilon", c.rms_norm_eps);
  b.kv_str("tokenizer.ggml.model", "llama");
  b.key("tokenizer.ggml.tokens", kArray);
  b.put<uint32_t>(kString);
  b.put<uint64_t>(v.tokens.size());
  for (const std::string& t : v.tokens) b.str(t);
  b.key("tokenizer.ggml.scores", kArray);
  b.put<uint32_t>(kF32);
  b.put<uint64_t>(v.scores.size());
  for (float s : v.scores) b.put(s);
  b.key("tokenizer.ggml.token_type", kArray);
  b.put<uint32_t>(kI32);
  b.put<uint64_t>(v.types.size());
  for (int32_t t : v.types) b.put(t);
  b.kv_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(v.bos_id));
  b.kv_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(v.eos_id));
  b.key("tokenizer.ggml.add_bos_token", 7);
  b.put<uint8_t>(1);
}

}  // namespace

GgufVocab byte_tokenizer_gguf_vocab(int32_t vocab_size) {
  GgufVocab v;
  for (int32_t id = 0; id < vocab_size; ++id) {
    char buf[16];
    if (id < 256) {
      std::snprintf(buf, sizeof(buf), "<0x%02X>", id);
      v.tokens.emplace_back(buf);
      v.types.push_back(6);
    } else if (id == 256 || id == 257) {
      v.tokens.emplace_back(id == 256 ? "<s>" : "</s>");
      v.types.push_back(3);
    } else {
      v.tokens.push_back("<t" + std::to_string(id) + ">");
      v.types.push_back(1);
    }
    v.scores.push_back(id < 258 ? 0.0f : -static_cast<float>(id));
  }
  v.bos_id = 256;
  v.eos_id = 257;
  return v;
}

Status write_gguf(const std::string& path, const ModelConfig& c, const ModelWeights& w, const GgufVocab& vocab,
                  const std::string& name) {
  ZL_RETURN_IF_ERROR(require_features(c, {}, "writing GGUF"));
  std::vector<OutTensor> tensors;
  auto add_matrix = [&](const std::string& n, const WeightMatrix& m, int32_t heads) -> Status {
    ZL_ASSIGN_OR_RETURN(OutTensor t, matrix_tensor(n, m, heads));
    tensors.push_back(std::move(t));
    return ok_status();
  };
  ZL_RETURN_IF_ERROR(add_matrix("token_embd.weight", w.tok_embeddings, 0));
  for (int32_t l = 0; l < c.num_layers; ++l) {
    const LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    std::string p = "blk." + std::to_string(l) + ".";
    tensors.push_back(vector_tensor(p + "attn_norm.weight", lw.attn_norm, c.dim));
    ZL_RETURN_IF_ERROR(add_matrix(p + "attn_q.weight", lw.wq, c.num_heads));
    ZL_RETURN_IF_ERROR(add_matrix(p + "attn_k.weight", lw.wk, c.num_kv_heads));
    ZL_RETURN_IF_ERROR(add_matrix(p + "attn_v.weight", lw.wv, 0));
    ZL_RETURN_IF_ERROR(add_matrix(p + "attn_output.weight", lw.wo, 0));
    tensors.push_back(vector_tensor(p + "ffn_norm.weight", lw.ffn_norm, c.dim));
    ZL_RETURN_IF_ERROR(add_matrix(p + "ffn_gate.weight", lw.w_gate, 0));
    ZL_RETURN_IF_ERROR(add_matrix(p + "ffn_up.weight", lw.w_up, 0));
    ZL_RETURN_IF_ERROR(add_matrix(p + "ffn_down.weight", lw.w_down, 0));
  }
  tensors.push_back(vector_tensor("output_norm.weight", w.final_norm, c.dim));
  if (!c.tie_word_embeddings) ZL_RETURN_IF_ERROR(add_matrix("output.weight", w.lm_head, 0));

  Bytes meta;
  write_metadata(meta, c, vocab, name);
  Bytes infos;
  uint64_t offset = 0;
  for (OutTensor& t : tensors) {
    t.offset = offset;
    infos.str(t.name);
    infos.put<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) infos.put<uint64_t>(static_cast<uint64_t>(*it));
    infos.put<uint32_t>(t.type);
    infos.put<uint64_t>(offset);
    int64_t bytes = t.shape.size() == 1 ? t.row_bytes : t.row_bytes * t.shape[0];
    offset += (static_cast<uint64_t>(bytes) + 31) / 32 * 32;
  }
  Bytes header;
  header.put<uint32_t>(0x46554747);  // "GGUF"
  header.put<uint32_t>(3);
  header.put<uint64_t>(tensors.size());
  header.put<uint64_t>(meta.num_kv);
  header.data().insert(header.data().end(), meta.data().begin(), meta.data().end());
  header.data().insert(header.data().end(), infos.data().begin(), infos.data().end());
  header.pad(32);

  // Written beside the target and renamed at the end, so a failure (disk
  // full, quota, a kill) never leaves a truncated file under the real name.
  const std::string partial = path + ".partial";
  FILE* f = std::fopen(partial.c_str(), "wb");
  if (!f) return not_found("cannot write ", partial, ": ", std::strerror(errno));
  bool ok = std::fwrite(header.data().data(), 1, header.data().size(), f) == header.data().size();
  static const uint8_t kZeros[32] = {};
  for (const OutTensor& t : tensors) {
    int64_t written = 0;
    for (const uint8_t* row : t.rows) {
      ok = ok && std::fwrite(row, 1, static_cast<size_t>(t.row_bytes), f) == static_cast<size_t>(t.row_bytes);
      written += t.row_bytes;
    }
    size_t pad = static_cast<size_t>((32 - written % 32) % 32);
    ok = ok && std::fwrite(kZeros, 1, pad, f) == pad;
  }
  ok = ok && std::fflush(f) == 0;
  int error = ok ? 0 : errno;
  if (std::fclose(f) != 0 && error == 0) error = errno;  // close may report a deferred error
  if (error == 0 && std::rename(partial.c_str(), path.c_str()) == 0) return ok_status();
  if (error == 0) error = errno;
  std::remove(partial.c_str());
  return data_loss("writing ", path, " failed: ", std::strerror(error), "; nothing was left behind");
  return ok_status();
}

}  // namespace zl
