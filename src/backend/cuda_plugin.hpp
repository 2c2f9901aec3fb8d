#pragma once
// The CUDA backend lives in a plugin, libstale_cuda.so, next to the executable: linking
// cuBLAS into every process cost ~100 ms of start-up (its static initialisers and the
// relocation of ~400k pointers), paid by every `stale run` and every sweep child even on
// machines without a GPU. The plugin is opened on first use of the cuda backend only, and
// not at all when the machine has no NVIDIA driver.
//
// The plugin exports extern "C" entry points `stale_plugin_<function>` (the *_plugin_entry.cu
// files); the *_cuda_loader.cpp files define the backend's C++ functions in the executable by
// forwarding to them. A build without nvcc links the *_nocuda.cpp stubs instead.
#include <string>

namespace stale {

// The plugin's symbol `name`, or nullptr when the plugin cannot be used; then *why (if given)
// says why ("no NVIDIA driver on this machine", the loader's message, …).
void* cuda_plugin_symbol(const char* name, std::string* why = nullptr);

[[noreturn]] void throw_cuda_unavailable(const std::string& why);

// Calls the plugin's entry `name` as a function of type Fn; throws UserError saying why the
// cuda backend is unavailable when the plugin is not there.
template <class Fn>
Fn cuda_plugin_function(const char* name) {
  std::string why;
  void* p = cuda_plugin_symbol(name, &why);
  if (!p) throw_cuda_unavailable(why);
  return reinterpret_cast<Fn>(p);
}

}  // namespace stale
