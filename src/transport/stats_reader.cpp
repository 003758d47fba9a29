#include "transport/stats_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/seqlock.h"
#include "transport/shm_segment.h"

namespace zl {
namespace {

constexpr int kMaxTries = 10000;  // a section is rewritten in about a microsecond

Status check_equal(const char* field, uint64_t value, uint64_t expected) {
  if (value != expected) return invalid_argument("stats region: ", field, " is ", value, ", this build expects ", expected);
  return ok_status();
}

Status check_section(const char* name, const zl_stats_section& s, const void* member, const zl_stats_region& r,
                     uint64_t expected_bytes) {
  const uint64_t expected_offset =
      uint64_t(static_cast<const uint8_t*>(member) - reinterpret_cast<const uint8_t*>(&r));
  if (s.offset != expected_offset || s.bytes != expected_bytes)
    return invalid_argument("stats region: section ", name, " is at ", s.offset, " (", s.bytes,
                            " bytes); this build expects ", expected_offset, " (", expected_bytes, " bytes)");
  return ok_status();
}

template <typename T>
Status read_section(const char* name, const T& shared, T* out) {
  if (!seqlock_read(&shared, out, sizeof(T), kMaxTries))
    return internal_error("stats region: section ", name, " stayed busy (its writer may be stuck)");
  return ok_status();
}

template <size_t N>
void terminate(char (&text)[N]) {
  text[N - 1] = '\0';
}

Status read_histograms(const zl_stats_region& r, StatsSnapshot* out) {
  auto copy = std::make_unique<zl_stats_histogram>();
  for (uint32_t i = 0; i < ZL_STATS_NUM_HISTOGRAMS; ++i) {
    ZL_RETURN_IF_ERROR(read_section("histograms", r.histograms[i], copy.get()));
    uint64_t total = 0;
    for (uint64_t n : copy->buckets) total += n;
    if (total != copy->count)
      return data_loss("stats region: histogram ", i, " has ", total, " values in its buckets but count ", copy->count);
    out->histograms.push_back(Histogram::from_buckets(std::span<const uint64_t, ZL_STATS_HISTOGRAM_BUCKETS>(copy->buckets),
                                                      copy->count, copy->sum, copy->max));
  }
  return ok_status();
}

bool valid_record(const zl_stats_request& q) {
  return q.transport <= ZL_STATS_TRANSPORT_SHM && q.finish_reason <= 3 &&
         q.delivered_ns >= q.finished_ns && q.num_prompt_tokens >= 0 && q.num_generated_tokens >= 0;
}

void read_requests(const zl_stats_request_ring& ring, StatsSnapshot* out) {
  const uint64_t next = __atomic_load_n(&ring.next_position, __ATOMIC_ACQUIRE);
  const uint64_t first = next > ZL_STATS_REQUEST_RING_SLOTS ? next - ZL_STATS_REQUEST_RING_SLOTS : 0;
  zl_stats_request record{};
  for (uint64_t p = first; p < next; ++p) {
    const zl_stats_request& slot = ring.records[p % ZL_STATS_REQUEST_RING_SLOTS];
    if (!seqlock_read(&slot, &record, sizeof(record), 16) || record.position != p || !valid_record(record)) {
      out->num_requests_dropped++;  // overwritten by a newer one meanwhile, or malformed
      continue;
    }
    out->requests.push_back(record);
  }
}

}  // namespace

Status check_stats_region(const void* region, uint64_t bytes) {
  if (bytes < sizeof(zl_stats_header))
    return invalid_argument("stats region: ", bytes, " bytes is shorter than its header (", sizeof(zl_stats_header), ")");
  const auto& r = *static_cast<const zl_stats_region*>(region);
  const zl_stats_header& h = r.header;
  const uint64_t magic = __atomic_load_n(&h.magic, __ATOMIC_ACQUIRE);
  if (magic == 0) return not_found("stats region: not formatted yet (the server is starting)");
  if (magic != ZL_STATS_MAGIC) return invalid_argument("stats region: bad magic ", magic, " (not a zerolayer stats region)");
  if (h.version != ZL_STATS_VERSION)
    return invalid_argument("stats region: version ", h.version, "; this zerolayer reads version ", ZL_STATS_VERSION,
                            " (use the monitor of the server's build)");
  ZL_RETURN_IF_ERROR(check_equal("header_bytes", h.header_bytes, sizeof(zl_stats_header)));
  if (h.total_bytes > bytes || h.total_bytes < sizeof(zl_stats_region))
    return invalid_argument("stats region: total_bytes is ", h.total_bytes, " but ", bytes, " bytes are mapped and the layout needs ",
                            sizeof(zl_stats_region));
  ZL_RETURN_IF_ERROR(check_equal("num_histograms", h.num_histograms, ZL_STATS_NUM_HISTOGRAMS));
  ZL_RETURN_IF_ERROR(check_equal("histogram_buckets", h.histogram_buckets, ZL_STATS_HISTOGRAM_BUCKETS));
  ZL_RETURN_IF_ERROR(check_equal("histogram_sub_bits", h.histogram_sub_bits, ZL_STATS_HISTOGRAM_SUB_BITS));
  ZL_RETURN_IF_ERROR(check_equal("max_signatures", h.max_signatures, ZL_STATS_MAX_SIGNATURES));
  ZL_RETURN_IF_ERROR(check_equal("request_ring_slots", h.request_ring_slots, ZL_STATS_REQUEST_RING_SLOTS));
  ZL_RETURN_IF_ERROR(check_equal("max_prefill_chunks", h.max_prefill_chunks, ZL_STATS_MAX_PREFILL_CHUNKS));
  ZL_RETURN_IF_ERROR(check_equal("max_decode_steps", h.max_decode_steps, ZL_STATS_MAX_DECODE_STEPS));
  ZL_RETURN_IF_ERROR(check_section("config", h.config, &r.config, r, sizeof(r.config)));
  ZL_RETURN_IF_ERROR(check_section("counters", h.counters, &r.counters, r, sizeof(r.counters)));
  ZL_RETURN_IF_ERROR(check_section("signatures", h.signatures, &r.signatures, r, sizeof(r.signatures)));
  ZL_RETURN_IF_ERROR(check_section("requests", h.requests, &r.requests, r, sizeof(r.requests)));
  for (uint32_t i = 0; i < ZL_STATS_NUM_HISTOGRAMS; ++i)
    ZL_RETURN_IF_ERROR(check_section("histograms", h.histograms[i], &r.histograms[i], r, sizeof(r.histograms[i])));
  return ok_status();
}

StatusOr<StatsSnapshot> read_stats_region(const void* region) {
  const auto& r = *static_cast<const zl_stats_region*>(region);
  StatsSnapshot out;
  ZL_RETURN_IF_ERROR(read_section("config", r.config, &out.config));
  terminate(out.config.model);
  terminate(out.config.cache_policy);
  terminate(out.config.weight_format);
  terminate(out.config.device);
  ZL_RETURN_IF_ERROR(read_section("counters", r.counters, &out.counters));
  ZL_RETURN_IF_ERROR(read_histograms(r, &out));
  auto signatures = std::make_unique<zl_stats_signatures>();
  ZL_RETURN_IF_ERROR(read_section("signatures", r.signatures, signatures.get()));
  if (signatures->num_entries > ZL_STATS_MAX_SIGNATURES)
    return invalid_argument("stats region: signatures.num_entries is ", signatures->num_entries, ", beyond ",
                            ZL_STATS_MAX_SIGNATURES);
  out.signatures.assign(signatures->entries, signatures->entries + signatures->num_entries);
  std::stable_sort(out.signatures.begin(), out.signatures.end(),
                   [](const zl_stats_signature& a, const zl_stats_signature& b) { return a.hits > b.hits; });
  read_requests(r.requests, &out);
  out.read_ns = shm::now_ns();
  return out;
}

StatsReader::~StatsReader() {
  if (region_ != nullptr) munmap(region_, region_bytes_);
  if (header_ != nullptr) munmap(header_, ZL_SHM_HEADER_BYTES);
}

StatusOr<std::unique_ptr<StatsReader>> StatsReader::open(const std::string& name) {
  ZL_RETURN_IF_ERROR(check_shm_name(name));
  int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) {
    if (errno == ENOENT)
      return not_found("no zerolayer server at ", name, " (no such shared-memory segment); start one with "
                       "`zerolayer serve --shm-name ", name, "`");
    return invalid_argument("shm_open(", name, "): ", std::strerror(errno));
  }
  std::unique_ptr<StatsReader> reader(new StatsReader());
  reader->name_ = name;
  struct stat st;
  Status status = ok_status();
  if (fstat(fd, &st) != 0) {
    status = internal_error("fstat(", name, "): ", std::strerror(errno));
  } else if (uint64_t(st.st_size) < ZL_SHM_HEADER_BYTES) {
    status = invalid_argument(name, " is ", st.st_size, " bytes, too small for a zerolayer segment (the server may be starting)");
  } else if (void* p = mmap(nullptr, ZL_SHM_HEADER_BYTES, PROT_READ, MAP_SHARED, fd, 0); p == MAP_FAILED) {
    status = internal_error("mmap(", name, "): ", std::strerror(errno));
  } else {
    reader->header_ = p;
    // One private copy: the server's clients can rewrite the shared header.
    zl_shm_header h;
    if (!shm::snapshot_header(p, &h)) {
      status = not_found(name, " has no zerolayer header (not a zerolayer segment, or its server is starting)");
    } else if (h.version != ZL_SHM_VERSION) {
      status = invalid_argument(name, " speaks shared-memory protocol version ", h.version, "; this zerolayer reads version ",
                                ZL_SHM_VERSION);
    } else if (const char* why = shm::Layout::check(h, uint64_t(st.st_size))) {
      status = invalid_argument(name, ": ", why);
    } else if (h.stats_bytes == 0) {
      status = not_found("the server of ", name, " publishes no stats region (an older zerolayer?)");
    } else if (void* s = mmap(nullptr, h.stats_bytes, PROT_READ, MAP_SHARED, fd, off_t(h.stats_offset)); s == MAP_FAILED) {
      status = internal_error("mmap of ", name, "'s stats region: ", std::strerror(errno));
    } else {
      reader->region_ = s;
      reader->region_bytes_ = h.stats_bytes;
      status = check_server_alive(h, name);
      if (status.ok()) status = check_stats_region(s, h.stats_bytes).with_prefix(name);
    }
  }
  close(fd);
  if (!status.ok()) return status;
  return reader;
}

StatusOr<StatsSnapshot> StatsReader::read() const {
  ZL_RETURN_IF_ERROR(check_server_alive(*static_cast<const zl_shm_header*>(header_), name_));
  return read_stats_region(region_);
}

}  // namespace zl
