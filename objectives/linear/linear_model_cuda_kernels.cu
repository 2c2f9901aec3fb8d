// The elementwise kernel of the CUDA linear models (see linear_model_cuda_kernels.cuh). It is
// memory-bound and tiny next to the GEMMs around it, so it is written for clarity: one
// grid-stride loop over the r × P entries, one thread per entry, no shared memory, and so no
// reduction order to worry about (loss sums are done by a cuBLAS GEMV over Lv).
#include <algorithm>

#include "objectives/cuda/cuda_check.cuh"
#include "objectives/linear/linear_losses.hpp"
#include "objectives/linear/linear_model_cuda_kernels.cuh"

namespace stale::cuda {

namespace {

template <class Loss, class T>
__global__ void residual_kernel(const T* __restrict__ A, int64_t rows, int64_t cols, int64_t ld,
                                const T* __restrict__ y, const T* __restrict__ weight, double scale,
                                T* __restrict__ R, double* __restrict__ Lv) {
  const int64_t total = rows * cols;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += stride) {
    const int64_t i = idx % rows, p = idx / rows, at = i + p * ld;
    const double a = static_cast<double>(A[at]), yi = static_cast<double>(y[i]);
    // the CPU twin's formula and operand order: in float64 only the device's exp/log1p and
    // FMA contraction can move the last bit
    if (R) R[at] = static_cast<T>(Loss::deriv(a, yi) * (weight ? static_cast<double>(weight[i]) : scale));
    if (Lv) Lv[at] = weight ? static_cast<double>(weight[i]) * Loss::value(a, yi) : Loss::value(a, yi);
  }
}

}  // namespace

template <class Loss, class T>
void launch_residual(const T* A, int64_t rows, int64_t cols, int64_t ld, const T* y, const T* weight, double scale,
                     T* R, double* Lv, cudaStream_t stream) {
  const int64_t total = rows * cols;
  if (total == 0) return;
  constexpr int kThreads = 256;
  // enough blocks to fill any current GPU several times over; the loop covers the rest
  const int blocks = static_cast<int>(std::min<int64_t>((total + kThreads - 1) / kThreads, 8192));
  residual_kernel<Loss, T><<<blocks, kThreads, 0, stream>>>(A, rows, cols, ld, y, weight, scale, R, Lv);
  STALE_CUDA_CHECK(cudaGetLastError());
}

template void launch_residual<SquaredLoss, double>(const double*, int64_t, int64_t, int64_t, const double*,
                                                   const double*, double, double*, double*, cudaStream_t);
template void launch_residual<SquaredLoss, float>(const float*, int64_t, int64_t, int64_t, const float*, const float*,
                                                  double, float*, double*, cudaStream_t);
template void launch_residual<LogisticLoss, double>(const double*, int64_t, int64_t, int64_t, const double*,
                                                    const double*, double, double*, double*, cudaStream_t);
template void launch_residual<LogisticLoss, float>(const float*, int64_t, int64_t, int64_t, const float*,
                                                   const float*, double, float*, double*, cudaStream_t);

}  // namespace stale::cuda
