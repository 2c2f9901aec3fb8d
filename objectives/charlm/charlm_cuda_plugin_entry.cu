// Entry points of libstale_cuda.so for the char-level GPT (src/backend/cuda_plugin.hpp).
#include "objectives/charlm/charlm_cuda_engine.hpp"

extern "C" {
void stale_plugin_make_charlm_cuda_engine(const stale::CharLmCudaShape* shape, const stale::CharLmCudaLayout* layout,
                                          stale::CharLmCudaPrecision precision,
                                          std::unique_ptr<stale::CharLmCudaEngine>* out) {
  *out = stale::make_charlm_cuda_engine(*shape, *layout, precision);
}
double stale_plugin_cuda_sgemm_flops(int n, bool tf32) { return stale::cuda_sgemm_flops(n, tf32); }
}
