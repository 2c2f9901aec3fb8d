#pragma once
// Where objectives evaluate (docs/design.md "Backend"). The backend is a value passed to the
// objective factory, never an #ifdef inside an algorithm: a build without nvcc links
// cuda_runtime_nocuda.cpp, whose functions report "built without CUDA".
#include <string>
#include <vector>

namespace stale {

enum class BackendKind { Cpu, Cuda };

struct DeviceInfo {
  int index = 0;
  std::string name;
  size_t memory_bytes = 0;
  int cc_major = 0, cc_minor = 0;
  int multiprocessors = 0;
};

// true when this binary was built with the CUDA backend
bool cuda_compiled();
// number of usable devices (0 when not compiled, no driver, or no GPU: never throws)
int cuda_device_count();
std::vector<DeviceInfo> cuda_devices();
// why no device is usable, for messages ("built without CUDA", "no CUDA device: …")
std::string cuda_unavailable_reason();

// "auto" | "cpu" | "cuda" → kind; "cuda" without a usable device is a UserError that says why
BackendKind resolve_backend(const std::string& name);
std::string backend_name(BackendKind kind);

}  // namespace stale
