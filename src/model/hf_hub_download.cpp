#include "model/hf_hub_download.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/check.h"
#include "core/log.h"
#include "model/hf_http.h"
#include "model/json_util.h"

namespace zl {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kMaxRepoInfoBytes = uint64_t{64} << 20;  // a repo listing 100k files is ~10 MB
constexpr size_t kMaxRepoFiles = 200000;
constexpr size_t kMaxRepoPathBytes = 1024;
constexpr uint64_t kMaxFileBytes = uint64_t{1} << 44;  // 16 TiB: more is a lie
constexpr int kMaxAttempts = 5;                        // per file; each resumes where the last broke off

bool is_hex(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// The ETag as huggingface_hub names blobs by it: W/ and quotes stripped.
std::string normalize_etag(std::string etag) {
  if (etag.starts_with("W/")) etag.erase(0, 2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return etag;
}

// An ETag becomes a file name: only plain characters, no leading dot.
bool is_safe_etag(std::string_view etag) {
  if (etag.empty() || etag.size() > 128 || etag.front() == '.') return false;
  return std::all_of(etag.begin(), etag.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '_' || c == '-';
  });
}

std::optional<uint64_t> parse_size(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  return value;
}

uint64_t file_size_or_zero(const std::string& path) {
  std::error_code ec;
  uint64_t size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) { CHECK(ctx_ && EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr)); }
  void update(std::string_view bytes) { CHECK(EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size())); }
  std::string hex_digest() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    CHECK(EVP_DigestFinal_ex(ctx_.get(), digest, &n));
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    for (unsigned int i = 0; i < n; ++i) hex += {kHex[digest[i] >> 4], kHex[digest[i] & 15]};
    return hex;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
};

// Hashes the first `num_bytes` of a file (the part an earlier attempt wrote).
Status hash_prefix(const std::string& path, uint64_t num_bytes, Sha256& sha) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buffer(size_t{1} << 20);
  while (num_bytes > 0 && in) {
    in.read(buffer.data(), static_cast<std::streamsize>(std::min<uint64_t>(buffer.size(), num_bytes)));
    auto n = static_cast<uint64_t>(in.gcount());
    if (n == 0) break;
    sha.update(std::string_view(buffer.data(), n));
    num_bytes -= n;
  }
  if (num_bytes != 0) return data_loss(path, ": cannot read back the part downloaded before");
  return ok_status();
}

std::string human_size(uint64_t bytes) {
  if (bytes < 1024) return str_cat(bytes, " B");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  for (; value >= 1024 && unit < 3; ++unit) value /= 1024;
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f %s", value, units[unit]);
  return text;
}

