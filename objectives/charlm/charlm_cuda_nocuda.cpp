// The CUDA twin of the character-level GPT in a build without nvcc: its factory and the
// GEMM peak probe say so (charlm_cuda_engine.cu and cuda_gemm_peak.cu are the real ones).
#include "objectives/charlm/charlm_cuda_engine.hpp"
#include "src/backend/backend.hpp"
#include "src/core/error.hpp"

namespace stale {

bool charlm_cuda_compiled() { return false; }

std::unique_ptr<CharLmCudaEngine> make_charlm_cuda_engine(const CharLmCudaShape&, const CharLmCudaLayout&, CharLmCudaPrecision) {
  throw UserError("backend cuda: " + cuda_unavailable_reason());
}

double cuda_sgemm_flops(int, bool) { throw UserError("cuda_sgemm_flops: " + cuda_unavailable_reason()); }

}  // namespace stale
