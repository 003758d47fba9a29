// The access log's line and the headers that travel with a request:
// X-Request-Id, W3C traceparent and CORS origins.
#include "server/access_log.h"

#include <gtest/gtest.h>

namespace zl::server {
namespace {

TEST(AccessLog, RequestIdIsVisibleAsciiOfBoundedLength) {
  EXPECT_EQ(valid_request_id("abc-123"), "abc-123");
  EXPECT_EQ(valid_request_id(std::string(128, 'x')), std::string(128, 'x'));
  EXPECT_EQ(valid_request_id(std::string(129, 'x')), "");
  EXPECT_EQ(valid_request_id(""), "");
  EXPECT_EQ(valid_request_id("a b"), "");     // a space would split the log line
  EXPECT_EQ(valid_request_id("a\r\nb"), "");  // nor may a header be injected
  EXPECT_EQ(valid_request_id("\xc3\xa9"), "");
}

TEST(AccessLog, TraceparentFollowsW3C) {
  std::string trace, parent;
  ASSERT_TRUE(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", trace, parent));
  EXPECT_EQ(trace, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(parent, "00f067aa0ba902b7");
  for (const char* bad : {"", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
                          "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   // uppercase
                          "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   // zero trace id
                          "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   // zero parent id
                          "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // version ff
                          "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}) {
    std::string t, p;
    EXPECT_FALSE(parse_traceparent(bad, t, p)) << bad;
    EXPECT_TRUE(t.empty());
  }
}

TEST(AccessLog, LineNamesTokensTimesAndIds) {
  AccessRecord r;
  r.method = "POST";
  r.path = "/v1/completions";
  r.peer = "127.0.0.1:5000";
  r.request_id = "req-1";
  r.status = 200;
  r.usage = AccessUsage{true, 12, 34, 0.0156};
  EXPECT_EQ(access_log_line(r, 0.2104),
            "POST /v1/completions 200 in=12 out=34 ttft_ms=15.6 total_ms=210.4 id=req-1 peer=127.0.0.1:5000");
  r.usage = AccessUsage{};
  r.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  r.parent_id = "00f067aa0ba902b7";
  r.status = 404;
  EXPECT_EQ(access_log_line(r, 0.001),
            "POST /v1/completions 404 total_ms=1.0 id=req-1 trace=4bf92f3577b34da6a3ce929d0e0e4736 "
            "parent=00f067aa0ba902b7 peer=127.0.0.1:5000");
}

TEST(AccessLog, OnlyListedOriginsAreAllowed) {
  const std::vector<std::string> listed{"http://a.test", "https://b.test"};
  EXPECT_EQ(allowed_origin(listed, "http://a.test"), "http://a.test");
  EXPECT_EQ(allowed_origin(listed, "http://b.test"), "");  // the scheme counts
  EXPECT_EQ(allowed_origin(listed, ""), "");
  EXPECT_EQ(allowed_origin({}, "http://a.test"), "");
  EXPECT_EQ(allowed_origin({"*"}, "http://any.test"), "*");
  HttpHeaders h = preflight_headers("");
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[1].second, "Authorization, Content-Type, X-Request-Id");
  EXPECT_EQ(preflight_headers("x-custom")[1].second, "x-custom");
}

}  // namespace
}  // namespace zl::server
