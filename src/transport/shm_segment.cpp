#include "transport/shm_segment.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <thread>

#include "core/log.h"

namespace zl {
namespace {

constexpr uint64_t kPage = 4096;

uint64_t round_up(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

uint32_t floor_pow2(uint64_t n) {
  uint32_t p = 1;
  while (uint64_t(p) * 2 <= n && p < (1u << 30)) p *= 2;
  return p;
}

bool pid_alive(int32_t pid) {
  if (pid <= 0) return false;
  return kill(pid, 0) == 0 || errno != ESRCH;  // EPERM: alive, someone else's
}

// What occupies an existing name, read without trusting its size.
enum class Occupant {
  kLive,        // a zerolayer server that is alive
  kStale,       // a zerolayer segment whose server stopped or died
  kEmpty,       // size 0: a server before its ftruncate (nothing in it to lose)
  kUnfinished,  // our header without its magic: a server mid-creation, or one that died there
  kZeroed,      // a header of zeros: a server between ftruncate and its header, or not ours
  kForeign,     // anything else: not ours to remove
};

Occupant inspect_header(const void* mapped, const std::string& name, int32_t* pid_out, std::string* why) {
  zl_shm_header h;
  if (shm::snapshot_header(mapped, &h)) {
    *pid_out = h.server_pid;
    Status alive = check_server_alive(h, name);
    *why = alive.message();
    return alive.ok() ? Occupant::kLive : Occupant::kStale;
  }
  if (h.magic == 0 && h.version == ZL_SHM_VERSION && h.header_bytes == ZL_SHM_HEADER_BYTES) {
    *why = "a zerolayer server died while creating it";
    return Occupant::kUnfinished;
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(&h);
  const bool zeroed = std::all_of(bytes, bytes + sizeof(h), [](uint8_t b) { return b == 0; });
  *why = zeroed ? "its header is all zeros: it is not a zerolayer segment" : "it is not a zerolayer segment";
  return zeroed ? Occupant::kZeroed : Occupant::kForeign;
}

Occupant inspect(const std::string& name, int32_t* pid_out, std::string* why) {
  int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) {
    if (errno == ENOENT) return Occupant::kStale;  // vanished meanwhile: create again
    *why = std::string("it cannot be read: ") + std::strerror(errno);
    return Occupant::kForeign;
  }
  struct stat st;
  Occupant result = Occupant::kForeign;
  *why = "it is not a zerolayer segment";
  if (fstat(fd, &st) != 0) {
    *why = std::string("fstat failed: ") + std::strerror(errno);
  } else if (st.st_size == 0) {
    result = Occupant::kEmpty;
    *why = "it is empty";
  } else if (uint64_t(st.st_size) >= sizeof(zl_shm_header)) {
    void* p = mmap(nullptr, sizeof(zl_shm_header), PROT_READ, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED) {
      result = inspect_header(p, name, pid_out, why);
      munmap(p, sizeof(zl_shm_header));
    }
  }
  close(fd);
  return result;
}

// An error for a name held by a live server or by something not ours.
Status refuse_occupant(Occupant occupant, const std::string& name, int32_t pid, const std::string& why) {
  if (occupant == Occupant::kLive)
    return invalid_argument("shared-memory segment ", name, " is in use by a live zerolayer server (pid ", pid,
                            "); pick another --shm-name or stop that server");
  if (occupant == Occupant::kForeign || occupant == Occupant::kZeroed)
    return invalid_argument("shared-memory name ", name, " is taken and ", why,
                            "; pick another --shm-name, or remove /dev/shm", name, " if it is garbage");
  return ok_status();
}

// Opens `name` exclusively, replacing a stale zerolayer segment once.
StatusOr<int> open_exclusive(const std::string& name) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd >= 0) return fd;
    if (errno != EEXIST) return internal_error("shm_open(", name, "): ", std::strerror(errno));
    int32_t pid = 0;
    std::string why;
    Occupant occupant = inspect(name, &pid, &why);
    if (occupant == Occupant::kEmpty || occupant == Occupant::kUnfinished || occupant == Occupant::kZeroed) {
      // Maybe a server between shm_open and its magic: give it time. Then an
      // empty or unfinished segment is a dead server's; zeros may be anyone's.
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      occupant = inspect(name, &pid, &why);
      if (occupant == Occupant::kEmpty || occupant == Occupant::kUnfinished) occupant = Occupant::kStale;
    }
    ZL_RETURN_IF_ERROR(refuse_occupant(occupant, name, pid, why));
    log_warn("shm: replacing the stale segment ", name, ": ", why);
    shm_unlink(name.c_str());
  }
  return internal_error("shared-memory segment ", name, " keeps reappearing; giving up");
}

