#include "model/safetensors.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "model/json_util.h"

namespace zl {
namespace {

using json = nlohmann::json;

// Real headers are a few hundred KB even for large models.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;
constexpr uint64_t kMaxIndexBytes = 100ull << 20;
constexpr size_t kMaxRank = 8;

std::optional<DType> parse_dtype(const std::string& name) {
  if (name == "F32") return DType::kF32;
  if (name == "F16") return DType::kF16;
  if (name == "BF16") return DType::kBF16;
  return std::nullopt;
}

// A non-negative JSON integer, or nullopt.
std::optional<uint64_t> as_u64(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) return value.get<uint64_t>();
  return std::nullopt;
}

// Parses one header entry; `data`/`data_size` are the data section.
StatusOr<TensorInfo> parse_entry(const std::string& path, const std::string& name,
                                 const json& entry, const uint8_t* data, uint64_t data_size) {
  auto bad = [&](const auto&... why) { return data_loss(path, ": tensor \"", name, "\": ", why...); };
  if (!entry.is_object()) return bad("header entry is ", json_type_name(entry), ", not an object");
  auto dtype_it = entry.find("dtype");
  auto shape_it = entry.find("shape");
  auto offsets_it = entry.find("data_offsets");
  if (dtype_it == entry.end() || !dtype_it->is_string()) return bad("missing or non-string \"dtype\"");
  if (shape_it == entry.end() || !shape_it->is_array()) return bad("missing or non-array \"shape\"");
  if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2)
    return bad("\"data_offsets\" must be an array of two integers");

  TensorInfo info;
  info.name = name;
  const std::string& dtype_name_str = dtype_it->get_ref<const std::string&>();
  std::optional<DType> dtype = parse_dtype(dtype_name_str);
  if (!dtype)
    return unimplemented(path, ": tensor \"", name, "\" has dtype ", dtype_name_str,
                         "; only F32, F16 and BF16 are supported");
  info.dtype = *dtype;

  if (shape_it->size() > kMaxRank) return bad("shape has ", shape_it->size(), " dims (max ", kMaxRank, ")");
  uint64_t num_elems = 1;
  for (const json& dim_json : *shape_it) {
    std::optional<uint64_t> dim = as_u64(dim_json);
    if (!dim || *dim > static_cast<uint64_t>(INT64_MAX))
      return bad("shape ", shape_it->dump(), " has a dim that is not a non-negative integer");
    if (*dim != 0 && num_elems > static_cast<uint64_t>(INT64_MAX) / *dim)
      return bad("shape ", shape_it->dump(), " has too many elements");
    num_elems *= *dim;
    info.shape.push_back(static_cast<int64_t>(*dim));
  }

  std::optional<uint64_t> begin = as_u64((*offsets_it)[0]);
  std::optional<uint64_t> end = as_u64((*offsets_it)[1]);
  if (!begin || !end) return bad("\"data_offsets\" must be non-negative integers");
  if (*begin > *end || *end > data_size)
    return bad("data_offsets [", *begin, ", ", *end, "] are not within the data section of ",
               data_size, " bytes");
  std::optional<uint64_t> num_bytes = dtype_bytes(info.dtype, num_elems);
  if (!num_bytes || *num_bytes != *end - *begin)
    return bad("shape ", shape_to_string(info.shape), " of ", dtype_name_str, " needs ",
               num_bytes ? std::to_string(*num_bytes) : std::string("too many"),
               " bytes but data_offsets span ", *end - *begin);
  info.data = data + *begin;
  info.num_bytes = *num_bytes;
  return info;
}

// Sorted by start, each non-empty tensor must end before the next begins.
Status check_no_overlap(const std::string& path, const TensorIndex& index) {
  std::vector<const TensorInfo*> order;
  for (const auto& [name, info] : index)
    if (info.num_bytes > 0) order.push_back(&info);
  std::sort(order.begin(), order.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->data < b->data; });
  for (size_t i = 1; i < order.size(); ++i) {
    if (order[i - 1]->data + order[i - 1]->num_bytes > order[i]->data)
      return data_loss(path, ": tensor \"", order[i - 1]->name, "\" overlaps tensor \"",
                       order[i]->name, "\"");
  }
  return ok_status();
}

bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
         name.find_first_of(std::string("/\\\0", 3)) == std::string::npos;
}

StatusOr<TensorIndex> read_sharded(const std::string& dir, const std::string& index_path) {
  JsonParseOptions options;
  options.reject_duplicate_keys = true;
  ZL_ASSIGN_OR_RETURN(json index, read_json_file(index_path, kMaxIndexBytes, options));
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    return data_loss(index_path, ": missing \"weight_map\" object");
  const json& weight_map = index["weight_map"];
  if (weight_map.empty()) return data_loss(index_path, ": \"weight_map\" is empty");

  std::map<std::string, std::vector<std::string>> names_by_shard;
  for (const auto& [name, shard] : weight_map.items()) {
    if (!shard.is_string() || !is_plain_file_name(shard.get<std::string>()))
      return data_loss(index_path, ": tensor \"", name, "\" maps to ", shard.dump(),
                       ", which is not a plain file name inside the model directory");
    names_by_shard[shard.get<std::string>()].push_back(name);
  }

  TensorIndex result;
  std::map<std::string, std::string> shard_of;  // tensor name -> shard it came from
  for (const auto& [shard, names] : names_by_shard) {
    ZL_ASSIGN_OR_RETURN(TensorIndex part, read_safetensors(dir + "/" + shard));
    for (const std::string& name : names) {
      if (part.find(name) == part.end())
        return data_loss(index_path, ": tensor \"", name, "\" is mapped to ", shard,
                         ", which does not contain it");
    }
    for (auto& [name, info] : part) {
      auto [it, inserted] = shard_of.emplace(name, shard);
      if (!inserted)
        return data_loss(index_path, ": tensor \"", name, "\" appears in both ", it->second,
                         " and ", shard);
      result.emplace(name, std::move(info));
    }
  }
  return result;
}

}  // namespace

StatusOr<TensorIndex> read_safetensors(const std::string& path) {
  ZL_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::open(path));
  const uint64_t file_size = file->size();
  if (file_size < 8) return data_loss(path, ": ", file_size, " bytes is too short for a safetensors header");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | file->data()[i];
  if (header_len > kMaxHeaderBytes || header_len > file_size - 8)
    return data_loss(path, ": header length ", header_len, " exceeds the file (", file_size,
                     " bytes) or the limit of ", kMaxHeaderBytes);

  JsonParseOptions options;
  options.max_depth = 16;
  options.reject_duplicate_keys = true;
  std::string_view text(reinterpret_cast<const char*>(file->data() + 8), header_len);
  ZL_ASSIGN_OR_RETURN(json header, parse_json_text(text, path, options));
  if (!header.is_object()) return data_loss(path, ": header is ", json_type_name(header), ", not an object");

  const uint8_t* data = file->data() + 8 + header_len;
  const uint64_t data_size = file_size - 8 - header_len;
  TensorIndex index;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;  // free-form strings; nothing we need
    ZL_ASSIGN_OR_RETURN(TensorInfo info, parse_entry(path, name, entry, data, data_size));
    info.file = file;
    index.emplace(name, std::move(info));
  }
  ZL_RETURN_IF_ERROR(check_no_overlap(path, index));
  return index;
}

StatusOr<TensorIndex> read_safetensors_model(const std::string& dir) {
  const std::string index_path = dir + "/model.safetensors.index.json";
  if (file_exists(index_path)) return read_sharded(dir, index_path);
  const std::string single_path = dir + "/model.safetensors";
  if (file_exists(single_path)) return read_safetensors(single_path);
  if (!is_directory(dir)) return not_found(dir, ": no such directory");
  return not_found(dir, ": has neither model.safetensors nor model.safetensors.index.json");
}

}  // namespace zl
