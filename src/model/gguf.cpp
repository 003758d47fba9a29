#include "model/gguf.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <set>

namespace zl {
namespace {

static_assert(std::endian::native == std::endian::little, "GGUF is read as little-endian");

constexpr uint64_t kMaxStringBytes = 1ull << 30;
constexpr uint64_t kMaxArrayElems = 1ull << 26;  // tokenizer arrays are < 1M entries
constexpr uint64_t kMaxTensors = 1ull << 20;
constexpr uint64_t kMaxKeyValues = 1ull << 20;
constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kMaxAlignment = 1ull << 30;
// Smallest possible encodings, to bound counts by the bytes left.
constexpr uint64_t kMinKeyValueBytes = 8 + 4 + 1;        // empty key, type, u8
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // empty name, 1 dim

// Bounds-checked little-endian reads from the mapped file. Every failure names
// the file, what was being read and the offset.
class Cursor {
 public:
  Cursor(const uint8_t* data, uint64_t size, const std::string& path)
      : data_(data), size_(size), path_(path) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }
  const std::string& path() const { return path_; }

  Status truncated(const std::string& what) const {
    return data_loss(path_, ": truncated while reading ", what, " at offset ", pos_);
  }

  template <typename T>
  Status read(T* out, const std::string& what) {
    if (remaining() < sizeof(T)) return truncated(what);
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return ok_status();
  }

  Status read_string(std::string* out, const std::string& what) {
    uint64_t len = 0;
    ZL_RETURN_IF_ERROR(read(&len, what + " length"));
    if (len > kMaxStringBytes || len > remaining())
      return data_loss(path_, ": ", what, " has length ", len, " at offset ", pos_ - 8,
                       ", beyond the file end or the 1 GiB limit");
    out->assign(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return ok_status();
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
  const std::string& path_;
};

bool valid_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::kF64); }

uint64_t min_encoded_bytes(GgufType t) {
  switch (t) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kBool: return 1;
    case GgufType::kU16: case GgufType::kI16: return 2;
    case GgufType::kU32: case GgufType::kI32: case GgufType::kF32: return 4;
    case GgufType::kU64: case GgufType::kI64: case GgufType::kF64: case GgufType::kString: return 8;
    case GgufType::kArray: return 12;
  }
  return 1;
}

template <typename Raw, typename Stored>
Status read_as(Cursor& c, const std::string& what, GgufValue::Storage* out) {
  Raw raw{};
  ZL_RETURN_IF_ERROR(c.read(&raw, what));
  *out = static_cast<Stored>(raw);
  return ok_status();
}

// One scalar of `type` (not an array) into *out.
Status read_scalar(Cursor& c, GgufType type, const std::string& what, GgufValue::Storage* out) {
  switch (type) {
    case GgufType::kU8: return read_as<uint8_t, uint64_t>(c, what, out);
    case GgufType::kI8: return read_as<int8_t, int64_t>(c, what, out);
    case GgufType::kU16: return read_as<uint16_t, uint64_t>(c, what, out);
    case GgufType::kI16: return read_as<int16_t, int64_t>(c, what, out);
    case GgufType::kU32: return read_as<uint32_t, uint64_t>(c, what, out);
    case GgufType::kI32: return read_as<int32_t, int64_t>(c, what, out);
    case GgufType::kU64: return read_as<uint64_t, uint64_t>(c, what, out);
    case GgufType::kI64: return read_as<int64_t, int64_t>(c, what, out);
    case GgufType::kF32: return read_as<float, double>(c, what, out);
    case GgufType::kF64: return read_as<double, double>(c, what, out);
    case GgufType::kBool: {
      uint8_t b = 0;
      ZL_RETURN_IF_ERROR(c.read(&b, what));
      if (b > 1) return data_loss(c.path(), ": ", what, " is a bool with byte value ", int{b});
      *out = b == 1;
      return ok_status();
    }
    case GgufType::kString: {
      std::string s;
      ZL_RETURN_IF_ERROR(c.read_string(&s, what));
      *out = std::move(s);
      return ok_status();
    }
    case GgufType::kArray: break;
  }
  return internal_error(c.path(), ": ", what, ": read_scalar called on an array");
}

// Appends a scalar held in `item` to the matching vector in `array`.
template <typename T>
void append_to(GgufValue::Storage& array, GgufValue::Storage& item) {
  std::get<std::vector<T>>(array).push_back(std::move(std::get<T>(item)));
}

