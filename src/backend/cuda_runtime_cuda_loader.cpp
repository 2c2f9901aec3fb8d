// The backend's device queries in a CUDA build: forwarded to libstale_cuda.so, opened on
// first use (src/backend/cuda_plugin.hpp says why it is a plugin).
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "src/backend/backend.hpp"
#include "src/backend/cuda_plugin.hpp"
#include "src/core/error.hpp"

namespace stale {

namespace {

struct Plugin {
  void* handle = nullptr;
  std::string why;
};

// A machine without the NVIDIA kernel driver cannot have a usable device: answer "no device"
// without loading cuBLAS at all. STALE_CUDA_PROBE=1 loads the plugin regardless.
bool driver_present() {
  if (const char* f = std::getenv("STALE_CUDA_PROBE"); f && std::string(f) == "1") return true;
  namespace fs = std::filesystem;
  std::error_code ec;
  return fs::exists("/proc/driver/nvidia/version", ec) || fs::exists("/dev/nvidiactl", ec) ||
         fs::exists("/dev/nvidia0", ec);
}

const Plugin& plugin() {
  static const Plugin p = [] {
    Plugin out;
    if (!driver_present()) {
      out.why = "no CUDA device (no NVIDIA driver on this machine)";
      return out;
    }
    namespace fs = std::filesystem;
    std::string path;
    if (const char* env = std::getenv("STALE_CUDA_PLUGIN")) {
      path = env;
    } else {
      std::error_code ec;
      const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
      path = ec ? std::string("libstale_cuda.so") : (exe.parent_path() / "libstale_cuda.so").string();
    }
    out.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!out.handle) {
      const char* e = dlerror();
      out.why = "the CUDA plugin " + path + " could not be loaded (" + (e ? e : "unknown error") +
                "; set STALE_CUDA_PLUGIN to its path)";
    }
    return out;
  }();
  return p;
}

}  // namespace

void* cuda_plugin_symbol(const char* name, std::string* why) {
  const Plugin& p = plugin();
  if (!p.handle) {
    if (why) *why = p.why;
    return nullptr;
  }
  void* sym = dlsym(p.handle, name);
  if (!sym && why) *why = std::string("the CUDA plugin has no entry ") + name + " (a stale plugin of another build?)";
  return sym;
}

void throw_cuda_unavailable(const std::string& why) { throw UserError("backend cuda: " + why); }

bool cuda_compiled() { return true; }

int cuda_device_count() {
  void* f = cuda_plugin_symbol("stale_plugin_cuda_device_count");
  return f ? reinterpret_cast<int (*)()>(f)() : 0;
}

std::vector<DeviceInfo> cuda_devices() {
  void* f = cuda_plugin_symbol("stale_plugin_cuda_devices");
  std::vector<DeviceInfo> out;
  if (f) reinterpret_cast<void (*)(std::vector<DeviceInfo>*)>(f)(&out);
  return out;
}

std::string cuda_unavailable_reason() {
  std::string why;
  void* f = cuda_plugin_symbol("stale_plugin_cuda_unavailable_reason", &why);
  if (!f) return why;
  std::string out;
  reinterpret_cast<void (*)(std::string*)>(f)(&out);
  return out;
}

}  // namespace stale
