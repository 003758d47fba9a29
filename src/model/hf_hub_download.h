// Talking to the Hugging Face Hub and writing what it sends into the hub
// cache (model/hf_hub.h has the layout). The Hub is untrusted: commit hashes
// must be 40 hex digits, ETags (which become file names) plain
// [A-Za-z0-9._-], repo paths relative with no "." / ".." parts, backslashes
// or control characters, sizes plausible; a download whose ETag is a sha256
// (every LFS file) is hashed and refused on a mismatch. A file appears in a
// snapshot only once its blob is complete and verified. Downloads go to
// blobs/<etag>.incomplete and resume from its end with a Range request, under
// the same lock file huggingface_hub takes (.locks/<repo folder>/<etag>.lock).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/hf_hub.h"
#include "zerolayer/status.h"

namespace zl {

// One repo's folders in the cache.
struct HfRepoCache {
  std::string root;       // <cache>/models--ORG--NAME
  std::string locks_dir;  // <cache>/.locks/models--ORG--NAME
  std::string ref_path(const std::string& revision) const { return root + "/refs/" + revision; }
  std::string snapshot_dir(const std::string& commit) const { return root + "/snapshots/" + commit; }
  std::string blob_path(const std::string& etag) const { return root + "/blobs/" + etag; }
};
HfRepoCache hf_repo_cache(const std::string& cache_dir, const std::string& repo);

// A relative path inside a repo with nothing that could leave its folder.
bool is_safe_repo_path(std::string_view path);
bool is_commit_hash(std::string_view text);  // 40 lower-case hex digits
std::string sha256_hex(std::string_view bytes);  // 64 lower-case hex digits: the ETag of an LFS file

// What GET {endpoint}/api/models/{repo}/revision/{revision} says.
struct HfRepoInfo {
  std::string commit;              // the revision's commit
  std::vector<std::string> files;  // every file's path, sorted
};
StatusOr<HfRepoInfo> fetch_hf_repo_info(const HfModelId& id, const HfHubOptions& options);

// Makes snapshots/<commit>/<path> of the cache, downloading its blob from
// {endpoint}/{repo}/resolve/{commit}/{path} unless the blob is there already.
Status download_hf_file(const HfRepoCache& cache, const HfModelId& id, const std::string& commit,
                        const std::string& path, const HfHubOptions& options);

// refs/<revision> := commit (written whole, then renamed into place).
Status write_hf_ref(const HfRepoCache& cache, const std::string& revision, const std::string& commit);

}  // namespace zl
