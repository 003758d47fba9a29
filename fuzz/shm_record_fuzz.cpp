// A shared-memory request record as the server's reader takes it: copied
// out of its slot (a hostile payload_bytes included), then decoded and
// validated, with prompt bytes from PROMPT_PART records in front.
#include <algorithm>
#include <cstring>
#include <memory>

#include "transport/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  // First byte: how many of the remaining bytes are a prompt head (parts).
  const size_t head_bytes = std::min<size_t>(data[0], size - 1);
  std::string_view head(reinterpret_cast<const char*>(data + 1), head_bytes);
  data += 1 + head_bytes;
  size -= 1 + head_bytes;
  auto shared = std::make_unique<zl_shm_request>();
  std::memset(shared.get(), 0, sizeof(zl_shm_request));
  std::memcpy(shared.get(), data, std::min(size, sizeof(zl_shm_request)));
  auto local = std::make_unique<zl_shm_request>();
  zl::copy_request_out(*shared, local.get());
  zl::WireLimits limits;
  limits.vocab_size = 512;
  limits.max_seq_len = 256;
  zl::WireRequest request;
  (void)zl::decode_submit(*local, limits, head, &request);
  return 0;
}
