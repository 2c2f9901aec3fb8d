// CUDA twin of the linear models (least squares and logistic regression as S-stage
// pipelines, docs/theory.md §7): the device half, behind the Eigen-free LinearCudaEngine
// (linear_cuda_engine.hpp explains why no Eigen type enters a .cu file).
//
// What lives on the device, uploaded once at construction: the data matrix X (n × d,
// column-major, lda = n, so a mini-batch is the row range X + off and a stage's block the
// column range X + col0·n, both addressable without copies), the targets y, the sample
// weights c, and a vector of ones. LIBSVM data reaches here dense (the loader densifies it),
// so every product is a dense cuBLAS call. Per call only the point(s) go up (d·P values)
// and the result comes down (the gradient, and a value); everything in between — the
// activations A, the residuals R, the per-sample losses — stays in a device workspace that
// grows to the largest call and is then reused.
//
// How a gradient is formed, for P points at once (P = 1 is the GEMV special case):
//   A = X[rows, :] · Z            GEMM  (r × d)·(d × P)
//   R = c ∘ ℓ'(A, y)              elementwise kernel (linear_model_cuda_kernels.cu)
//   G = X[rows, block]ᵀ · R       GEMM  (c × r)·(r × P)
//   f = Lvᵀ · 1                   GEMV over the per-sample losses Lv (double)
// A mini-batch gradient at one point is instead formed block by block ("staged"): A starts
// at zero and takes one GEMV per stage block, then each block of G is its own GEMV — the
// very calls, operands and alignments of the stage-wise forward_slice / backward_slice, so
// the batch gradient equals the pipeline's bit for bit (cuBLAS is deterministic for
// identical calls), as on the CPU twin.
// X is read twice per call whatever P is, which is why batching P points of one batch (the
// same step of P runs of a sweep, or P stale points that share a mini-batch) turns P
// bandwidth-bound GEMVs into two GEMMs. Points with different batches are grouped by batch;
// the groups run back to back on one stream between one upload and one download.
//
// Precision: T = double (float64) or float (float32). In float32, X, y, c, the points and
// the GEMMs are float; the loss and its derivative are evaluated in double from the float
// activation (the same host/device code as the CPU twin), per-sample losses are summed in
// double, and results come back as double. cuBLAS runs in its default math mode, which
// never lowers FP32 GEMMs to TF32. The (λ/2)‖w‖² term is not computed here: it costs O(d)
// and the adapter adds it on the host in double, where the point already is.
//
// Reproducibility: the only reductions are inside cuBLAS, which is bitwise deterministic for
// a given GPU architecture, SM count and toolkit; the kernel has no atomics.
//
// One engine is used from one thread at a time (it owns mutable workspaces and a stream).
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <vector>

#include "objectives/cuda/cuda_check.cuh"
#include "objectives/linear/linear_cuda_engine.hpp"
#include "objectives/linear/linear_losses.hpp"
#include "objectives/linear/linear_model_cuda_kernels.cuh"
#include "src/backend/backend.hpp"

namespace stale {

namespace {

using cuda::BlasHandle;
using cuda::DeviceArray;
using cuda::PinnedArray;
using cuda::Stream;

// cuBLAS by element type
cublasStatus_t gemv(cublasHandle_t h, cublasOperation_t op, int m, int n, const double* A, int lda, const double* x,
                    double beta, double* y) {
  const double one = 1.0;
  return cublasDgemv(h, op, m, n, &one, A, lda, x, 1, &beta, y, 1);
}
cublasStatus_t gemv(cublasHandle_t h, cublasOperation_t op, int m, int n, const float* A, int lda, const float* x,
                    float beta, float* y) {
  const float one = 1.0f;
  return cublasSgemv(h, op, m, n, &one, A, lda, x, 1, &beta, y, 1);
}
cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, int m, int n, int k, const double* A, int lda,
                    const double* B, int ldb, double beta, double* C, int ldc) {
  const double one = 1.0;
  return cublasDgemm(h, ta, CUBLAS_OP_N, m, n, k, &one, A, lda, B, ldb, &beta, C, ldc);
}
cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, int m, int n, int k, const float* A, int lda,
                    const float* B, int ldb, float beta, float* C, int ldc) {
  const float one = 1.0f;
  return cublasSgemm(h, ta, CUBLAS_OP_N, m, n, k, &one, A, lda, B, ldb, &beta, C, ldc);
}

