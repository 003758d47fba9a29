// Resolving a Hub id: first from the cache alone (no network when the
// revision's files are all there), then, unless offline, from the Hub's file
// list, fetching what is missing. The same choice of files (safetensors repo,
// or which .gguf) applies to both: to the snapshot's files, or to the Hub's.
#include "model/hf_hub.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "core/log.h"
#include "core/mapped_file.h"
#include "model/hf_hub_download.h"
#include "model/json_util.h"

namespace zl {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr char kIndexFile[] = "model.safetensors.index.json";
constexpr uint64_t kMaxIndexBytes = uint64_t{64} << 20;
constexpr uint64_t kMaxRefBytes = 1024;
// Beside the weights, what a safetensors model folder may use (those present).
constexpr const char* kModelFiles[] = {"config.json",         "generation_config.json",  "tokenizer.json",
                                       "tokenizer_config.json", "tokenizer.model",         "special_tokens_map.json",
                                       "chat_template.jinja"};

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// [\w<extra>]+ over the whole of `text`.
bool all_of_class(std::string_view text, std::string_view extra) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [&](char c) {
    return is_word_char(c) || extra.find(c) != std::string_view::npos;
  });
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

bool is_gguf(const std::string& path) { return lower(path).ends_with(".gguf"); }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out.empty() ? "none" : out;
}

