// The stats region's reader: a region formatted by the engine's publisher
// reads back; short, malformed or foreign regions are rejected with the field
// named; torn or bogus records are dropped, never shown.
#include "transport/stats_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/seqlock.h"
#include "engine/stats_publisher.h"
#include "zerolayer/shm_protocol.h"

namespace zl {
namespace {

class StatsReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    zl_stats_config config{};
    std::strcpy(config.model, "dummy:tiny");
    std::strcpy(config.cache_policy, "paged");
    config.block_size = 16;
    auto publisher = StatsPublisher::create(memory_.data(), bytes(), config);
    ASSERT_TRUE(publisher.ok()) << publisher.status().message();
  }
  zl_stats_region& region() { return *reinterpret_cast<zl_stats_region*>(memory_.data()); }
  size_t bytes() const { return memory_.size() * sizeof(uint64_t); }
  void expect_rejected(const std::string& needle, uint64_t mapped = 0) {
    Status status = check_stats_region(memory_.data(), mapped ? mapped : bytes());
    ASSERT_FALSE(status.ok()) << needle;
    EXPECT_NE(status.message().find(needle), std::string::npos) << status.message();
  }
  // Writes one ring record at `position`, as the engine's RequestLog does.
  void put_record(uint64_t position, uint32_t finish_reason) {
    zl_stats_request& slot = region().requests.records[position % ZL_STATS_REQUEST_RING_SLOTS];
    seqlock_write_begin(slot.sequence);
    slot.position = position;
    slot.request_id = position + 100;
    slot.finish_reason = finish_reason;
    seqlock_write_end(slot.sequence);
    region().requests.next_position = position + 1;
  }

  std::vector<uint64_t> memory_ = std::vector<uint64_t>(ZL_STATS_REGION_BYTES / sizeof(uint64_t), 0xdead);
};

TEST_F(StatsReaderTest, FormattedRegionReadsBack) {
  ASSERT_TRUE(check_stats_region(memory_.data(), bytes()).ok());
  auto snapshot = read_stats_region(memory_.data());
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().message();
  EXPECT_STREQ(snapshot->config.model, "dummy:tiny");
  EXPECT_STREQ(snapshot->config.cache_policy, "paged");
  EXPECT_EQ(snapshot->config.block_size, 16);
  EXPECT_EQ(snapshot->histograms.size(), size_t(ZL_STATS_NUM_HISTOGRAMS));
  EXPECT_EQ(snapshot->histograms[0].count(), 0u);  // the old contents (0xdead...) were cleared
  EXPECT_TRUE(snapshot->requests.empty());
  EXPECT_TRUE(snapshot->signatures.empty());
}

TEST_F(StatsReaderTest, ShortOrForeignRegionsAreRejected) {
  expect_rejected("shorter than its header", sizeof(zl_stats_header) - 8);
  expect_rejected("total_bytes", sizeof(zl_stats_region) - 8);
  region().header.version = ZL_STATS_VERSION + 1;
  expect_rejected("version 2");
  region().header.version = ZL_STATS_VERSION;
  region().header.histogram_buckets = 512;
  expect_rejected("histogram_buckets is 512");
  region().header.histogram_buckets = ZL_STATS_HISTOGRAM_BUCKETS;
  region().header.counters.offset += 8;
  expect_rejected("section counters");
  region().header.counters.offset -= 8;
  region().header.magic = 0x1234;
  expect_rejected("bad magic");
  region().header.magic = 0;
  expect_rejected("not formatted yet");
  region().header.magic = ZL_STATS_MAGIC;
  EXPECT_TRUE(check_stats_region(memory_.data(), bytes()).ok());
}

TEST_F(StatsReaderTest, InconsistentSectionsAreErrors) {
  region().histograms[3].count = 5;  // buckets hold none
  auto snapshot = read_stats_region(memory_.data());
  ASSERT_FALSE(snapshot.ok());
  EXPECT_NE(snapshot.status().message().find("histogram 3"), std::string::npos) << snapshot.status().message();
  region().histograms[3].count = 0;
  region().signatures.num_entries = ZL_STATS_MAX_SIGNATURES + 1;
  snapshot = read_stats_region(memory_.data());
  ASSERT_FALSE(snapshot.ok());
  EXPECT_NE(snapshot.status().message().find("num_entries"), std::string::npos) << snapshot.status().message();
  region().signatures.num_entries = 0;
  seqlock_write_begin(region().counters.lock.sequence);  // a writer that died inside
  snapshot = read_stats_region(memory_.data());
  ASSERT_FALSE(snapshot.ok());
  EXPECT_NE(snapshot.status().message().find("counters"), std::string::npos) << snapshot.status().message();
}

TEST_F(StatsReaderTest, RingKeepsTheLastRecordsAndDropsBadOnes) {
  const uint64_t n = ZL_STATS_REQUEST_RING_SLOTS;
  for (uint64_t p = 0; p < n + 10; ++p) put_record(p, ZL_SHM_FINISH_LENGTH);
  put_record(n + 10, 7);  // no such finish reason
  region().requests.records[(n + 3) % n].position = 3;  // a slot claiming an overwritten position
  auto snapshot = read_stats_region(memory_.data());
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().message();
  ASSERT_EQ(snapshot->requests.size(), size_t(n - 2));
  EXPECT_EQ(snapshot->num_requests_dropped, 2u);
  EXPECT_EQ(snapshot->requests.front().position, 11u);  // oldest first
  EXPECT_EQ(snapshot->requests.back().position, n + 9);
  EXPECT_EQ(snapshot->requests.back().request_id, n + 109);
}

TEST(StatsReader, MissingServerIsAClearError) {
  auto reader = StatsReader::open("/zl_test_no_such_server");
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(reader.status().message().find("no zerolayer server at /zl_test_no_such_server"), std::string::npos)
      << reader.status().message();
  reader = StatsReader::open("no-slash");
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(reader.status().message().find("shm name"), std::string::npos) << reader.status().message();
}

}  // namespace
}  // namespace zl