int as_int(int64_t v) {
  STALE_CHECK(v >= 0 && v <= INT_MAX, "cuBLAS sizes and leading dimensions are int");
  return static_cast<int>(v);
}

// host double ↔ staging T
template <class T>
void pack(const double* src, T* dst, size_t count) {
  if constexpr (std::is_same_v<T, double>) std::memcpy(dst, src, count * sizeof(double));
  else for (size_t i = 0; i < count; ++i) dst[i] = static_cast<T>(src[i]);
}
template <class T>
void unpack(const T* src, double* dst, size_t count) {
  if constexpr (std::is_same_v<T, double>) std::memcpy(dst, src, count * sizeof(double));
  else for (size_t i = 0; i < count; ++i) dst[i] = static_cast<double>(src[i]);
}

template <class Loss, class T>
class LinearEngineCuda final : public LinearCudaEngine {
 public:
  LinearEngineCuda(const LinearCudaData& data, std::string device)
      : n_(data.n), d_(data.d), blocks_(data.block_offsets), device_(std::move(device)), blas_(stream_.get()) {
    STALE_CHECK(n_ >= 1 && d_ >= 1 && n_ <= INT_MAX && d_ <= INT_MAX, "cuBLAS sizes are int");
    if (blocks_.empty()) blocks_ = {0, d_};
    STALE_CHECK(blocks_.front() == 0 && blocks_.back() == d_ && std::is_sorted(blocks_.begin(), blocks_.end()),
                "block offsets run from 0 to d");
    X_.reserve(static_cast<size_t>(n_) * d_);
    y_.reserve(n_);
    w_.reserve(n_);
    ones_.reserve(n_);
    upload_once(data.X, X_.get(), static_cast<size_t>(n_) * d_);
    upload_once(data.y, y_.get(), n_);
    upload_once(data.weight, w_.get(), n_);
    const std::vector<double> ones(n_, 1.0);
    STALE_CUDA_CHECK(cudaMemcpy(ones_.get(), ones.data(), n_ * sizeof(double), cudaMemcpyHostToDevice));
    // a cudaMemcpy from pageable memory may return before its DMA has landed, and work on
    // a non-blocking stream does not wait for the legacy stream: wait here, once
    STALE_CUDA_CHECK(cudaDeviceSynchronize());
  }

  std::string precision() const override { return std::is_same_v<T, double> ? "float64" : "float32"; }
  std::string device_name() const override { return device_; }

