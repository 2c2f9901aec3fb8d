// Host emulation of the CUDA runtime, cuBLAS and the residual kernel, strict enough to
// catch the mistakes a GPU would punish (see run_host_emulation.sh for what it is for):
//  - device and pinned allocations are registered and filled with NaN bytes, so reading
//    memory nobody wrote shows up as NaN in the results;
//  - every BLAS operand, kernel operand and copy is range-checked against its allocation
//    (with the leading dimensions, as cuBLAS would read it), and copy directions are checked
//    (a host pointer where a device pointer belongs is an error);
//  - work on a stream is queued and runs only at cudaStreamSynchronize, so reading a result
//    before synchronising, or overwriting a staging buffer under a pending copy, gives wrong
//    numbers here as it would on a device; freeing memory with work pending is an error.
// Errors are printed and returned as error codes, so the harness's checks turn them into
// exceptions with file:line, as they would on a device.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cublas_v2.h"
#include "cuda_runtime.h"
#include "objectives/linear/linear_losses.hpp"
#include "objectives/linear/linear_model_cuda_kernels.cuh"
#include "src/core/error.hpp"

struct CUstream_st {
  std::vector<std::function<bool()>> queue;  // each op returns false on an access error
};
struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
};

namespace {

struct Alloc {
  size_t bytes;
  bool device;
};
std::map<uintptr_t, Alloc>& allocs() {
  static std::map<uintptr_t, Alloc> m;
  return m;
}
std::set<cudaStream_t>& streams() {
  static std::set<cudaStream_t> s;
  return s;
}

bool report(const std::string& msg) {
  std::fprintf(stderr, "host emulation: %s\n", msg.c_str());
  return false;
}

// the allocation holding p, or null
const std::pair<const uintptr_t, Alloc>* find(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  auto it = allocs().upper_bound(a);
  if (it == allocs().begin()) return nullptr;
  --it;
  return a < it->first + it->second.bytes ? &*it : nullptr;
}

// [p, p + bytes) lies inside one device allocation
bool device_range(const void* p, size_t bytes, const char* what) {
  if (bytes == 0) return true;
  const auto* a = find(p);
  if (!a || !a->second.device) return report(std::string(what) + ": not a device pointer");
  if (reinterpret_cast<uintptr_t>(p) + bytes > a->first + a->second.bytes)
    return report(std::string(what) + ": reads/writes " + std::to_string(bytes) + " bytes, past the end of its " +
                  std::to_string(a->second.bytes) + "-byte allocation (offset " +
                  std::to_string(reinterpret_cast<uintptr_t>(p) - a->first) + ")");
  return true;
}
// a host pointer: pinned ones are range-checked, pageable ones cannot be
bool host_range(const void* p, size_t bytes, const char* what) {
  const auto* a = find(p);
  if (!a) return true;
  if (a->second.device) return report(std::string(what) + ": a device pointer where a host pointer belongs");
  if (reinterpret_cast<uintptr_t>(p) + bytes > a->first + a->second.bytes)
    return report(std::string(what) + ": past the end of its pinned allocation");
  return true;
}

bool pending_work() {
  for (auto s : streams())
    if (!s->queue.empty()) return true;
  return false;
}

cudaError_t enqueue(cudaStream_t s, std::function<bool()> op) {
  if (!s) return op() ? cudaSuccess : cudaErrorIllegalAddress;  // legacy stream: run now
  if (!streams().count(s)) return report("unknown stream"), cudaErrorInvalidValue;
  s->queue.push_back(std::move(op));
  return cudaSuccess;
}

bool no_device() {
  const char* v = std::getenv("STALE_EMULATE_NO_DEVICE");
  return v && std::string(v) == "1";
}

cudaError_t allocate(void** p, size_t bytes, bool device) {
  if (bytes == 0) bytes = 1;
  void* q = std::malloc(bytes);
  if (!q) return cudaErrorMemoryAllocation;
  std::memset(q, 0xFF, bytes);  // NaN in every float and double
  allocs()[reinterpret_cast<uintptr_t>(q)] = {bytes, device};
  *p = q;
  return cudaSuccess;
}

cudaError_t release(void* p, bool device) {
  if (!p) return cudaSuccess;
  auto it = allocs().find(reinterpret_cast<uintptr_t>(p));
  if (it == allocs().end() || it->second.device != device)
    return report(device ? "cudaFree of a pointer cudaMalloc did not return" : "cudaFreeHost of a non-pinned pointer"),
           cudaErrorInvalidValue;
  if (pending_work()) return report("memory freed while stream work is pending"), cudaErrorInvalidValue;
  allocs().erase(it);
  std::free(p);
  return cudaSuccess;
}

}  // namespace

