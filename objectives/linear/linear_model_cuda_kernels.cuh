#pragma once
// The one elementwise kernel of the CUDA linear models (the nonlinearity between the two
// GEMMs), declared in plain C++ so the orchestration in linear_model_cuda.cu stays free of
// launch syntax. Shape letters as in linear_cuda_engine.hpp.
#include <cuda_runtime.h>

#include <cstdint>

namespace stale::cuda {

// For i < rows, p < cols (column stride ld in A, R, Lv):
//   c_i       = weight ? weight[i] : scale
//   R[i, p]   = ℓ'(A[i, p], y[i]) · c_i                      (skipped when R is null)
//   Lv[i, p]  = ℓ(A[i, p], y[i]) · (weight ? weight[i] : 1)  (skipped when Lv is null)
// ℓ is evaluated in double whatever T is (the shared host/device code of linear_losses.hpp,
// so both twins run the same formula); Lv stays double so loss sums lose nothing in float32.
// Loss ∈ {SquaredLoss, LogisticLoss}, T ∈ {float, double}.
template <class Loss, class T>
void launch_residual(const T* A, int64_t rows, int64_t cols, int64_t ld, const T* y, const T* weight, double scale,
                     T* R, double* Lv, cudaStream_t stream);

}  // namespace stale::cuda