  void grad_many(const double* Z, int P, const std::vector<Group>& groups, bool sample_weights, bool staged,
                 int64_t col0, int64_t cols, double* G, double* values) override {
    STALE_CHECK(P >= 1 && !groups.empty(), "at least one point and one group");
    if (staged) return grad_staged(Z, groups.at(0), sample_weights, col0, cols, G, values, P);
    STALE_CHECK(G == nullptr || (col0 >= 0 && cols >= 1 && col0 + cols <= d_), "the gradient's column range lies in [0, d)");
    int64_t ld = 0, covered = 0;
    for (const Group& g : groups) {
      STALE_CHECK(g.row0 >= 0 && g.rows >= 1 && g.row0 + g.rows <= n_, "a group's rows lie in [0, n)");
      STALE_CHECK(g.first_col == covered && g.num_cols >= 1, "groups cover the columns of Z in order");
      covered += g.num_cols;
      ld = std::max(ld, g.rows);
    }
    STALE_CHECK(covered == P, "groups cover the columns of Z in order");
    // every buffer is sized before the first copy: growing one frees it, which must not
    // happen under an asynchronous copy
    const size_t zP = static_cast<size_t>(d_) * P, aP = static_cast<size_t>(ld) * P;
    const size_t gP = G ? static_cast<size_t>(cols) * P : 0;
    Z_.reserve(zP);
    A_.reserve(aP);
    up_.reserve(zP);
    if (G) {
      R_.reserve(aP);
      G_.reserve(gP);
      down_.reserve(gP);
    }
    if (values) {
      Lv_.reserve(aP);
      sums_.reserve(P);
      sums_host_.reserve(P);
    }
    pack(Z, up_.get(), zP);
    copy_up(Z_.get(), up_.get(), zP);

    const cublasHandle_t h = blas_.get();
    const int n = as_int(n_), d = as_int(d_), ldi = as_int(ld);
    for (const Group& g : groups) {
      const int rows = as_int(g.rows), k = g.num_cols;
      const size_t c0 = static_cast<size_t>(g.first_col);
      const T* Xg = X_.get() + g.row0;  // rows [row0, row0 + rows) of X, all columns
      const T* Zg = Z_.get() + c0 * d_;
      T* Ag = A_.get() + c0 * ld;
      if (k == 1) STALE_CUBLAS_CHECK(gemv(h, CUBLAS_OP_N, rows, d, Xg, n, Zg, T(0), Ag));
      else STALE_CUBLAS_CHECK(gemm(h, CUBLAS_OP_N, rows, k, d, Xg, n, Zg, d, T(0), Ag, ldi));
      T* Rg = G ? R_.get() + c0 * ld : nullptr;
      double* Lg = values ? Lv_.get() + c0 * ld : nullptr;
      cuda::launch_residual<Loss, T>(Ag, g.rows, k, ld, y_.get() + g.row0, sample_weights ? w_.get() + g.row0 : nullptr,
                                     g.scale, Rg, Lg, stream_.get());
      if (G) {
        const T* Xs = X_.get() + g.row0 + static_cast<size_t>(col0) * n_;  // the same rows, the block's columns
        T* Gg = G_.get() + c0 * cols;
        if (k == 1) STALE_CUBLAS_CHECK(gemv(h, CUBLAS_OP_T, rows, as_int(cols), Xs, n, Rg, T(0), Gg));
        else STALE_CUBLAS_CHECK(gemm(h, CUBLAS_OP_T, as_int(cols), k, rows, Xs, n, Rg, ldi, T(0), Gg, as_int(cols)));
      }
      if (values) STALE_CUBLAS_CHECK(gemv(h, CUBLAS_OP_T, rows, k, Lg, ldi, ones_.get(), 0.0, sums_.get() + c0));
    }

    if (G) copy_down(down_.get(), G_.get(), gP);
    if (values) copy_down(sums_host_.get(), sums_.get(), P);
    stream_.synchronize();
    if (G) unpack(down_.get(), G, gP);
    if (values) std::memcpy(values, sums_host_.get(), P * sizeof(double));
  }

  void forward_slice(int64_t row0, int64_t rows, int64_t col0, int64_t cols, const double* w_s, const double* in,
                     double* out) override {
    check_slice(row0, rows, col0, cols);
    // w_s goes where block s sits in a whole point, so this call is the one grad_staged makes
    Z_.reserve(d_);
    A_.reserve(rows);
    up_.reserve(cols + rows);
    down_.reserve(rows);
    pack(w_s, up_.get(), cols);
    pack(in, up_.get() + cols, rows);
    copy_up(Z_.get() + col0, up_.get(), cols);
    copy_up(A_.get(), up_.get() + cols, rows);
    const T* Xs = X_.get() + row0 + static_cast<size_t>(col0) * n_;
    STALE_CUBLAS_CHECK(
        gemv(blas_.get(), CUBLAS_OP_N, as_int(rows), as_int(cols), Xs, as_int(n_), Z_.get() + col0, T(1), A_.get()));
    copy_down(down_.get(), A_.get(), rows);
    stream_.synchronize();
    unpack(down_.get(), out, rows);
  }