// A bar on stderr when it is a terminal (redrawn at most 10 times a second),
// else one log line when a file starts and one when it ends.
class DownloadProgress {
 public:
  DownloadProgress(std::string name, std::optional<uint64_t> total)
      : name_(std::move(name)), total_(total), tty_(isatty(STDERR_FILENO)), start_(Clock::now()) {}
  void begin(uint64_t done) {  // at each attempt
    done_ = first_ = done;
    start_ = Clock::now();
    if (!tty_) log_info("hub: downloading ", name_, total_ ? " (" + human_size(*total_) + ")" : "",
                        done ? str_cat(", resuming at byte ", done) : "");
  }
  void add(uint64_t n) {
    done_ += n;
    if (!tty_ || Clock::now() - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = Clock::now();
    draw();
  }
  void end() {
    double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    if (tty_) {
      draw();
      std::fprintf(stderr, "\n");
    } else {
      log_info("hub: ", name_, " done (", human_size(done_ - first_), " in ", static_cast<int>(seconds * 10) / 10.0, " s)");
    }
  }

 private:
  void draw() const {
    constexpr int kWidth = 30;
    double seconds = std::max(1e-3, std::chrono::duration<double>(Clock::now() - start_).count());
    int filled = total_ && *total_ > 0 ? static_cast<int>(std::min<uint64_t>(done_, *total_) * kWidth / *total_) : 0;
    std::string total = total_ ? human_size(*total_) : "?";
    std::fprintf(stderr, "\r%s [%.*s%*s] %s / %s, %s/s   ", name_.c_str(), filled, "##############################",
                 kWidth - filled, "", human_size(done_).c_str(), total.c_str(),
                 human_size(static_cast<uint64_t>(static_cast<double>(done_ - first_) / seconds)).c_str());
  }
  std::string name_;
  std::optional<uint64_t> total_;
  bool tty_;
  Clock::time_point start_, last_draw_{};
  uint64_t done_ = 0, first_ = 0;
};

// flock() on a lock file for the life of the object (the lock huggingface_hub's filelock takes).
class FileLock {
 public:
  static StatusOr<std::unique_ptr<FileLock>> acquire(const std::string& path) {
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return unavailable(path, ": cannot open the lock file");
    if (::flock(fd, LOCK_EX) != 0) {
      ::close(fd);
      return unavailable(path, ": cannot lock");
    }
    return std::unique_ptr<FileLock>(new FileLock(fd));
  }
  ~FileLock() { ::close(fd_); }  // closing releases the lock
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

std::string resolve_url(const HfModelId& id, const std::string& commit, const std::string& path,
                        const HfHubOptions& options) {
  return options.endpoint + "/" + id.repo + "/resolve/" + commit + "/" + url_encode(path, /*keep_slash=*/true);
}

struct FileMeta {
  std::string etag;
  std::optional<uint64_t> size;
};

// HEAD on the resolve URL, redirects not followed: the Hub's own answer names
// the blob (X-Linked-Etag on the redirect of an LFS file, ETag otherwise).
StatusOr<FileMeta> head_file(const std::string& url, const std::string& path, const HfHubOptions& options) {
  HttpRequest request;
  request.method = "HEAD";
  request.url = url;
  request.bearer_token = options.token;
  ZL_ASSIGN_OR_RETURN(HttpResponse head, http_request(request));
  if (head.status == 401 || head.status == 403 || head.status == 404)
    return not_found(path, ": HTTP ", head.status, " from ", url);
  if (head.status >= 400) return unavailable(path, ": HTTP ", head.status, " from ", url);
  FileMeta meta;
  std::string linked = head.header("x-linked-etag");
  meta.etag = normalize_etag(linked.empty() ? head.header("etag") : linked);
  if (!is_safe_etag(meta.etag))
    return data_loss(path, ": the Hub's ETag '", meta.etag.substr(0, 80), "' is missing or not a plain name");
  std::string size = head.header("x-linked-size");
  if (size.empty() && head.status == 200) size = head.header("content-length");
  if (!size.empty()) {
    meta.size = parse_size(size);
    if (!meta.size || *meta.size > kMaxFileBytes) return data_loss(path, ": the Hub's size '", size.substr(0, 40), "' is not plausible");
  }
  return meta;
}

// One GET of the blob into `partial`, from its current end. kUnavailable
// when the transfer broke off (the bytes so far stay for the next attempt).
Status fetch_into(const std::string& url, const std::string& partial, const FileMeta& meta, Sha256& sha,
                  DownloadProgress& progress, const HfHubOptions& options) {
  uint64_t offset = file_size_or_zero(partial);
  if (meta.size && offset > *meta.size) offset = 0;  // not a prefix of this blob
  HttpRequest request;
  request.url = url;
  request.bearer_token = options.token;
  request.follow_redirects = true;
  if (offset > 0) request.range = str_cat("bytes=", offset, "-");
  int fd = -1;
  uint64_t written = 0;
  HttpBodySink sink;
  sink.start = [&](const HttpResponse& head) -> Status {
    if (offset > 0 && head.status == 206) {
      if (!head.header("content-range").starts_with(str_cat("bytes ", offset, "-")))
        return data_loss(url, ": asked for bytes from ", offset, ", got Content-Range '", head.header("content-range"), "'");
      ZL_RETURN_IF_ERROR(hash_prefix(partial, offset, sha));
    } else if (head.status == 200) {
      offset = 0;  // the whole file (the Range was ignored)
    } else {
      return data_loss(url, ": unexpected HTTP ", head.status);
    }
    fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (offset == 0 ? O_TRUNC : O_APPEND), 0644);
    if (fd < 0) return unavailable(partial, ": cannot open for writing");
    progress.begin(offset);
    return ok_status();
  };
  sink.write = [&](std::string_view bytes) -> Status {
    if (meta.size && offset + written + bytes.size() > *meta.size)
      return data_loss(url, ": the download is longer than the ", *meta.size, " bytes the Hub announced");
    sha.update(bytes);
    for (size_t done = 0; done < bytes.size();) {
      ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0) return resource_exhausted(partial, ": write failed (disk full?)");
      done += static_cast<size_t>(n);
    }
    written += bytes.size();
    progress.add(bytes.size());
    return ok_status();
  };
  StatusOr<HttpResponse> response = http_request(request, sink);
  if (fd >= 0) ::close(fd);
  if (!response.ok()) return response.status();
  if (response->status == 416 && meta.size && offset == *meta.size) {  // complete already
    ZL_RETURN_IF_ERROR(hash_prefix(partial, offset, sha));
    progress.begin(offset);
    return ok_status();
  }
  if (response->status == 416) {  // a stale partial file: start over
    std::error_code ec;
    fs::remove(partial, ec);
    return unavailable(url, ": the server refused to resume (HTTP 416)");
  }
  if (response->status < 200 || response->status >= 300)
    return response->status >= 500 ? unavailable(url, ": HTTP ", response->status)
                                    : not_found(url, ": HTTP ", response->status);
  return ok_status();
}

