// A stand-in for the Hugging Face Hub on 127.0.0.1 (any free port), for the
// hub tests: GET /api/models/{repo}/revision/{rev} lists a repo's files, and
// HEAD/GET /{repo}/resolve/{commit or branch}/{path} serves one with the Hub's headers
// (ETag, or X-Linked-Etag and X-Linked-Size for LFS files), optionally as a
// 302 to /cdn/... on another origin, with Range support, and optionally cut
// short once (headers promise the whole body, the connection closes early).
// Plain blocking sockets, one connection at a time, every request logged.
// Also ScopedEnv: environment variables set for one test, restored after.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <optional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace zl::test {

// Sets or unsets variables; the destructor puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv() = default;
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else ::unsetenv(it->first.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  void set(const std::string& name, const std::string& value) {
    save(name);
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  void unset(const std::string& name) {
    save(name);
    ::unsetenv(name.c_str());
  }

 private:
  void save(const std::string& name) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

class FakeHub {
 public:
  struct File {
    std::string bytes;            // what GET sends
    std::string etag;             // as announced (quoted on the wire)
    bool lfs = false;             // announced in X-Linked-Etag / X-Linked-Size
    bool redirect = false;        // resolve answers 302 to http://localhost:PORT/cdn/...
    int64_t cut_after = -1;       // the first GET of the body stops after this many bytes
  };
  struct Request {
    std::string method, target, range, authorization;
  };

  FakeHub() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(listen_fd_, 16) != 0)
      std::abort();
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeHub() { stop(); }
  FakeHub(const FakeHub&) = delete;
  FakeHub& operator=(const FakeHub&) = delete;

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // The repo's commit for `branch` (and for the commit hash itself).
  void set_commit(const std::string& repo, const std::string& branch, const std::string& commit) {
    std::lock_guard<std::mutex> lock(mutex_);
    repos_[repo].branches[branch] = commit;
    repos_[repo].commit = commit;
  }
  void add_file(const std::string& repo, const std::string& path, File file) {
    std::lock_guard<std::mutex> lock(mutex_);
    repos_[repo].files[path] = std::move(file);
  }
  // A name the listing shows but nothing serves (e.g. "../x").
  void add_listed_name(const std::string& repo, const std::string& path) {
    std::lock_guard<std::mutex> lock(mutex_);
    repos_[repo].extra_names.push_back(path);
  }
  std::vector<Request> requests() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }
  int count(const std::string& method, const std::string& target_part) const {
    int n = 0;
    for (const Request& r : requests())
      if (r.method == method && r.target.find(target_part) != std::string::npos) ++n;
    return n;
  }

  void stop() {
    if (stopping_.exchange(true)) return;
    ::shutdown(listen_fd_, SHUT_RDWR);
    thread_.join();
    ::close(listen_fd_);
  }

 private:
  struct Repo {
    std::string commit;
    std::map<std::string, std::string> branches;
    std::map<std::string, File> files;
    std::vector<std::string> extra_names;
  };

  static std::string decode(const std::string& text) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '%' && i + 2 < text.size()) {
        out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        out += text[i];
      }
    }
    return out;
  }

  static void send_all(int fd, const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }

  void serve() {
    while (!stopping_) {
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      handle(fd);
      ::close(fd);
    }
  }

  void handle(int fd) {
    std::string head;
    char c;
    while (head.size() < 65536 && head.find("\r\n\r\n") == std::string::npos && ::recv(fd, &c, 1, 0) == 1) head += c;
    Request r;
    size_t sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
    if (sp1 == std::string::npos || sp2 == std::string::npos) return;
    r.method = head.substr(0, sp1);
    r.target = head.substr(sp1 + 1, sp2 - sp1 - 1);
    r.range = header(head, "range");
    r.authorization = header(head, "authorization");
    {
      std::lock_guard<std::mutex> lock(mutex_);
      requests_.push_back(r);
    }
    respond(fd, r);
  }

  static std::string header(const std::string& head, const std::string& name) {
    size_t pos = 0;
    while ((pos = head.find("\r\n", pos)) != std::string::npos) {
      pos += 2;
      size_t colon = head.find(':', pos), eol = head.find("\r\n", pos);
      if (colon == std::string::npos || colon > eol) continue;
      std::string key = head.substr(pos, colon - pos);
      for (char& ch : key) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (key == name) return head.substr(colon + 2, eol - colon - 2);
    }
    return "";
  }

  void respond(int fd, const Request& r) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string& t = r.target;
    if (t.starts_with("/api/models/")) return respond_info(fd, t.substr(12));
    bool cdn = t.starts_with("/cdn/");
    size_t resolve = t.find("/resolve/");
    if (resolve == std::string::npos) return send_all(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
    std::string repo_name = t.substr(cdn ? 5 : 1, resolve - (cdn ? 5 : 1));
    std::string rest = t.substr(resolve + 9);
    std::string commit = rest.substr(0, rest.find('/'));
    std::string path = decode(rest.substr(commit.size() + 1));
    auto repo = repos_.find(repo_name);
    if (repo != repos_.end() && repo->second.branches.count(commit)) commit = repo->second.branches[commit];
    if (repo == repos_.end() || repo->second.commit != commit || !repo->second.files.count(path))
      return send_all(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
    File& file = repo->second.files[path];
    std::string etag = std::string(file.lfs ? "X-Linked-Etag" : "ETag") + ": \"" + file.etag + "\"\r\n";
    if (file.lfs) etag += "X-Linked-Size: " + std::to_string(file.bytes.size()) + "\r\n";
    etag += "X-Repo-Commit: " + commit + "\r\n";
    if (file.redirect && !cdn) {
      std::string location = "http://localhost:" + std::to_string(port_) + "/cdn" + t;
      return send_all(fd, "HTTP/1.1 302 Found\r\nLocation: " + location + "\r\n" + etag + "Content-Length: 0\r\n\r\n");
    }
    if (cdn) etag = "ETag: \"cdn-etag-not-the-blob-name\"\r\n";  // a CDN's own ETag must not name the blob
    serve_body(fd, r, file, etag);
  }

  void serve_body(int fd, const Request& r, File& file, const std::string& etag) {
    size_t size = file.bytes.size(), start = 0;
    std::string status = "200 OK", extra;
    if (r.range.starts_with("bytes=")) {
      start = std::stoull(r.range.substr(6));
      if (start >= size) {
        return send_all(fd, "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */" + std::to_string(size) +
                                "\r\nContent-Length: 0\r\n\r\n");
      }
      status = "206 Partial Content";
      extra = "Content-Range: bytes " + std::to_string(start) + "-" + std::to_string(size - 1) + "/" +
              std::to_string(size) + "\r\n";
    }
    std::string head = "HTTP/1.1 " + status + "\r\n" + etag + extra + "Accept-Ranges: bytes\r\nContent-Length: " +
                       std::to_string(size - start) + "\r\n\r\n";
    if (r.method == "HEAD") return send_all(fd, head);
    std::string body = file.bytes.substr(start);
    if (file.cut_after >= 0) {
      body = body.substr(0, static_cast<size_t>(file.cut_after));
      file.cut_after = -1;  // once
    }
    send_all(fd, head + body);
  }

  void respond_info(int fd, const std::string& rest) {
    size_t at = rest.find("/revision/");
    auto repo = at == std::string::npos ? repos_.end() : repos_.find(rest.substr(0, at));
    std::string commit;
    if (repo != repos_.end()) {
      std::string rev = decode(rest.substr(at + 10));
      auto branch = repo->second.branches.find(rev);
      if (branch != repo->second.branches.end()) commit = branch->second;
      else if (rev == repo->second.commit) commit = rev;
    }
    if (commit.empty()) return send_all(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found");
    nlohmann::json siblings = nlohmann::json::array();
    for (const auto& [path, file] : repo->second.files) siblings.push_back({{"rfilename", path}});
    for (const std::string& name : repo->second.extra_names) siblings.push_back({{"rfilename", name}});
    std::string body = nlohmann::json{{"id", repo->first}, {"sha", commit}, {"siblings", siblings}}.dump();
    send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                     "\r\n\r\n" + body);
  }

  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::map<std::string, Repo> repos_;
  std::vector<Request> requests_;
};

}  // namespace zl::test
