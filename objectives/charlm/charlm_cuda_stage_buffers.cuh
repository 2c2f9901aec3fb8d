#pragma once
// The device activations of one stage of the char-level GPT's CUDA twin, and the pool that
// recycles them between micro-batches.
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "objectives/charlm/charlm_cuda_engine.hpp"
#include "objectives/cuda/cuda_check.cuh"

namespace stale::charlm_cuda {

using cuda::DeviceArray;

// ---- device activations of one stage

// What a stage's forward keeps for its backward. Buffers only grow, and a stage's buffers go
// back to a pool when its state is destroyed, so a pipeline that keeps a few micro-batches
// in flight stops calling cudaMalloc/cudaFree (which synchronise the device) once warm.
template <class T>
struct StageBuffers {
  DeviceArray<int32_t> tokens;                                                           // stage 0
  DeviceArray<T> x, ln1, mean1, rstd1, qkv, att, atty, res2, ln2, mean2, rstd2, fch, fchg;  // blocks (x: head too)
  DeviceArray<T> lnf, meanf, rstdf;                                                      // head
};

template <class T>
class BufferPool {
 public:
  std::unique_ptr<StageBuffers<T>> take() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return std::make_unique<StageBuffers<T>>();
    auto b = std::move(free_.back());
    free_.pop_back();
    return b;
  }
  void give(std::unique_ptr<StageBuffers<T>> b) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(b));
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<StageBuffers<T>>> free_;
};

template <class T>
struct StageDev final : CharLmCudaEngine::StageState {
  StageDev(int s_, int rows_, int len_, std::shared_ptr<BufferPool<T>> pool_)
      : s(s_), rows(rows_), len(len_), pool(std::move(pool_)), b(pool->take()) {}
  ~StageDev() override {
    try {
      pool->give(std::move(b));
    } catch (...) {
      // out of host memory: the buffers are freed instead of pooled
    }
  }
  StageBuffers<T>& buf() { return *b; }
  const StageBuffers<T>& buf() const { return *b; }
  int s, rows, len;
  std::shared_ptr<BufferPool<T>> pool;  // outlives the engine if a cache does
  std::unique_ptr<StageBuffers<T>> b;
};

}  // namespace stale::charlm_cuda