Status read_array(Cursor& c, const std::string& key, GgufValue* v) {
  uint32_t elem_type = 0;
  uint64_t count = 0;
  ZL_RETURN_IF_ERROR(c.read(&elem_type, "key " + key + " array type"));
  if (!valid_type(elem_type) || elem_type == static_cast<uint32_t>(GgufType::kArray))
    return data_loss(c.path(), ": key ", key, " is an array of invalid or nested type ", elem_type);
  ZL_RETURN_IF_ERROR(c.read(&count, "key " + key + " array count"));
  v->type = GgufType::kArray;
  v->array_type = static_cast<GgufType>(elem_type);
  if (count > kMaxArrayElems || count > c.remaining() / min_encoded_bytes(v->array_type))
    return data_loss(c.path(), ": key ", key, " has an array count of ", count,
                     ", more than the file's remaining bytes can hold");
  switch (v->array_type) {
    case GgufType::kU8: case GgufType::kU16: case GgufType::kU32: case GgufType::kU64:
      v->value = std::vector<uint64_t>(); break;
    case GgufType::kI8: case GgufType::kI16: case GgufType::kI32: case GgufType::kI64:
      v->value = std::vector<int64_t>(); break;
    case GgufType::kF32: case GgufType::kF64: v->value = std::vector<double>(); break;
    case GgufType::kBool: v->value = std::vector<bool>(); break;
    case GgufType::kString: v->value = std::vector<std::string>(); break;
    case GgufType::kArray: break;
  }
  std::visit([&](auto& vec) {
    if constexpr (requires { vec.reserve(count); }) vec.reserve(count);
  }, v->value);
  const std::string what = "key " + key + " array element";
  for (uint64_t i = 0; i < count; ++i) {
    GgufValue::Storage item;
    ZL_RETURN_IF_ERROR(read_scalar(c, v->array_type, what, &item));
    switch (item.index()) {
      case 0: append_to<uint64_t>(v->value, item); break;
      case 1: append_to<int64_t>(v->value, item); break;
      case 2: append_to<double>(v->value, item); break;
      case 3: append_to<bool>(v->value, item); break;
      case 4: append_to<std::string>(v->value, item); break;
      default: return internal_error(c.path(), ": ", what, ": unexpected element kind");
    }
  }
  return ok_status();
}

Status read_metadata(Cursor& c, uint64_t num_kv, GgufFile* out) {
  for (uint64_t i = 0; i < num_kv; ++i) {
    std::string key;
    ZL_RETURN_IF_ERROR(c.read_string(&key, "metadata key #" + std::to_string(i)));
    uint32_t type = 0;
    ZL_RETURN_IF_ERROR(c.read(&type, "key " + key + " type"));
    if (!valid_type(type)) return data_loss(c.path(), ": key ", key, " has invalid type ", type);
    GgufValue v;
    v.type = static_cast<GgufType>(type);
    if (v.type == GgufType::kArray) {
      ZL_RETURN_IF_ERROR(read_array(c, key, &v));
    } else {
      ZL_RETURN_IF_ERROR(read_scalar(c, v.type, "key " + key, &v.value));
    }
    if (!out->metadata.emplace(key, std::move(v)).second)
      return data_loss(c.path(), ": duplicate metadata key ", key);
  }
  return ok_status();
}

Status read_alignment(GgufFile* out) {
  const GgufValue* v = out->find("general.alignment");
  if (v == nullptr) return ok_status();
  std::optional<int64_t> a = v->as_int();
  if (!a || *a <= 0 || static_cast<uint64_t>(*a) > kMaxAlignment || !std::has_single_bit(static_cast<uint64_t>(*a)))
    return data_loss(out->path, ": key general.alignment must be a power of two up to 2^30");
  out->alignment = static_cast<uint64_t>(*a);
  return ok_status();
}

struct RawTensor {
  std::string name;
  std::vector<uint64_t> ne;  // ggml order: ne[0] is the innermost (row) length
  uint32_t ggml_type = 0;
  uint64_t offset = 0;       // relative to the data section
};

Status read_tensor_info(Cursor& c, uint64_t index, RawTensor* t) {
  ZL_RETURN_IF_ERROR(c.read_string(&t->name, "tensor #" + std::to_string(index) + " name"));
  const std::string what = "tensor " + t->name;
  uint32_t num_dims = 0;
  ZL_RETURN_IF_ERROR(c.read(&num_dims, what + " n_dims"));
  if (num_dims == 0 || num_dims > kMaxDims)
    return data_loss(c.path(), ": tensor ", t->name, " has ", num_dims, " dims (1 to 4 allowed)");
  t->ne.resize(num_dims);
  for (uint64_t& dim : t->ne) ZL_RETURN_IF_ERROR(c.read(&dim, what + " dims"));
  ZL_RETURN_IF_ERROR(c.read(&t->ggml_type, what + " type"));
  ZL_RETURN_IF_ERROR(c.read(&t->offset, what + " offset"));
  return ok_status();
}

