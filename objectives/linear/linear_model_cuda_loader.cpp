// The linear models' CUDA engine in a CUDA build: made by libstale_cuda.so
// (src/backend/cuda_plugin.hpp), which is opened on first use.
#include "objectives/linear/linear_cuda_engine.hpp"
#include "src/backend/cuda_plugin.hpp"

namespace stale {

std::unique_ptr<LinearCudaEngine> make_linear_cuda_engine(const LinearCudaData& data, LinearLoss loss,
                                                          Precision precision) {
  using Fn = void (*)(const LinearCudaData*, LinearLoss, Precision, std::unique_ptr<LinearCudaEngine>*);
  std::unique_ptr<LinearCudaEngine> out;
  cuda_plugin_function<Fn>("stale_plugin_make_linear_cuda_engine")(&data, loss, precision, &out);
  return out;
}

CudaDeviceLimits measure_cuda_device_limits() {
  using Fn = void (*)(CudaDeviceLimits*);
  CudaDeviceLimits out;
  cuda_plugin_function<Fn>("stale_plugin_measure_cuda_device_limits")(&out);
  return out;
}

}  // namespace stale
