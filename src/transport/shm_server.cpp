#include "transport/shm_server.h"

namespace zl {

// Stub so that callers compile while the transport is being written.
class ShmServer::Impl {
 public:
  std::string name;
};

StatusOr<std::unique_ptr<ShmServer>> ShmServer::start(Engine& engine, const ShmServerConfig& config) {
  return unimplemented("shared-memory transport is not built yet (", config.name, ")");
}

ShmServer::ShmServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ShmServer::~ShmServer() = default;
const std::string& ShmServer::name() const { return impl_->name; }

}  // namespace zl