bool names_this_segment(const std::string& name, int32_t pid, uint64_t start_ns) {
  int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) return false;
  bool same = false;
  struct stat st;
  if (fstat(fd, &st) == 0 && uint64_t(st.st_size) >= sizeof(zl_shm_header)) {
    void* p = mmap(nullptr, sizeof(zl_shm_header), PROT_READ, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED) {
      auto& other = *static_cast<zl_shm_header*>(p);
      same = other.server_pid == pid && other.server_start_ns == start_ns;
      munmap(p, sizeof(zl_shm_header));
    }
  }
  close(fd);
  return same;
}

}  // namespace

Status check_name_free(const std::string& name) {
  int32_t pid = 0;
  std::string why;
  int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) return errno == ENOENT ? ok_status() : refuse_occupant(Occupant::kForeign, name, 0, std::string("it cannot be read: ") + std::strerror(errno));
  close(fd);
  const Occupant occupant = inspect(name, &pid, &why);
  return refuse_occupant(occupant, name, pid, why);
}

Status check_server_alive(const zl_shm_header& h, const std::string& name) {
  // __atomic builtins: the header may be mapped read-only (and is const here).
  if (__atomic_load_n(&h.server_state, __ATOMIC_ACQUIRE) == ZL_SHM_SERVER_STOPPED)
    return not_found("the server of ", name, " (pid ", h.server_pid, ") has stopped");
  if (!pid_alive(h.server_pid)) return not_found("the server of ", name, " (pid ", h.server_pid, ") is gone");
  const uint64_t beat = __atomic_load_n(&h.server_heartbeat_ns, __ATOMIC_ACQUIRE);
  const uint64_t now = shm::now_ns();
  if (now > beat && now - beat >= ZL_SHM_DEAD_AFTER_NS)
    return not_found("the server of ", name, " (pid ", h.server_pid, ") has not refreshed its heartbeat for ",
                     (now - beat) / 1000000, " ms: stalled or dead");
  return ok_status();
}

Status check_shm_name(const std::string& name) {
  if (name.size() < 2 || name.size() > 200 || name[0] != '/' || name.find('/', 1) != std::string::npos)
    return invalid_argument("shm name must be '/' followed by 1-199 characters without '/', got '", name, "'");
  return ok_status();
}

