#pragma once
// cuBLAS GEMMs in the engine's T: one overload per precision, so that the engine's code is
// written once for float and double.
#include <cublas_v2.h>

namespace stale::charlm_cuda {

// ---- cuBLAS in T

inline cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
                    const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  return cublasSgemm(h, ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc);
}
inline cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, double alpha,
                    const double* A, int lda, const double* B, int ldb, double beta, double* C, int ldc) {
  return cublasDgemm(h, ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc);
}
inline cublasStatus_t gemm_batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            float alpha, const float* A, int lda, long long sA, const float* B, int ldb, long long sB,
                            float beta, float* C, int ldc, long long sC, int count) {
  return cublasSgemmStridedBatched(h, ta, tb, m, n, k, &alpha, A, lda, sA, B, ldb, sB, &beta, C, ldc, sC, count);
}
inline cublasStatus_t gemm_batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            double alpha, const double* A, int lda, long long sA, const double* B, int ldb,
                            long long sB, double beta, double* C, int ldc, long long sC, int count) {
  return cublasDgemmStridedBatched(h, ta, tb, m, n, k, &alpha, A, lda, sA, B, ldb, sB, &beta, C, ldc, sC, count);
}

}  // namespace stale::charlm_cuda
