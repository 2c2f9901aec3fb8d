// Entry points of libstale_cuda.so for the backend's device queries
// (src/backend/cuda_plugin.hpp): plain C names, C++ values through pointers.
#include "src/backend/backend.hpp"

extern "C" {
int stale_plugin_cuda_device_count() { return stale::cuda_device_count(); }
void stale_plugin_cuda_devices(std::vector<stale::DeviceInfo>* out) { *out = stale::cuda_devices(); }
void stale_plugin_cuda_unavailable_reason(std::string* out) { *out = stale::cuda_unavailable_reason(); }
}
