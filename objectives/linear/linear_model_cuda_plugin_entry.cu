// Entry points of libstale_cuda.so for the linear models (src/backend/cuda_plugin.hpp).
#include "objectives/linear/linear_cuda_engine.hpp"

extern "C" {
void stale_plugin_make_linear_cuda_engine(const stale::LinearCudaData* data, stale::LinearLoss loss,
                                          stale::Precision precision, std::unique_ptr<stale::LinearCudaEngine>* out) {
  *out = stale::make_linear_cuda_engine(*data, loss, precision);
}
void stale_plugin_measure_cuda_device_limits(stale::CudaDeviceLimits* out) { *out = stale::measure_cuda_device_limits(); }
}