  double loss_head(int64_t row0, int64_t rows, const double* act, double scale, double* grad) override {
    check_slice(row0, rows, 0, 1);
    A_.reserve(rows);
    R_.reserve(rows);
    Lv_.reserve(rows);
    sums_.reserve(1);
    sums_host_.reserve(1);
    up_.reserve(rows);
    down_.reserve(rows);
    pack(act, up_.get(), rows);
    copy_up(A_.get(), up_.get(), rows);
    cuda::launch_residual<Loss, T>(A_.get(), rows, 1, rows, y_.get() + row0, nullptr, scale, R_.get(), Lv_.get(),
                                   stream_.get());
    STALE_CUBLAS_CHECK(gemv(blas_.get(), CUBLAS_OP_T, as_int(rows), 1, Lv_.get(), as_int(rows), ones_.get(), 0.0,
                            sums_.get()));
    copy_down(down_.get(), R_.get(), rows);
    copy_down(sums_host_.get(), sums_.get(), 1);
    stream_.synchronize();
    unpack(down_.get(), grad, rows);
    return sums_host_.get()[0];
  }

  void backward_slice(int64_t row0, int64_t rows, int64_t col0, int64_t cols, const double* grad_out,
                      double* grad_w) override {
    check_slice(row0, rows, col0, cols);
    // the block's gradient goes where it sits in a whole gradient, as in grad_staged
    R_.reserve(rows);
    G_.reserve(d_);
    up_.reserve(rows);
    down_.reserve(cols);
    pack(grad_out, up_.get(), rows);
    copy_up(R_.get(), up_.get(), rows);
    const T* Xs = X_.get() + row0 + static_cast<size_t>(col0) * n_;
    STALE_CUBLAS_CHECK(
        gemv(blas_.get(), CUBLAS_OP_T, as_int(rows), as_int(cols), Xs, as_int(n_), R_.get(), T(0), G_.get() + col0));
    copy_down(down_.get(), G_.get() + col0, cols);
    stream_.synchronize();
    unpack(down_.get(), grad_w, cols);
  }

  void round_trip(const double* in, double* out, int64_t count) override {
    STALE_CHECK(count >= 1, "something to move");
    Z_.reserve(count);
    up_.reserve(count);
    down_.reserve(count);
    pack(in, up_.get(), count);
    copy_up(Z_.get(), up_.get(), count);
    copy_down(down_.get(), Z_.get(), count);
    stream_.synchronize();
    unpack(down_.get(), out, count);
  }

 private:
  // the staged form of grad_many for one point (see linear_cuda_engine.hpp): the activation
  // starts at zero and takes one GEMV per block, like the pipeline's forward; each block of
  // the gradient is its own GEMV, like the pipeline's backward
  void grad_staged(const double* z, const Group& g, bool sample_weights, int64_t col0, int64_t cols, double* G,
                   double* values, int P) {
    STALE_CHECK(P == 1 && g.first_col == 0 && g.num_cols == 1, "staged evaluation is for one point");
    STALE_CHECK(g.row0 >= 0 && g.rows >= 1 && g.row0 + g.rows <= n_, "the rows lie in [0, n)");
    const auto first = std::find(blocks_.begin(), blocks_.end(), col0);
    STALE_CHECK(G == nullptr || (first != blocks_.end() && std::binary_search(blocks_.begin(), blocks_.end(), col0 + cols)),
                "a staged gradient covers whole blocks");
    Z_.reserve(d_);
    A_.reserve(g.rows);
    up_.reserve(d_);
    if (G) {
      R_.reserve(g.rows);
      G_.reserve(d_);
      down_.reserve(cols);
    }
    if (values) {
      Lv_.reserve(g.rows);
      sums_.reserve(1);
      sums_host_.reserve(1);
    }
    pack(z, up_.get(), d_);
    copy_up(Z_.get(), up_.get(), d_);
    const cublasHandle_t h = blas_.get();
    const int n = as_int(n_), rows = as_int(g.rows);
    STALE_CUDA_CHECK(cudaMemsetAsync(A_.get(), 0, g.rows * sizeof(T), stream_.get()));  // the zero input activation
    for (size_t s = 0; s + 1 < blocks_.size(); ++s) {
      const int64_t off = blocks_[s], ds = blocks_[s + 1] - off;
      const T* Xs = X_.get() + g.row0 + static_cast<size_t>(off) * n_;
      STALE_CUBLAS_CHECK(gemv(h, CUBLAS_OP_N, rows, as_int(ds), Xs, n, Z_.get() + off, T(1), A_.get()));
    }
    cuda::launch_residual<Loss, T>(A_.get(), g.rows, 1, g.rows, y_.get() + g.row0,
                                   sample_weights ? w_.get() + g.row0 : nullptr, g.scale, G ? R_.get() : nullptr,
                                   values ? Lv_.get() : nullptr, stream_.get());
    if (G) {
      for (auto it = first; it + 1 != blocks_.end() && *it < col0 + cols; ++it) {
        const int64_t off = *it, ds = *(it + 1) - off;
        const T* Xs = X_.get() + g.row0 + static_cast<size_t>(off) * n_;
        STALE_CUBLAS_CHECK(gemv(h, CUBLAS_OP_T, rows, as_int(ds), Xs, n, R_.get(), T(0), G_.get() + off));
      }
      copy_down(down_.get(), G_.get() + col0, cols);
    }
    if (values) {
      STALE_CUBLAS_CHECK(gemv(h, CUBLAS_OP_T, rows, 1, Lv_.get(), rows, ones_.get(), 0.0, sums_.get()));
      copy_down(sums_host_.get(), sums_.get(), 1);
    }
    stream_.synchronize();
    if (G) unpack(down_.get(), G, cols);
    if (values) values[0] = sums_host_.get()[0];
  }