// Downloads blobs/<etag> (checking size and sha256), resuming as needed.
Status download_blob(const std::string& url, const std::string& blob, const FileMeta& meta, const std::string& path,
                     const HfHubOptions& options) {
  const std::string partial = blob + ".incomplete";
  DownloadProgress progress(path, meta.size);
  Status status;
  std::string digest;
  for (int attempt = 1; attempt <= kMaxAttempts; ++attempt) {
    Sha256 sha;
    status = fetch_into(url, partial, meta, sha, progress, options);
    if (status.ok()) {
      digest = sha.hex_digest();
      break;
    }
    if (status.code() != StatusCode::kUnavailable) break;
    log_warn("hub: ", path, ": ", status.message(), (attempt < kMaxAttempts ? "; resuming" : ""));
  }
  std::error_code ec;
  if (!status.ok()) {
    if (status.code() == StatusCode::kDataLoss) fs::remove(partial, ec);
    return status.with_prefix(path);
  }
  progress.end();
  uint64_t size = file_size_or_zero(partial);
  if (meta.size && size != *meta.size) {
    fs::remove(partial, ec);
    return data_loss(path, ": downloaded ", size, " bytes, the Hub announced ", *meta.size);
  }
  if (meta.etag.size() == 64 && is_hex(meta.etag) && digest != meta.etag) {
    fs::remove(partial, ec);
    return data_loss(path, ": the download's sha256 is ", digest, " but the Hub says ", meta.etag,
                     "; the file was removed");
  }
  fs::rename(partial, blob, ec);
  if (ec) return unavailable(blob, ": cannot move the download into place: ", ec.message());
  return ok_status();
}

// snapshots/<commit>/<path> -> ../../blobs/<etag> (one more ../ per folder in path).
Status link_snapshot(const std::string& link, const std::string& path, const std::string& etag) {
  std::string target;
  for (size_t i = 0; i < 2 + static_cast<size_t>(std::count(path.begin(), path.end(), '/')); ++i) target += "../";
  target += "blobs/" + etag;
  std::error_code ec;
  fs::create_directories(fs::path(link).parent_path(), ec);
  fs::remove(link, ec);  // a stale or broken link
  fs::create_symlink(target, link, ec);
  if (ec) return unavailable(link, ": cannot create the snapshot link: ", ec.message());
  return ok_status();
}

}  // namespace

HfRepoCache hf_repo_cache(const std::string& cache_dir, const std::string& repo) {
  std::string folder = "models--" + repo;
  size_t slash = folder.find('/');
  if (slash != std::string::npos) folder.replace(slash, 1, "--");
  return HfRepoCache{cache_dir + "/" + folder, cache_dir + "/.locks/" + folder};
}

