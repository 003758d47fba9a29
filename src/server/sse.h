// Framing for streamed responses: an SSE event ("data: <payload>\n\n") inside
// one HTTP/1.1 chunk ("<hex size>\r\n<bytes>\r\n"), and the stream's ends.
// Both layers are written by hand so one event costs one small string and
// the socket sees it as one write.
#pragma once

#include <string>
#include <string_view>

namespace zl::server {

// The response head of an SSE stream (chunked, kept alive), with
// `extra_headers` ("Name: value\r\n" lines) before its end.
std::string sse_response_head(std::string_view extra_headers = {});
// One SSE event carrying `payload` (JSON), framed as one HTTP chunk.
std::string sse_chunk(std::string_view payload);
// Events already written out ("event: ...\ndata: ...\n\n"), as one HTTP chunk;
// none ("") as nothing, never the zero-length chunk that ends the response.
std::string http_chunk(std::string_view events);
// The terminal "data: [DONE]" event, framed as one HTTP chunk.
std::string sse_done_chunk();
// The zero-length chunk that ends the HTTP response.
std::string_view http_last_chunk();

}  // namespace zl::server