  void check_slice(int64_t row0, int64_t rows, int64_t col0, int64_t cols) const {
    STALE_CHECK(row0 >= 0 && rows >= 1 && row0 + rows <= n_, "rows lie in [0, n)");
    STALE_CHECK(col0 >= 0 && cols >= 1 && col0 + cols <= d_, "columns lie in [0, d)");
  }
  void copy_up(T* dst, const T* src, size_t count) {
    STALE_CUDA_CHECK(cudaMemcpyAsync(dst, src, count * sizeof(T), cudaMemcpyHostToDevice, stream_.get()));
  }
  template <class U>
  void copy_down(U* dst, const U* src, size_t count) {
    STALE_CUDA_CHECK(cudaMemcpyAsync(dst, src, count * sizeof(U), cudaMemcpyDeviceToHost, stream_.get()));
  }
  // construction-time upload of host doubles; float32 converts through a bounded pinned
  // buffer so a 2 GiB matrix never needs a second full-size host copy
  void upload_once(const double* src, T* dst, size_t count) {
    if constexpr (std::is_same_v<T, double>) {
      STALE_CUDA_CHECK(cudaMemcpy(dst, src, count * sizeof(double), cudaMemcpyHostToDevice));
    } else {
      constexpr size_t kChunk = size_t(1) << 22;
      PinnedArray<T> staging;
      staging.reserve(std::min(count, kChunk));
      for (size_t at = 0; at < count; at += kChunk) {
        const size_t m = std::min(kChunk, count - at);
        pack(src + at, staging.get(), m);
        STALE_CUDA_CHECK(cudaMemcpy(dst + at, staging.get(), m * sizeof(T), cudaMemcpyHostToDevice));
      }
    }
  }

  int64_t n_, d_;
  std::vector<int64_t> blocks_;  // stage boundaries
  std::string device_;
  Stream stream_;
  BlasHandle blas_;  // after stream_: it is bound to it
  DeviceArray<T> X_, y_, w_;
  DeviceArray<double> ones_;
  // workspace (see the file comment for the shapes)
  DeviceArray<T> Z_, A_, R_, G_;
  DeviceArray<double> Lv_, sums_;
  PinnedArray<T> up_, down_;
  PinnedArray<double> sums_host_;
};

std::string device0_name() {
  cudaDeviceProp p{};
  STALE_CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
  return p.name;
}

}  // namespace

