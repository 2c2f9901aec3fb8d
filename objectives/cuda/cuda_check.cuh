#pragma once
// Checked CUDA and cuBLAS calls, and RAII owners of device memory, pinned host memory,
// streams and cuBLAS handles. Every fallible call goes through STALE_CUDA_CHECK or
// STALE_CUBLAS_CHECK, which throw with file:line, the call, the error's name and text, and a
// hint. Destructors release quietly: they run during unwinding, when the context may already
// be broken.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "src/core/error.hpp"

namespace stale::cuda {

inline std::string where(const char* file, int line, const char* call) {
  return std::string(file) + ":" + std::to_string(line) + ": " + call;
}

inline void check(cudaError_t rc, const char* call, const char* file, int line) {
  if (rc == cudaSuccess) return;
  std::string msg = where(file, line, call) + " failed: " + cudaGetErrorName(rc) + ": " + cudaGetErrorString(rc);
  if (rc == cudaErrorMemoryAllocation)
    throw UserError(msg + " (the device is out of memory: use a smaller objective.dim/samples, precision = \"float32\", "
                          "or backend = \"cpu\")");
  if (rc == cudaErrorNoDevice || rc == cudaErrorInsufficientDriver)
    throw UserError(msg + " (no usable CUDA device: use backend = \"cpu\")");
  throw InternalError(msg + " (a CUDA error; rerun with CUDA_LAUNCH_BLOCKING=1 to locate an asynchronous one)");
}

inline void check(cublasStatus_t rc, const char* call, const char* file, int line) {
  if (rc == CUBLAS_STATUS_SUCCESS) return;
  std::string msg = where(file, line, call) + " failed: " + cublasGetStatusString(rc);
  if (rc == CUBLAS_STATUS_ALLOC_FAILED || rc == CUBLAS_STATUS_NOT_INITIALIZED)
    throw UserError(msg + " (cuBLAS could not start: the device is out of memory or the driver is missing)");
  throw InternalError(msg + " (a cuBLAS argument or execution error)");
}

}  // namespace stale::cuda

#define STALE_CUDA_CHECK(call) ::stale::cuda::check((call), #call, __FILE__, __LINE__)
#define STALE_CUBLAS_CHECK(call) ::stale::cuda::check((call), #call, __FILE__, __LINE__)

namespace stale::cuda {

// Device array of T that only grows: a workspace is sized by the largest call so far.
template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(size_t count) { reserve(count); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  ~DeviceArray() {
    if (p_) cudaFree(p_);
  }
  // contents are not preserved when it grows
  void reserve(size_t count) {
    if (count <= n_) return;
    if (p_) cudaFree(std::exchange(p_, nullptr));
    n_ = 0;
    STALE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p_), count * sizeof(T)));
    n_ = count;
  }
  T* get() const { return p_; }
  size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

// Page-locked host staging array: copies from it run at full PCIe/NVLink speed and can be
// asynchronous on a stream.
template <class T>
class PinnedArray {
 public:
  PinnedArray() = default;
  PinnedArray(const PinnedArray&) = delete;
  PinnedArray& operator=(const PinnedArray&) = delete;
  ~PinnedArray() {
    if (p_) cudaFreeHost(p_);
  }
  void reserve(size_t count) {
    if (count <= n_) return;
    if (p_) cudaFreeHost(std::exchange(p_, nullptr));
    n_ = 0;
    STALE_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&p_), count * sizeof(T)));
    n_ = count;
  }
  T* get() const { return p_; }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

class Stream {
 public:
  Stream() { STALE_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() { cudaStreamDestroy(s_); }
  cudaStream_t get() const { return s_; }
  void synchronize() const { STALE_CUDA_CHECK(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

class BlasHandle {
 public:
  explicit BlasHandle(cudaStream_t stream) {
    STALE_CUBLAS_CHECK(cublasCreate(&h_));
    STALE_CUBLAS_CHECK(cublasSetStream(h_, stream));
    // the default math mode keeps FP32 GEMMs in FP32 (no TF32), so float32 results are
    // float32 results; scalars alpha/beta are read from the host
    STALE_CUBLAS_CHECK(cublasSetMathMode(h_, CUBLAS_DEFAULT_MATH));
    STALE_CUBLAS_CHECK(cublasSetPointerMode(h_, CUBLAS_POINTER_MODE_HOST));
  }
  BlasHandle(const BlasHandle&) = delete;
  BlasHandle& operator=(const BlasHandle&) = delete;
  ~BlasHandle() { cublasDestroy(h_); }
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

}  // namespace stale::cuda