StatusOr<std::unique_ptr<ShmSegment>> ShmSegment::create(const ShmSegmentConfig& config) {
  ZL_RETURN_IF_ERROR(check_shm_name(config.name));
  uint64_t clients_offset = ZL_SHM_HEADER_BYTES;
  uint64_t request_offset = round_up(clients_offset + uint64_t(config.num_clients) * ZL_SHM_CLIENT_BYTES, kPage);
  uint64_t responses_offset = request_offset + uint64_t(config.request_ring_slots) * ZL_SHM_REQUEST_SLOT_BYTES;
  uint64_t per_slot_all_clients = uint64_t(config.num_clients) * ZL_SHM_RESPONSE_SLOT_BYTES;
  constexpr uint32_t kMinResponseSlots = 64;
  // The stats region (page-aligned, after the rings) comes out of the size too.
  const uint64_t stats_bytes = ZL_STATS_REGION_BYTES;
  uint64_t min_bytes = responses_offset + kMinResponseSlots * per_slot_all_clients + kPage + stats_bytes;
  if (config.size_bytes < min_bytes)
    return invalid_argument("shm size ", config.size_bytes, " is too small: at least ", min_bytes, " bytes");
  uint64_t ring_budget = config.size_bytes - responses_offset - kPage - stats_bytes;
  uint32_t response_slots = std::min<uint32_t>(floor_pow2(ring_budget / per_slot_all_clients), 65536);
  const uint64_t stats_offset = round_up(responses_offset + uint64_t(response_slots) * per_slot_all_clients, kPage);
  uint64_t total = stats_offset + stats_bytes;

  ZL_ASSIGN_OR_RETURN(int fd, open_exclusive(config.name));
  std::unique_ptr<ShmSegment> segment(new ShmSegment());
  segment->name_ = config.name;
  if (ftruncate(fd, off_t(total)) != 0) {
    int err = errno;
    close(fd);
    shm_unlink(config.name.c_str());
    return resource_exhausted("ftruncate(", config.name, ", ", total, "): ", std::strerror(err));
  }
  void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    shm_unlink(config.name.c_str());
    return resource_exhausted("mmap(", config.name, "): ", std::strerror(errno));
  }
  segment->base_ = base;
  segment->bytes_ = total;

  // The header is composed privately and the layout taken from that copy.
  zl_shm_header h;
  std::memset(&h, 0, sizeof(h));
  h.version = ZL_SHM_VERSION;
  h.header_bytes = ZL_SHM_HEADER_BYTES;
  h.total_bytes = total;
  h.client_table_offset = clients_offset;
  h.num_clients = config.num_clients;
  h.client_bytes = ZL_SHM_CLIENT_BYTES;
  h.request_ring_offset = request_offset;
  h.request_ring_slots = config.request_ring_slots;
  h.request_slot_bytes = ZL_SHM_REQUEST_SLOT_BYTES;
  h.response_rings_offset = responses_offset;
  h.response_ring_slots = response_slots;
  h.response_slot_bytes = ZL_SHM_RESPONSE_SLOT_BYTES;
  h.response_ring_bytes = uint64_t(response_slots) * ZL_SHM_RESPONSE_SLOT_BYTES;
  h.server_pid = getpid();
  h.server_start_ns = shm::now_ns();
  h.server_heartbeat_ns = h.server_start_ns;
  h.vocab_size = config.vocab_size;
  h.max_seq_len = config.max_seq_len;
  h.max_inflight_per_client = response_slots / 2;
  h.stats_offset = stats_offset;
  h.stats_bytes = stats_bytes;
  std::memcpy(base, &h, sizeof(h));
  segment->layout_ = shm::Layout(base, h);
  segment->written_ = h;
  segment->written_.magic = ZL_SHM_MAGIC;
  for (uint64_t pos = 0; pos < config.request_ring_slots; ++pos) segment->layout_.request_slot(pos).sequence = pos;
  for (uint32_t c = 0; c < config.num_clients; ++c)
    for (uint64_t pos = 0; pos < response_slots; ++pos) segment->layout_.response_slot(c, pos).sequence = pos;
  zl_shm_header& shared = segment->layout_.header();
  shm::atomic(shared.server_state).store(ZL_SHM_SERVER_RUNNING, std::memory_order_relaxed);
  shm::atomic(shared.magic).store(ZL_SHM_MAGIC, std::memory_order_release);  // last: the segment is now valid
  return segment;
}

bool ShmSegment::repair_header() {
  // The constant fields: [magic, server_state) and [server_start_ns, pad0).
  constexpr size_t kRanges[2][2] = {{0, offsetof(zl_shm_header, server_state)},
                                    {offsetof(zl_shm_header, server_start_ns), offsetof(zl_shm_header, pad0)}};
  const auto* want = reinterpret_cast<const uint8_t*>(&written_);
  auto* shared = static_cast<uint8_t*>(base_);
  bool repaired = false;
  for (const auto& [begin, end] : kRanges) {
    if (std::memcmp(shared + begin, want + begin, end - begin) == 0) continue;
    std::memcpy(shared + begin, want + begin, end - begin);
    repaired = true;
  }
  return repaired;
}

ShmSegment::~ShmSegment() {
  if (base_ == nullptr) return;
  shm::atomic(layout_.header().server_state).store(ZL_SHM_SERVER_STOPPED, std::memory_order_release);
  // Unlink only our own segment: if ours was taken for stale (a long stall),
  // a later server owns the name now and its segment is not ours to remove.
  if (names_this_segment(name_, layout_.server_pid(), layout_.server_start_ns())) shm_unlink(name_.c_str());
  munmap(base_, bytes_);
}

}  // namespace zl