struct GgmlTypeInfo {
  uint32_t id;
  const char* name;
};

// Names for messages about unsupported types (ggml.h's enum ggml_type).
const char* ggml_type_name(uint32_t type) {
  static constexpr GgmlTypeInfo kNames[] = {
      {0, "F32"}, {1, "F16"}, {2, "Q4_0"}, {3, "Q4_1"}, {6, "Q5_0"}, {7, "Q5_1"}, {8, "Q8_0"},
      {9, "Q8_1"}, {10, "Q2_K"}, {11, "Q3_K"}, {12, "Q4_K"}, {13, "Q5_K"}, {14, "Q6_K"},
      {15, "Q8_K"}, {16, "IQ2_XXS"}, {17, "IQ2_XS"}, {18, "IQ3_XXS"}, {19, "IQ1_S"},
      {20, "IQ4_NL"}, {21, "IQ3_S"}, {22, "IQ2_S"}, {23, "IQ4_XS"}, {24, "I8"}, {25, "I16"},
      {26, "I32"}, {27, "I64"}, {28, "F64"}, {29, "IQ1_M"}, {30, "BF16"}, {34, "TQ1_0"},
      {35, "TQ2_0"}, {39, "MXFP4"}};
  for (const GgmlTypeInfo& t : kNames)
    if (t.id == type) return t.name;
  return "unknown";
}

std::optional<DType> ggml_dtype(uint32_t type) {
  switch (type) {
    case 0: return DType::kF32;
    case 1: return DType::kF16;
    case 2: return DType::kQ4_0;
    case 6: return DType::kQ5_0;
    case 7: return DType::kQ5_1;
    case 8: return DType::kQ8_0;
    case 10: return DType::kQ2_K;
    case 11: return DType::kQ3_K;
    case 12: return DType::kQ4_K;
    case 13: return DType::kQ5_K;
    case 14: return DType::kQ6_K;
    case 20: return DType::kIQ4_NL;
    case 23: return DType::kIQ4_XS;
    case 30: return DType::kBF16;
    default: return std::nullopt;
  }
}

// Checks one tensor against the format rules and the data section, and fills
// `info` (shape reversed into row-major order).
Status make_tensor(const GgufFile& g, const RawTensor& t, uint64_t data_size, TensorInfo* info) {
  auto bad = [&](const auto&... why) { return data_loss(g.path, ": tensor ", t.name, ": ", why...); };
  std::optional<DType> dtype = ggml_dtype(t.ggml_type);
  if (!dtype)
    return unimplemented(g.path, ": tensor ", t.name, " has ggml type ", ggml_type_name(t.ggml_type),
                         " (", t.ggml_type,
                         "); only F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS are "
                         "supported");
  uint64_t num_elems = 1;
  for (uint64_t dim : t.ne) {
    if (dim == 0 || dim > static_cast<uint64_t>(INT64_MAX)) return bad("dimension ", dim, " is out of range");
    if (num_elems > static_cast<uint64_t>(INT64_MAX) / dim) return bad("element count overflows");
    num_elems *= dim;
  }
  const uint64_t block = static_cast<uint64_t>(dtype_block_elems(*dtype));
  if (t.ne[0] % block != 0)
    return bad("row length ", t.ne[0], " is not a multiple of the ", dtype_name(*dtype), " block size ", block);
  std::optional<uint64_t> num_bytes = dtype_bytes(*dtype, num_elems);
  if (!num_bytes) return bad("byte size overflows");
  if (t.offset % g.alignment != 0) return bad("offset ", t.offset, " is not a multiple of the alignment ", g.alignment);
  if (t.offset > data_size || *num_bytes > data_size - t.offset)
    return bad("bytes [", t.offset, ", +", *num_bytes, ") run past the data section of ", data_size, " bytes");
  info->name = t.name;
  info->dtype = *dtype;
  info->shape.assign(t.ne.rbegin(), t.ne.rend());
  info->data = g.file->data() + g.data_offset + t.offset;
  info->num_bytes = *num_bytes;
  info->file = g.file;
  return ok_status();
}

