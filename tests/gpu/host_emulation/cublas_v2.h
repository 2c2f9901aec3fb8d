#pragma once
// Host emulation of the cuBLAS subset the harness calls (see run_host_emulation.sh).
#include "cuda_runtime.h"

struct cublasContext;
typedef cublasContext* cublasHandle_t;

typedef enum {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
} cublasStatus_t;

typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 } cublasMath_t;
typedef enum { CUBLAS_POINTER_MODE_HOST = 0, CUBLAS_POINTER_MODE_DEVICE = 1 } cublasPointerMode_t;

cublasStatus_t cublasCreate(cublasHandle_t* h);
cublasStatus_t cublasDestroy(cublasHandle_t h);
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s);
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode);
cublasStatus_t cublasSetPointerMode(cublasHandle_t h, cublasPointerMode_t mode);
const char* cublasGetStatusString(cublasStatus_t s);

cublasStatus_t cublasDgemv(cublasHandle_t h, cublasOperation_t op, int m, int n, const double* alpha, const double* A,
                           int lda, const double* x, int incx, const double* beta, double* y, int incy);
cublasStatus_t cublasSgemv(cublasHandle_t h, cublasOperation_t op, int m, int n, const float* alpha, const float* A,
                           int lda, const float* x, int incx, const float* beta, float* y, int incy);
cublasStatus_t cublasDgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const double* alpha, const double* A, int lda, const double* B, int ldb, const double* beta,
                           double* C, int ldc);
cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta,
                           float* C, int ldc);
