// Linked instead of linear_model_cuda.cu when the build has no CUDA compiler: the cuda
// objectives exist as a name only, and asking for one says why it cannot be had.
#include "objectives/linear/linear_cuda_engine.hpp"
#include "src/backend/backend.hpp"
#include "src/core/error.hpp"

namespace stale {

std::unique_ptr<LinearCudaEngine> make_linear_cuda_engine(const LinearCudaData&, LinearLoss, Precision) {
  throw UserError("backend cuda: " + cuda_unavailable_reason());
}

CudaDeviceLimits measure_cuda_device_limits() { throw UserError("backend cuda: " + cuda_unavailable_reason()); }

}  // namespace stale