std::unique_ptr<LinearCudaEngine> make_linear_cuda_engine(const LinearCudaData& data, LinearLoss loss,
                                                          Precision precision) {
  if (cuda_device_count() == 0) throw UserError("backend cuda: " + cuda_unavailable_reason());
  STALE_CUDA_CHECK(cudaSetDevice(0));
  const std::string device = device0_name();
  const bool f32 = precision == Precision::Float32;
  const double need = static_cast<double>(data.n) * static_cast<double>(data.d) * (f32 ? 4.0 : 8.0);
  size_t free_b = 0, total_b = 0;
  STALE_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (need > 0.9 * static_cast<double>(free_b)) {
    char msg[512];
    std::snprintf(msg, sizeof msg,
                  "backend cuda: the data matrix (n = %lld, d = %lld) needs %.2f GiB on %s, which has %.2f GiB free "
                  "(use precision = \"float32\", a smaller problem, or backend = \"cpu\")",
                  static_cast<long long>(data.n), static_cast<long long>(data.d), need / (1 << 30), device.c_str(),
                  static_cast<double>(free_b) / (1 << 30));
    throw UserError(msg);
  }
  if (loss == LinearLoss::Squared) {
    if (f32) return std::make_unique<LinearEngineCuda<SquaredLoss, float>>(data, device);
    return std::make_unique<LinearEngineCuda<SquaredLoss, double>>(data, device);
  }
  if (f32) return std::make_unique<LinearEngineCuda<LogisticLoss, float>>(data, device);
  return std::make_unique<LinearEngineCuda<LogisticLoss, double>>(data, device);
}

namespace {
// best of `reps` timed runs of fn (after one warm-up), in seconds
template <class F>
double best_seconds(const Stream& s, int reps, F fn) {
  fn();
  s.synchronize();
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    s.synchronize();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

template <class T>
double gemm_flops(const Stream& s, const BlasHandle& h, int N) {
  const size_t nn = static_cast<size_t>(N) * N;
  DeviceArray<T> A(nn), B(nn), C(nn);
  // data in [−1, 1]: a zero matrix would let the GPU run cooler than a real product
  std::vector<T> host(nn);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (auto& v : host) x = x * 6364136223846793005ull + 1442695040888963407ull, v = T((x >> 11) * 0x1.0p-53 * 2 - 1);
  STALE_CUDA_CHECK(cudaMemcpy(A.get(), host.data(), nn * sizeof(T), cudaMemcpyHostToDevice));
  STALE_CUDA_CHECK(cudaMemcpy(B.get(), host.data(), nn * sizeof(T), cudaMemcpyHostToDevice));
  STALE_CUDA_CHECK(cudaDeviceSynchronize());  // pageable copies may still be in flight
  const double t = best_seconds(s, 5, [&] {
    STALE_CUBLAS_CHECK(gemm(h.get(), CUBLAS_OP_N, N, N, N, A.get(), N, B.get(), N, T(0), C.get(), N));
  });
  return 2.0 * N * static_cast<double>(N) * N / t;
}
}  // namespace

CudaDeviceLimits measure_cuda_device_limits() {
  if (cuda_device_count() == 0) throw UserError("backend cuda: " + cuda_unavailable_reason());
  STALE_CUDA_CHECK(cudaSetDevice(0));
  CudaDeviceLimits lim;
  lim.device = device0_name();
  Stream s;
  BlasHandle h(s.get());
  {
    // 1 GiB each way: far beyond any L2, so this is DRAM (HBM) bandwidth
    const size_t bytes = size_t(1) << 30;
    DeviceArray<char> a(bytes), b(bytes);
    STALE_CUDA_CHECK(cudaMemsetAsync(a.get(), 1, bytes, s.get()));
    const double t = best_seconds(s, 10, [&] {
      STALE_CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, s.get()));
    });
    lim.copy_bytes_per_s = 2.0 * static_cast<double>(bytes) / t;
  }
  lim.dgemm_flops = gemm_flops<double>(s, h, 8192);
  lim.sgemm_flops = gemm_flops<float>(s, h, 8192);
  return lim;
}

}  // namespace stale
