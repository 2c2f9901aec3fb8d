// The device's measured float32 GEMM rate (cuda_sgemm_flops, charlm_cuda_engine.hpp): the
// peak that bench_charlm and bench_gradients report their throughput against.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "objectives/charlm/charlm_cuda_blas.cuh"
#include "objectives/charlm/charlm_cuda_engine.hpp"
#include "objectives/charlm/charlm_cuda_launch.cuh"
#include "objectives/cuda/cuda_check.cuh"
#include "objectives/cuda/cuda_event.cuh"

namespace stale {

using cuda::DeviceArray;
using cuda::Event;
using charlm_cuda::gemm;
using charlm_cuda::grid_for;
using charlm_cuda::kThreads;
using charlm_cuda::nonempty;

namespace {

// x[i] = a reproducible value in [-1, 1) (a hash of i): GEMM timings on zeros run faster than
// on real data
__global__ void fill_uniform_kernel(float* x, int64_t n, uint32_t seed) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
  h ^= h >> 16, h *= 2246822519u, h ^= h >> 13, h *= 3266489917u, h ^= h >> 16;
  x[i] = static_cast<float>(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

}  // namespace

double cuda_sgemm_flops(int n, bool tf32) {
  cuda::Stream stream;
  cuda::BlasHandle blas(stream.get());
  if (tf32) STALE_CUBLAS_CHECK(cublasSetMathMode(blas.get(), CUBLAS_TF32_TENSOR_OP_MATH));
  const int64_t nn = int64_t(n) * n;
  // two operand sets, alternated, so that repeated products do not all hit in L2
  DeviceArray<float> a(2 * nn), b(2 * nn), c(nn);
  STALE_LAUNCH(fill_uniform_kernel, grid_for(2 * nn), kThreads, stream.get(), a.get(), 2 * nn, 1u);
  STALE_LAUNCH(fill_uniform_kernel, grid_for(2 * nn), kThreads, stream.get(), b.get(), 2 * nn, 2u);
  auto run = [&](int i) {
    const int64_t o = (i % 2) * nn;
    STALE_CUBLAS_CHECK(gemm(blas.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, 1.0f, a.get() + o, n, b.get() + o, n, 0.0f,
                            c.get(), n));
  };
  for (int i = 0; i < 3; ++i) run(i);  // warm-up (cuBLAS heuristics, clocks)
  Event t0, t1;
  const int reps = 20;
  STALE_CUDA_CHECK(cudaEventRecord(t0.get(), stream.get()));
  for (int i = 0; i < reps; ++i) run(i);
  STALE_CUDA_CHECK(cudaEventRecord(t1.get(), stream.get()));
  STALE_CUDA_CHECK(cudaEventSynchronize(t1.get()));
  float ms = 0;
  STALE_CUDA_CHECK(cudaEventElapsedTime(&ms, t0.get(), t1.get()));
  return 2.0 * double(n) * n * n * reps / (ms * 1e-3);
}


}  // namespace stale
