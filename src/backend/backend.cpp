#include "src/backend/backend.hpp"

#include "src/core/error.hpp"

namespace stale {

BackendKind resolve_backend(const std::string& name) {
  if (name == "cpu") return BackendKind::Cpu;
  if (name == "cuda") {
    if (cuda_device_count() == 0)
      throw UserError("config: backend = \"cuda\" is not available: " + cuda_unavailable_reason() +
                      " (use backend = \"cpu\" or \"auto\")");
    return BackendKind::Cuda;
  }
  if (name == "auto") return cuda_device_count() > 0 ? BackendKind::Cuda : BackendKind::Cpu;
  throw UserError("config: backend = \"" + name + "\" is not valid; choose one of: auto, cpu, cuda");
}

std::string backend_name(BackendKind kind) { return kind == BackendKind::Cuda ? "cuda" : "cpu"; }

}  // namespace stale