bool is_safe_repo_path(std::string_view path) {
  if (path.empty() || path.size() > kMaxRepoPathBytes || path.front() == '/') return false;
  for (char c : path)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '\\' || c == ':') return false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = std::min(path.find('/', start), path.size());
    std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

bool is_commit_hash(std::string_view text) { return text.size() == 40 && is_hex(text); }

std::string sha256_hex(std::string_view bytes) {
  Sha256 sha;
  sha.update(bytes);
  return sha.hex_digest();
}

StatusOr<HfRepoInfo> fetch_hf_repo_info(const HfModelId& id, const HfHubOptions& options) {
  HttpRequest request;
  request.url = options.endpoint + "/api/models/" + id.repo + "/revision/" + url_encode(id.revision, false);
  request.bearer_token = options.token;
  request.follow_redirects = true;
  ZL_ASSIGN_OR_RETURN(HttpResponse response, http_request(request, {}, kMaxRepoInfoBytes));
  if (response.status == 401 || response.status == 403 || response.status == 404) {
    return not_found("the Hub has no model ", id.repo, " at revision ", id.revision, " (HTTP ", response.status,
                     "; a gated or private model needs HF_TOKEN)");
  }
  if (response.status != 200) return unavailable(request.url, ": HTTP ", response.status);
  ZL_ASSIGN_OR_RETURN(json j, parse_json_text(response.body, request.url));
  const auto sha = j.is_object() ? j.find("sha") : j.end();
  const auto siblings = j.is_object() ? j.find("siblings") : j.end();
  if (sha == j.end() || !sha->is_string() || !is_commit_hash(sha->get<std::string>()))
    return data_loss(request.url, ": no commit hash of 40 hex digits in \"sha\"");
  if (siblings == j.end() || !siblings->is_array() || siblings->size() > kMaxRepoFiles)
    return data_loss(request.url, ": \"siblings\" is not a list of files");
  HfRepoInfo info;
  info.commit = sha->get<std::string>();
  for (const json& sibling : *siblings) {
    const auto name = sibling.is_object() ? sibling.find("rfilename") : sibling.end();
    if (name == sibling.end() || !name->is_string()) return data_loss(request.url, ": a sibling without \"rfilename\"");
    const std::string& path = name->get_ref<const std::string&>();
    if (!is_safe_repo_path(path)) return data_loss(request.url, ": refusing the unsafe file name '", path.substr(0, 200), "'");
    info.files.push_back(path);
  }
  std::sort(info.files.begin(), info.files.end());
  return info;
}

Status download_hf_file(const HfRepoCache& cache, const HfModelId& id, const std::string& commit,
                        const std::string& path, const HfHubOptions& options) {
  CHECK(is_commit_hash(commit) && is_safe_repo_path(path)) << commit << " " << path;
  const std::string link = cache.snapshot_dir(commit) + "/" + path;
  std::error_code ec;
  if (fs::is_regular_file(link, ec)) return ok_status();  // follows the link to its blob
  const std::string url = resolve_url(id, commit, path, options);
  ZL_ASSIGN_OR_RETURN(FileMeta meta, head_file(url, path, options));
  const std::string blob = cache.blob_path(meta.etag);
  fs::create_directories(cache.root + "/blobs", ec);
  if (ec) return unavailable(cache.root, ": cannot create the cache folder: ", ec.message());
  ZL_ASSIGN_OR_RETURN(auto lock, FileLock::acquire(cache.locks_dir + "/" + meta.etag + ".lock"));
  if (!fs::is_regular_file(blob, ec) || (meta.size && file_size_or_zero(blob) != *meta.size))
    ZL_RETURN_IF_ERROR(download_blob(url, blob, meta, path, options));
  return link_snapshot(link, path, meta.etag);
}

Status write_hf_ref(const HfRepoCache& cache, const std::string& revision, const std::string& commit) {
  const std::string ref = cache.ref_path(revision);
  std::error_code ec;
  fs::create_directories(fs::path(ref).parent_path(), ec);
  const std::string tmp = ref + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << commit;
    if (!out) return unavailable(tmp, ": cannot write");
  }
  fs::rename(tmp, ref, ec);
  if (ec) return unavailable(ref, ": cannot write: ", ec.message());
  return ok_status();
}

}  // namespace zl