// ---- runtime --------------------------------------------------------------------------------
cudaError_t cudaGetDeviceCount(int* count) {
  *count = no_device() ? 0 : 1;
  return no_device() ? cudaErrorNoDevice : cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (no_device() || device != 0) return cudaErrorInvalidDevice;
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "host emulation (no GPU)");
  p->totalGlobalMem = size_t(80) << 30;
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = 132;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) { return device == 0 && !no_device() ? cudaSuccess : cudaErrorInvalidDevice; }
cudaError_t cudaMalloc(void** p, size_t bytes) { return allocate(p, bytes, true); }
cudaError_t cudaMallocHost(void** p, size_t bytes) { return allocate(p, bytes, false); }
cudaError_t cudaFree(void* p) { return release(p, true); }
cudaError_t cudaFreeHost(void* p) { return release(p, false); }

static bool check_copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToDevice: return device_range(dst, bytes, "H2D destination") && host_range(src, bytes, "H2D source");
    case cudaMemcpyDeviceToHost: return device_range(src, bytes, "D2H source") && host_range(dst, bytes, "D2H destination");
    case cudaMemcpyDeviceToDevice:
      return device_range(src, bytes, "D2D source") && device_range(dst, bytes, "D2D destination");
    default: return report("only explicit copy directions are used by the harness");
  }
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (!check_copy(dst, src, bytes, kind)) return cudaErrorInvalidValue;
  std::memcpy(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
  if (!check_copy(dst, src, bytes, kind)) return cudaErrorInvalidValue;
  return enqueue(s, [=] {
    std::memcpy(dst, src, bytes);
    return true;
  });
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t s) {
  if (!device_range(p, bytes, "memset")) return cudaErrorInvalidValue;
  return enqueue(s, [=] {
    std::memset(p, value, bytes);
    return true;
  });
}
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  *free_bytes = size_t(64) << 30;
  *total_bytes = size_t(80) << 30;
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  *s = new CUstream_st;
  streams().insert(*s);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  if (!s) return cudaSuccess;
  bool ok = true;
  for (auto& op : s->queue) ok = op() && ok;
  s->queue.clear();
  return ok ? cudaSuccess : cudaErrorIllegalAddress;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (!s->queue.empty()) report("stream destroyed with work pending (the harness synchronises every call)");
  cudaStreamSynchronize(s);
  streams().erase(s);
  delete s;
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  cudaError_t rc = cudaSuccess;
  for (auto s : streams())
    if (cudaStreamSynchronize(s) != cudaSuccess) rc = cudaErrorIllegalAddress;
  return rc;
}
cudaError_t cudaGetLastError() { return cudaSuccess; }
const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    default: return "cudaErrorUnknown";
  }
}
const char* cudaGetErrorString(cudaError_t e) {
  return e == cudaErrorNoDevice ? "no CUDA-capable device is detected (emulated)" : "emulated CUDA error";
}

