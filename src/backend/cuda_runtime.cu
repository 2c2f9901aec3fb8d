// Device discovery through the CUDA runtime. A machine without a GPU (or without a driver)
// makes cudaGetDeviceCount return an error: that reads as "no device", never as a failure.
#include <cuda_runtime.h>

#include "src/backend/backend.hpp"

namespace stale {

namespace {
cudaError_t probe(int& count) {
  static cudaError_t rc = cudaGetDeviceCount(&count);
  static int cached = count;
  count = rc == cudaSuccess ? cached : 0;
  return rc;
}
}  // namespace

bool cuda_compiled() { return true; }

int cuda_device_count() {
  int n = 0;
  return probe(n) == cudaSuccess ? n : 0;
}

std::vector<DeviceInfo> cuda_devices() {
  std::vector<DeviceInfo> out;
  const int n = cuda_device_count();
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    out.push_back({i, p.name, p.totalGlobalMem, p.major, p.minor, p.multiProcessorCount});
  }
  return out;
}

std::string cuda_unavailable_reason() {
  int n = 0;
  const cudaError_t rc = probe(n);
  if (rc != cudaSuccess) return std::string("no CUDA device (") + cudaGetErrorString(rc) + ")";
  if (n == 0) return "no CUDA device found";
  return "";
}

}  // namespace stale
