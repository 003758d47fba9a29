// Models named by their Hugging Face Hub id, `ORG/NAME[@REVISION][:QUANT]`:
// found in the local hub cache, or downloaded into it. The cache has
// huggingface_hub's own layout, so that huggingface_hub, vLLM and zerolayer
// share one copy of each file:
//   <cache>/models--ORG--NAME/refs/<branch or tag>       a commit hash
//   <cache>/models--ORG--NAME/snapshots/<commit>/<path>  symlinks to ../../blobs/<etag>
//   <cache>/models--ORG--NAME/blobs/<etag>               the bytes (<etag>.incomplete while downloading)
// A revision in the cache is used as it is, without asking the Hub whether a
// branch moved. Everything the Hub sends is untrusted input (hf_hub_download.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zerolayer/status.h"

namespace zl {

struct HfModelId {
  std::string repo;             // "ORG/NAME"
  std::string revision = "main";  // a branch, a tag or a 40-hex commit
  std::string quant;            // "" or a GGUF quantization tag to pick a file by ("Q4_K_M")
  std::string to_string() const;  // "ORG/NAME@REVISION[:QUANT]"
};

// The id `spec` spells, or nullopt when it does not look like one
// (`^[A-Za-z0-9][\w.-]*/[\w.-]+(@[\w./-]+)?(:[\w-]+)?$`, no ".." anywhere).
// Callers try existing paths first: a folder named like an id wins.
std::optional<HfModelId> parse_hf_model_id(std::string_view spec);

struct HfHubOptions {
  std::string cache_dir;  // the hub cache root
  std::string endpoint = "https://huggingface.co";
  std::string token;      // sent as "Authorization: Bearer" to the endpoint only
  bool offline = false;   // never touch the network
};

// From the environment, as huggingface_hub reads it: the cache is
// HF_HUB_CACHE, else HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub; HF_ENDPOINT; HF_TOKEN (or HUGGING_FACE_HUB_TOKEN);
// HF_HUB_OFFLINE=1 (or true/yes/on).
StatusOr<HfHubOptions> hf_hub_options_from_env();

// The local path to read the model from: the snapshot folder of a
// safetensors repo (config.json beside it), or the one .gguf file picked.
// Fetches what the cache lacks unless offline. Without a quant tag, a repo
// with config.json is a safetensors model, and one with only .gguf files
// gets Q4_K_M if it has one, else its first .gguf (logged).
StatusOr<std::string> resolve_hf_model(const HfModelId& id, const HfHubOptions& options);

// Which .gguf of `files` (paths in a repo) `quant` names: the one whose path
// contains it, compared case-insensitively; with no quant, Q4_K_M or else the
// first. None or several: an error listing the .gguf files. mmproj files
// (vision projectors) are never picked.
StatusOr<std::string> pick_gguf_file(const std::vector<std::string>& files, const HfModelId& id);

}  // namespace zl