// ---- cuBLAS ---------------------------------------------------------------------------------
cublasStatus_t cublasCreate(cublasHandle_t* h) {
  *h = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t h) {
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) {
  h->stream = s;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetPointerMode(cublasHandle_t h, cublasPointerMode_t m) {
  h->pointer_mode = m;
  return CUBLAS_STATUS_SUCCESS;
}
const char* cublasGetStatusString(cublasStatus_t s) {
  return s == CUBLAS_STATUS_INVALID_VALUE ? "CUBLAS_STATUS_INVALID_VALUE (emulated)" : "cuBLAS error (emulated)";
}

namespace {

size_t extent(int rows, int cols, int ld) {
  return rows > 0 && cols > 0 ? static_cast<size_t>(cols - 1) * ld + rows : 0;
}

template <class T>
cublasStatus_t gemv(cublasHandle_t h, cublasOperation_t op, int m, int n, const T* alpha, const T* A, int lda,
                    const T* x, int incx, const T* beta, T* y, int incy) {
  if (h->pointer_mode != CUBLAS_POINTER_MODE_HOST) return report("gemv: expected host pointer mode"), CUBLAS_STATUS_INVALID_VALUE;
  if (m < 0 || n < 0 || lda < std::max(1, m) || incx != 1 || incy != 1)
    return report("gemv: invalid sizes (m " + std::to_string(m) + ", n " + std::to_string(n) + ", lda " +
                  std::to_string(lda) + ")"),
           CUBLAS_STATUS_INVALID_VALUE;
  const bool t = op != CUBLAS_OP_N;
  const int lx = t ? m : n, ly = t ? n : m;
  if (!device_range(A, extent(m, n, lda) * sizeof(T), "gemv A") || !device_range(x, lx * sizeof(T), "gemv x") ||
      !device_range(y, ly * sizeof(T), "gemv y"))
    return CUBLAS_STATUS_INVALID_VALUE;
  const T a = *alpha, b = *beta;
  enqueue(h->stream, [=] {
    std::vector<T> out(ly);
    for (int j = 0; j < ly; ++j) {
      T acc = 0;
      if (t) for (int i = 0; i < m; ++i) acc += A[i + static_cast<size_t>(j) * lda] * x[i];
      else for (int l = 0; l < n; ++l) acc += A[j + static_cast<size_t>(l) * lda] * x[l];
      out[j] = b == T(0) ? a * acc : a * acc + b * y[j];  // β = 0: y is not read (cuBLAS)
    }
    std::copy(out.begin(), out.end(), y);
    return true;
  });
  return CUBLAS_STATUS_SUCCESS;
}

template <class T>
cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                    const T* alpha, const T* A, int lda, const T* B, int ldb, const T* beta, T* C, int ldc) {
  if (h->pointer_mode != CUBLAS_POINTER_MODE_HOST) return report("gemm: expected host pointer mode"), CUBLAS_STATUS_INVALID_VALUE;
  const bool at = ta != CUBLAS_OP_N, bt = tb != CUBLAS_OP_N;
  const int a_rows = at ? k : m, a_cols = at ? m : k, b_rows = bt ? n : k, b_cols = bt ? k : n;
  if (m < 0 || n < 0 || k < 0 || lda < std::max(1, a_rows) || ldb < std::max(1, b_rows) || ldc < std::max(1, m))
    return report("gemm: invalid sizes (m " + std::to_string(m) + ", n " + std::to_string(n) + ", k " +
                  std::to_string(k) + ", lda " + std::to_string(lda) + ", ldb " + std::to_string(ldb) + ", ldc " +
                  std::to_string(ldc) + ")"),
           CUBLAS_STATUS_INVALID_VALUE;
  if (!device_range(A, extent(a_rows, a_cols, lda) * sizeof(T), "gemm A") ||
      !device_range(B, extent(b_rows, b_cols, ldb) * sizeof(T), "gemm B") ||
      !device_range(C, extent(m, n, ldc) * sizeof(T), "gemm C"))
    return CUBLAS_STATUS_INVALID_VALUE;
  const T a = *alpha, b = *beta;
  enqueue(h->stream, [=] {
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        T acc = 0;
        for (int l = 0; l < k; ++l) {
          const T av = at ? A[l + static_cast<size_t>(i) * lda] : A[i + static_cast<size_t>(l) * lda];
          const T bv = bt ? B[j + static_cast<size_t>(l) * ldb] : B[l + static_cast<size_t>(j) * ldb];
          acc += av * bv;
        }
        T& c = C[i + static_cast<size_t>(j) * ldc];
        c = b == T(0) ? a * acc : a * acc + b * c;
      }
    return true;
  });
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

cublasStatus_t cublasDgemv(cublasHandle_t h, cublasOperation_t op, int m, int n, const double* alpha, const double* A,
                           int lda, const double* x, int incx, const double* beta, double* y, int incy) {
  return gemv(h, op, m, n, alpha, A, lda, x, incx, beta, y, incy);
}
cublasStatus_t cublasSgemv(cublasHandle_t h, cublasOperation_t op, int m, int n, const float* alpha, const float* A,
                           int lda, const float* x, int incx, const float* beta, float* y, int incy) {
  return gemv(h, op, m, n, alpha, A, lda, x, incx, beta, y, incy);
}
cublasStatus_t cublasDgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const double* alpha, const double* A, int lda, const double* B, int ldb, const double* beta,
                           double* C, int ldc) {
  return gemm(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta,
                           float* C, int ldc) {
  return gemm(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

// ---- the residual kernel (objectives/linear/linear_model_cuda_kernels.cu), run on the host ------------
namespace stale::cuda {

template <class Loss, class T>
void launch_residual(const T* A, int64_t rows, int64_t cols, int64_t ld, const T* y, const T* weight, double scale,
                     T* R, double* Lv, cudaStream_t stream) {
  const size_t ext = extent(static_cast<int>(rows), static_cast<int>(cols), static_cast<int>(ld));
  bool ok = ld >= rows && device_range(A, ext * sizeof(T), "kernel A") && device_range(y, rows * sizeof(T), "kernel y");
  if (weight) ok = ok && device_range(weight, rows * sizeof(T), "kernel weight");
  if (R) ok = ok && device_range(R, ext * sizeof(T), "kernel R");
  if (Lv) ok = ok && device_range(Lv, ext * sizeof(double), "kernel Lv");
  if (!ok) throw stale::InternalError("host emulation: residual kernel launched with bad operands");
  enqueue(stream, [=] {
    // the kernel's grid-stride loop, one iteration per thread
    for (int64_t idx = 0; idx < rows * cols; ++idx) {
      const int64_t i = idx % rows, p = idx / rows, at = i + p * ld;
      const double a = static_cast<double>(A[at]), yi = static_cast<double>(y[i]);
      if (R) R[at] = static_cast<T>(Loss::deriv(a, yi) * (weight ? static_cast<double>(weight[i]) : scale));
      if (Lv) Lv[at] = weight ? static_cast<double>(weight[i]) * Loss::value(a, yi) : Loss::value(a, yi);
    }
    return true;
  });
}

template void launch_residual<stale::SquaredLoss, double>(const double*, int64_t, int64_t, int64_t, const double*,
                                                          const double*, double, double*, double*, cudaStream_t);
template void launch_residual<stale::SquaredLoss, float>(const float*, int64_t, int64_t, int64_t, const float*,
                                                         const float*, double, float*, double*, cudaStream_t);
template void launch_residual<stale::LogisticLoss, double>(const double*, int64_t, int64_t, int64_t, const double*,
                                                           const double*, double, double*, double*, cudaStream_t);
template void launch_residual<stale::LogisticLoss, float>(const float*, int64_t, int64_t, int64_t, const float*,
                                                          const float*, double, float*, double*, cudaStream_t);

}  // namespace stale::cuda