Status build_tensor_index(const std::vector<RawTensor>& raw, GgufFile* g) {
  const uint64_t data_size = g->file->size() - g->data_offset;
  for (const RawTensor& t : raw) {
    TensorInfo info;
    ZL_RETURN_IF_ERROR(make_tensor(*g, t, data_size, &info));
    if (!g->tensors.emplace(t.name, std::move(info)).second)
      return data_loss(g->path, ": duplicate tensor name ", t.name);
  }
  std::vector<const RawTensor*> order;
  for (const RawTensor& t : raw) order.push_back(&t);
  std::sort(order.begin(), order.end(),
            [](const RawTensor* a, const RawTensor* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    const TensorInfo& prev = g->tensors.at(order[i - 1]->name);
    if (order[i - 1]->offset + prev.num_bytes > order[i]->offset)
      return data_loss(g->path, ": tensor ", order[i - 1]->name, " overlaps tensor ", order[i]->name);
  }
  return ok_status();
}

Status read_header(Cursor& c, GgufFile* g, uint64_t* num_tensors, uint64_t* num_kv) {
  char magic[4];
  ZL_RETURN_IF_ERROR(c.read(&magic, "the magic"));
  if (std::memcmp(magic, "GGUF", 4) != 0) return data_loss(g->path, ": not a GGUF file (bad magic)");
  ZL_RETURN_IF_ERROR(c.read(&g->version, "the version"));
  if (g->version == 1) return unimplemented(g->path, ": GGUF version 1 is not supported (2 and 3 are)");
  if ((g->version & 0xffff) == 0 && g->version != 0)
    return unimplemented(g->path, ": big-endian GGUF is not supported");
  if (g->version != 2 && g->version != 3)
    return unimplemented(g->path, ": GGUF version ", g->version, " is not supported (2 and 3 are)");
  ZL_RETURN_IF_ERROR(c.read(num_tensors, "the tensor count"));
  ZL_RETURN_IF_ERROR(c.read(num_kv, "the metadata count"));
  if (*num_kv > kMaxKeyValues || *num_kv > c.remaining() / kMinKeyValueBytes)
    return data_loss(g->path, ": metadata count ", *num_kv, " is more than the file can hold");
  if (*num_tensors > kMaxTensors || *num_tensors > c.remaining() / kMinTensorInfoBytes)
    return data_loss(g->path, ": tensor count ", *num_tensors, " is more than the file can hold");
  return ok_status();
}

}  // namespace

const char* gguf_type_name(GgufType type) {
  switch (type) {
    case GgufType::kU8: return "u8";
    case GgufType::kI8: return "i8";
    case GgufType::kU16: return "u16";
    case GgufType::kI16: return "i16";
    case GgufType::kU32: return "u32";
    case GgufType::kI32: return "i32";
    case GgufType::kF32: return "f32";
    case GgufType::kBool: return "bool";
    case GgufType::kString: return "string";
    case GgufType::kArray: return "array";
    case GgufType::kU64: return "u64";
    case GgufType::kI64: return "i64";
    case GgufType::kF64: return "f64";
  }
  return "?";
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = metadata.find(key);
  return it == metadata.end() ? nullptr : &it->second;
}

StatusOr<GgufFile> read_gguf(const std::string& path) {
  GgufFile g;
  g.path = path;
  ZL_ASSIGN_OR_RETURN(g.file, MappedFile::open(path));
  Cursor c(g.file->data(), g.file->size(), g.path);
  uint64_t num_tensors = 0, num_kv = 0;
  ZL_RETURN_IF_ERROR(read_header(c, &g, &num_tensors, &num_kv));
  ZL_RETURN_IF_ERROR(read_metadata(c, num_kv, &g));
  ZL_RETURN_IF_ERROR(read_alignment(&g));
  std::vector<RawTensor> raw;
  for (uint64_t i = 0; i < num_tensors; ++i) {
    ZL_RETURN_IF_ERROR(read_tensor_info(c, i, &raw.emplace_back()));
  }
  // The data section starts at the next multiple of the alignment. A file
  // without tensors may end before that padding.
  const uint64_t aligned = (c.pos() + g.alignment - 1) / g.alignment * g.alignment;
  if (aligned > g.file->size() && num_tensors > 0)
    return data_loss(path, ": truncated: the data section would start at ", aligned,
                     " but the file has ", g.file->size(), " bytes");
  g.data_offset = std::min<uint64_t>(aligned, g.file->size());
  ZL_RETURN_IF_ERROR(build_tensor_index(raw, &g));
  return g;
}

}  // namespace zl