// Every file under the snapshot (links followed), as repo paths, sorted.
std::vector<std::string> list_snapshot(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code file_ec;
    // lexically: fs::relative would follow the link into blobs/
    if (fs::is_regular_file(it->path(), file_ec)) files.push_back(it->path().lexically_relative(dir).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The weight shards an index names (checked: each a safe repo path).
StatusOr<std::vector<std::string>> index_shards(const std::string& index_path) {
  ZL_ASSIGN_OR_RETURN(json index, read_json_file(index_path, kMaxIndexBytes));
  const auto map = index.is_object() ? index.find("weight_map") : index.end();
  if (map == index.end() || !map->is_object()) return data_loss(index_path, ": no \"weight_map\" object");
  std::set<std::string> shards;
  for (const auto& [tensor, file] : map->items()) {
    if (!file.is_string() || !is_safe_repo_path(file.get<std::string>()))
      return data_loss(index_path, ": tensor ", tensor, " names an unsafe or missing file");
    shards.insert(file.get<std::string>());
  }
  return std::vector<std::string>(shards.begin(), shards.end());
}

// What to read from a repo with these files: "" for a safetensors folder, or the .gguf path.
StatusOr<std::string> pick_model(const std::vector<std::string>& files, const HfModelId& id) {
  bool has_config = std::find(files.begin(), files.end(), "config.json") != files.end();
  if (id.quant.empty() && has_config) return std::string();
  return pick_gguf_file(files, id);
}

// The commit `id` names in the cache, or "" when the cache does not know it.
StatusOr<std::string> cached_commit(const HfRepoCache& cache, const HfModelId& id) {
  if (is_commit_hash(id.revision)) return id.revision;
  const std::string ref = cache.ref_path(id.revision);
  if (!file_exists(ref)) return std::string();
  ZL_ASSIGN_OR_RETURN(std::string commit, read_file(ref));
  while (!commit.empty() && std::isspace(static_cast<unsigned char>(commit.back()))) commit.pop_back();
  if (commit.size() > kMaxRefBytes || !is_commit_hash(commit))
    return data_loss(ref, ": not a commit hash (a damaged cache? remove it and fetch again)");
  return commit;
}

// The model's path from the cache alone, or "" with `why_not` saying what is missing.
StatusOr<std::string> resolve_cached(const HfRepoCache& cache, const HfModelId& id, std::string& why_not) {
  ZL_ASSIGN_OR_RETURN(std::string commit, cached_commit(cache, id));
  if (commit.empty()) {
    why_not = str_cat("no ", cache.ref_path(id.revision));
    return std::string();
  }
  const std::string snapshot = cache.snapshot_dir(commit);
  std::vector<std::string> files = list_snapshot(snapshot);
  if (files.empty()) {
    why_not = str_cat("no files in ", snapshot);
    return std::string();
  }
  StatusOr<std::string> picked = pick_model(files, id);
  if (!picked.ok()) {
    if (picked.status().code() == StatusCode::kInvalidArgument) return picked.status();  // ambiguous: so is the Hub
    why_not = picked.status().message();
    return std::string();
  }
  if (!picked->empty()) return snapshot + "/" + *picked;
  // A safetensors folder is whole when the weights the loader reads are all there.
  std::vector<std::string> weights{"model.safetensors"};
  if (file_exists(snapshot + "/" + kIndexFile)) {
    ZL_ASSIGN_OR_RETURN(weights, index_shards(snapshot + "/" + kIndexFile));
  }
  for (const std::string& file : weights) {
    if (!file_exists(snapshot + "/" + file)) {
      why_not = str_cat(snapshot, " lacks ", file);
      return std::string();
    }
  }
  return snapshot;
}

// Fetches a safetensors model's files of `info` into the snapshot.
Status download_safetensors(const HfRepoCache& cache, const HfModelId& id, const HfRepoInfo& info,
                            const HfHubOptions& options) {
  auto listed = [&](const std::string& path) { return std::binary_search(info.files.begin(), info.files.end(), path); };
  for (const char* name : kModelFiles)
    if (listed(name)) ZL_RETURN_IF_ERROR(download_hf_file(cache, id, info.commit, name, options));
  std::vector<std::string> weights;
  if (listed(kIndexFile)) {
    ZL_RETURN_IF_ERROR(download_hf_file(cache, id, info.commit, kIndexFile, options));
    ZL_ASSIGN_OR_RETURN(weights, index_shards(cache.snapshot_dir(info.commit) + "/" + kIndexFile));
    for (const std::string& shard : weights)
      if (!listed(shard)) return data_loss(id.to_string(), ": ", kIndexFile, " names ", shard, ", which the repo lacks");
  } else {
    for (const std::string& path : info.files)
      if (path.ends_with(".safetensors") && path.find('/') == std::string::npos) weights.push_back(path);
  }
  if (weights.empty())
    return unimplemented(id.to_string(), " has config.json but no .safetensors weights (zerolayer reads safetensors or GGUF)");
  for (const std::string& path : weights) ZL_RETURN_IF_ERROR(download_hf_file(cache, id, info.commit, path, options));
  return ok_status();
}

// Asks the Hub for the revision's files and fetches what the model needs.
StatusOr<std::string> resolve_online(const HfRepoCache& cache, const HfModelId& id, const HfHubOptions& options) {
  ZL_ASSIGN_OR_RETURN(HfRepoInfo info, fetch_hf_repo_info(id, options));
  ZL_ASSIGN_OR_RETURN(std::string gguf, pick_model(info.files, id));
  log_info("hub: ", id.to_string(), " is commit ", info.commit, gguf.empty() ? "" : ", file " + gguf);
  if (gguf.empty()) {
    ZL_RETURN_IF_ERROR(download_safetensors(cache, id, info, options));
  } else {
    ZL_RETURN_IF_ERROR(download_hf_file(cache, id, info.commit, gguf, options));
  }
  if (id.revision != info.commit) ZL_RETURN_IF_ERROR(write_hf_ref(cache, id.revision, info.commit));
  const std::string snapshot = cache.snapshot_dir(info.commit);
  return gguf.empty() ? snapshot : snapshot + "/" + gguf;
}

}  // namespace

std::string HfModelId::to_string() const { return repo + "@" + revision + (quant.empty() ? "" : ":" + quant); }

std::optional<HfModelId> parse_hf_model_id(std::string_view spec) {
  if (spec.empty() || !std::isalnum(static_cast<unsigned char>(spec[0])) || spec.find("..") != std::string_view::npos)
    return std::nullopt;
  HfModelId id;
  size_t colon = spec.find(':');
  if (colon != std::string_view::npos) {
    id.quant = spec.substr(colon + 1);
    if (!all_of_class(id.quant, "-")) return std::nullopt;
    spec = spec.substr(0, colon);
  }
  size_t at = spec.find('@');
  if (at != std::string_view::npos) {
    id.revision = spec.substr(at + 1);
    // A branch like "refs/pr/1" becomes a folder under refs/: no empty or dot parts.
    if (!all_of_class(id.revision, "./-") || !is_safe_repo_path(id.revision)) return std::nullopt;
    spec = spec.substr(0, at);
  }
  size_t slash = spec.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  std::string_view org = spec.substr(0, slash), name = spec.substr(slash + 1);
  if (!all_of_class(org, ".-") || !all_of_class(name, ".-")) return std::nullopt;
  id.repo = std::string(spec);
  return id;
}

StatusOr<HfHubOptions> hf_hub_options_from_env() {
  HfHubOptions options;
  options.cache_dir = env_or_empty("HF_HUB_CACHE");
  if (options.cache_dir.empty()) options.cache_dir = env_or_empty("HUGGINGFACE_HUB_CACHE");  // the older name
  if (options.cache_dir.empty()) {
    std::string home = env_or_empty("HF_HOME");
    if (home.empty() && !env_or_empty("XDG_CACHE_HOME").empty()) home = env_or_empty("XDG_CACHE_HOME") + "/huggingface";
    if (home.empty() && !env_or_empty("HOME").empty()) home = env_or_empty("HOME") + "/.cache/huggingface";
    if (home.empty()) return invalid_argument("no Hugging Face cache folder: set HF_HUB_CACHE or HOME");
    options.cache_dir = home + "/hub";
  }
  std::string endpoint = env_or_empty("HF_ENDPOINT");
  if (!endpoint.empty()) options.endpoint = endpoint;
  while (options.endpoint.ends_with('/')) options.endpoint.pop_back();
  options.token = env_or_empty("HF_TOKEN");
  if (options.token.empty()) options.token = env_or_empty("HUGGING_FACE_HUB_TOKEN");
  std::string offline = lower(env_or_empty("HF_HUB_OFFLINE"));
  options.offline = offline == "1" || offline == "true" || offline == "yes" || offline == "on";
  return options;
}

StatusOr<std::string> pick_gguf_file(const std::vector<std::string>& files, const HfModelId& id) {
  std::vector<std::string> ggufs;
  for (const std::string& path : files)
    if (is_gguf(path) && lower(path).find("mmproj") == std::string::npos) ggufs.push_back(path);
  if (ggufs.empty()) {
    return not_found(id.to_string(), " has ", id.quant.empty() ? "neither config.json nor" : "no", " .gguf files",
                     id.quant.empty() ? "" : " to pick :" + id.quant + " from");
  }
  const std::string tag = lower(id.quant.empty() ? "Q4_K_M" : id.quant);
  std::vector<std::string> matches;
  for (const std::string& path : ggufs)
    if (lower(path).find(tag) != std::string::npos) matches.push_back(path);
  if (id.quant.empty()) {  // llama.cpp's default: Q4_K_M, else the first
    std::string picked = matches.empty() ? ggufs.front() : matches.front();
    log_info("hub: ", id.repo, " has no config.json; using ", picked, " of its ", ggufs.size(),
             " .gguf files (name another with ", id.repo, ":QUANT)");
    return picked;
  }
  if (matches.size() == 1) return matches.front();
  if (matches.empty())
    return not_found(id.to_string(), ": no .gguf file has '", id.quant, "' in its name; the .gguf files: ", join(ggufs));
  return invalid_argument(id.to_string(), ": several .gguf files match '", id.quant, "': ", join(matches),
                          "; name one by a longer tag");
}

StatusOr<std::string> resolve_hf_model(const HfModelId& id, const HfHubOptions& options) {
  const HfRepoCache cache = hf_repo_cache(options.cache_dir, id.repo);
  std::string why_not;
  ZL_ASSIGN_OR_RETURN(std::string path, resolve_cached(cache, id, why_not));
  if (!path.empty()) {
    log_info("hub: ", id.to_string(), " from the cache: ", path);
    return path;
  }
  const std::string where = str_cat(id.repo, " at revision ", id.revision, " is not in the Hugging Face cache ",
                                    options.cache_dir, " (", why_not, ")");
  if (options.offline) return not_found(where, ", and HF_HUB_OFFLINE is set");
  StatusOr<std::string> fetched = resolve_online(cache, id, options);
  if (fetched.ok()) return fetched;
  const Status& error = fetched.status();
  switch (error.code()) {
    case StatusCode::kUnavailable:
    case StatusCode::kNotFound:
      return Status(error.code(), str_cat(where, ", and from the Hub (", options.endpoint, "): ", error.message()));
    default:
      return error.with_prefix(id.to_string());
  }
}

}  // namespace zl
