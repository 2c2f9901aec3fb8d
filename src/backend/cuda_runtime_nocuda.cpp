// Linked when the build has no CUDA compiler: the cuda backend exists as a name only.
#include "src/backend/backend.hpp"

namespace stale {

bool cuda_compiled() { return false; }
int cuda_device_count() { return 0; }
std::vector<DeviceInfo> cuda_devices() { return {}; }
std::string cuda_unavailable_reason() { return "built without CUDA (no nvcc at configure time, or STALE_CUDA=OFF)"; }

}  // namespace stale
