#pragma once
// A CUDA event (timing a stream's work), released quietly like the owners in cuda_check.cuh.
#include <cuda_runtime.h>

#include "objectives/cuda/cuda_check.cuh"

namespace stale::cuda {

// a CUDA event, released quietly
class Event {
 public:
  Event() { STALE_CUDA_CHECK(cudaEventCreate(&e_)); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() { cudaEventDestroy(e_); }
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace stale::cuda
