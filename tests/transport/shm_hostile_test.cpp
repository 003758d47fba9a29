// A client that writes where it should not: the segment header rewritten
// under a running server (which must neither crash nor follow the new
// offsets), and a foreign file at the server's name (which is not ours to
// delete).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "shm_test_util.h"

namespace zl::test {
namespace {

// The segment `name` mapped read-write, as any client maps it.
struct Mapping {
  explicit Mapping(const std::string& name, size_t bytes) : bytes(bytes) {
    int fd = shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) return;
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p != MAP_FAILED) base = static_cast<uint8_t*>(p);
  }
  ~Mapping() {
    if (base) munmap(base, bytes);
  }
  zl_shm_header& header() const { return *reinterpret_cast<zl_shm_header*>(base); }
  uint8_t* base = nullptr;
  size_t bytes;
};

TEST(ShmHostile, HeaderRewrittenByAClientCrashesNothingAndIsRestored) {
  std::unique_ptr<Engine> engine = make_tiny_engine();
  ASSERT_NE(engine, nullptr);
  const std::string name = unique_shm_name("hostile");
  auto server = ShmServer::start(*engine, {name, 16 << 20});
  ASSERT_TRUE(server.ok()) << server.status().message();
  zl_client* client = nullptr;
  ASSERT_EQ(zl_client_connect(name.c_str(), &client), ZL_OK) << zl_client_last_error(nullptr);

  Mapping m(name, ZL_SHM_HEADER_BYTES);
  ASSERT_NE(m.base, nullptr);
  // Offsets far outside the mapping, counts that index past the tables.
  zl_shm_header& h = m.header();
  h.client_table_offset = 1ull << 40;
  h.request_ring_offset = 1ull << 40;
  h.response_rings_offset = 1ull << 40;
  h.num_clients = 1u << 20;
  h.request_ring_slots = 1u << 30;
  h.response_ring_slots = 1u << 30;
  h.max_inflight_per_client = UINT32_MAX;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // several monitor ticks

  // The server still serves the connected client, from its own copy of the layout.
  std::vector<int32_t> prompt = {3, 1, 4, 1, 5};
  zl_request request = greedy_request(prompt, 8);
  uint64_t id = 0;
  ASSERT_EQ(zl_client_submit(client, &request, &id), ZL_OK) << zl_client_last_error(client);
  ShmResult result = read_until_terminal(client, id);
  ASSERT_EQ(result.status, ZL_OK);
  EXPECT_EQ(result.tokens.size(), 8u);
  EXPECT_EQ(result.num_terminal, 1);

  // ... and has put the header back, so new clients connect.
  EXPECT_GE((*server)->stats().num_header_repairs, 1);
  EXPECT_LT(h.request_ring_offset, 16u << 20);
  zl_client* second = nullptr;
  ASSERT_EQ(zl_client_connect(name.c_str(), &second), ZL_OK) << zl_client_last_error(nullptr);
  zl_client_close(second);
  zl_client_close(client);
}

// The trust boundary is the user id (shm_protocol.h, "Trust"): the segment
// must admit no one but the server's user, whatever the umask.
TEST(ShmHostile, SegmentAdmitsOnlyTheServersUser) {
  std::unique_ptr<Engine> engine = make_tiny_engine();
  ASSERT_NE(engine, nullptr);
  const std::string name = unique_shm_name("mode");
  const mode_t old_umask = umask(0);
  auto server = ShmServer::start(*engine, {name, 16 << 20});
  umask(old_umask);
  ASSERT_TRUE(server.ok()) << server.status().message();
  int fd = shm_open(name.c_str(), O_RDONLY, 0);
  ASSERT_GE(fd, 0);
  struct stat st {};
  ASSERT_EQ(fstat(fd, &st), 0);
  close(fd);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, geteuid());
}

TEST(ShmHostile, ForeignSegmentAtTheNameIsRefusedAndKept) {
  std::unique_ptr<Engine> engine = make_tiny_engine();
  ASSERT_NE(engine, nullptr);
  for (char fill : {'x', '\0'}) {  // someone's data; a zero-filled segment
    const std::string name = unique_shm_name("foreign");
    int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    ASSERT_GE(fd, 0);
    std::string bytes(8192, fill);
    ASSERT_EQ(write(fd, bytes.data(), bytes.size()), ssize_t(bytes.size()));
    close(fd);

    auto server = ShmServer::start(*engine, {name, 16 << 20});
    ASSERT_FALSE(server.ok());
    const std::string message = server.status().message();
    EXPECT_NE(message.find("not a zerolayer segment"), std::string::npos) << message;
    EXPECT_NE(message.find(name), std::string::npos) << message;

    Mapping m(name, bytes.size());
    ASSERT_NE(m.base, nullptr) << "the foreign segment was removed";
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(m.base), bytes.size()), bytes);
    shm_unlink(name.c_str());
  }
}

TEST(ShmHostile, EmptyLeftoverIsReplaced) {
  std::unique_ptr<Engine> engine = make_tiny_engine();
  ASSERT_NE(engine, nullptr);
  const std::string name = unique_shm_name("empty");
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  auto server = ShmServer::start(*engine, {name, 16 << 20});
  ASSERT_TRUE(server.ok()) << server.status().message();
  zl_client* client = nullptr;
  ASSERT_EQ(zl_client_connect(name.c_str(), &client), ZL_OK) << zl_client_last_error(nullptr);
  zl_client_close(client);
}

}  // namespace
}  // namespace zl::test
