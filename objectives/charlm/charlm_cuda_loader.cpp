// The char-level GPT's CUDA engine in a CUDA build: made by libstale_cuda.so
// (src/backend/cuda_plugin.hpp), which is opened on first use.
#include "objectives/charlm/charlm_cuda_engine.hpp"
#include "src/backend/cuda_plugin.hpp"

namespace stale {

bool charlm_cuda_compiled() { return true; }

std::unique_ptr<CharLmCudaEngine> make_charlm_cuda_engine(const CharLmCudaShape& shape, const CharLmCudaLayout& layout,
                                                          CharLmCudaPrecision precision) {
  using Fn = void (*)(const CharLmCudaShape*, const CharLmCudaLayout*, CharLmCudaPrecision,
                      std::unique_ptr<CharLmCudaEngine>*);
  std::unique_ptr<CharLmCudaEngine> out;
  cuda_plugin_function<Fn>("stale_plugin_make_charlm_cuda_engine")(&shape, &layout, precision, &out);
  return out;
}

double cuda_sgemm_flops(int n, bool tf32) {
  using Fn = double (*)(int, bool);
  return cuda_plugin_function<Fn>("stale_plugin_cuda_sgemm_flops")(n, tf32);
}

}  // namespace stale
