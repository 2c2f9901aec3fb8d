#pragma once
// Kernel launches of the char-level GPT's CUDA twin (charlm_cuda_engine.cu): block sizes,
// grid sizes, and STALE_LAUNCH, which skips an empty launch and checks it at once.
#include <cuda_runtime.h>

#include <cstdint>

#include "objectives/cuda/cuda_check.cuh"

namespace stale::charlm_cuda {

constexpr int kThreads = 256;
constexpr int kWarp = 32;
constexpr int kRowsPerChunk = 32;  // rows per partial sum of a column reduction

inline unsigned grid_for(int64_t n, int threads = kThreads) { return static_cast<unsigned>((n + threads - 1) / threads); }

inline bool nonempty(unsigned g) { return g > 0; }
inline bool nonempty(const dim3& g) { return g.x > 0 && g.y > 0 && g.z > 0; }

// a launch on `stream`, skipped when there is nothing to do, checked at once (a host
// emulation that runs the kernels as plain functions may define its own before including)
#ifndef STALE_LAUNCH
#define STALE_LAUNCH(kernel, grid, block, stream, ...)          \
  do {                                                          \
    if (nonempty(grid)) {                                       \
      kernel<<<(grid), (block), 0, (stream)>>>(__VA_ARGS__);    \
      STALE_CUDA_CHECK(cudaGetLastError());                     \
    }                                                           \
  } while (0)
#endif

}  // namespace stale::charlm_cuda
