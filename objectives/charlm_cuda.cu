// CUDA twin of the character-level GPT (charlm_cuda_engine.hpp): the layers of
// charlm_layers.hpp as small kernels, the matrix products as cuBLAS GEMMs (llm.c's
// train_gpt2.cu, fp32 path, without its fused/cuDNN kernels). Each kernel has its CPU
// reference in charlm_layers_cpu.cpp; tests/gpu/test_charlm_cuda.cpp checks every stage
// against it on awkward sizes.
//
// Shape letters as in charlm_layers.hpp: B windows (rows), T positions (len), C = E
// channels, OC output channels, NH heads, hs = C / NH, V vocabulary, N = B·T.
//
// Determinism: no atomics. Every reduction (LayerNorm statistics, softmax, bias and
// LayerNorm parameter gradients, embedding gradients) has a fixed order or a fixed
// shuffle tree, and cuBLAS GEMMs are run-to-run reproducible on one device and stream, so
// the monolithic path and the stage-wise path give identical results.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "objectives/charlm_cuda_engine.hpp"
#include "objectives/cuda_check.cuh"
#include "objectives/host_precision_convert.hpp"
#include "src/core/error.hpp"

namespace stale {

namespace {

using cuda::DeviceArray;

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

// ---- warp reductions (a butterfly: every lane ends with the same, order-fixed result)

template <class T>
__device__ T warp_sum(T v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <class T>
__device__ T warp_max(T v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// ---- conversions

template <class T>
__global__ void from_double_kernel(T* out, const double* in, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = static_cast<T>(in[i]);
}

template <class T>
__global__ void to_double_kernel(double* out, const T* in, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = static_cast<double>(in[i]);
}

// ---- encoder

template <class T>
__global__ void encoder_forward_kernel(T* out, const int32_t* tok, const T* wte, const T* wpe, int Tn, int C,
                                       int64_t NC) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= NC) return;
  const int64_t r = i / C;
  const int c = static_cast<int>(i % C), t = static_cast<int>(r % Tn);
  out[i] = wte[int64_t(tok[r]) * C + c] + wpe[int64_t(t) * C + c];
}

// dwpe[t, c] += Σ_b dout[b, t, c], in b order
template <class T>
__global__ void encoder_backward_wpe_kernel(T* dwpe, const T* dout, int B, int Tn, int C) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= int64_t(Tn) * C) return;
  T acc = 0;
  for (int b = 0; b < B; ++b) acc += dout[int64_t(b) * Tn * C + i];
  dwpe[i] += acc;
}

// dwte[v, c] += Σ_{rows r with token v} dout[r, c], in row order (no atomics)
template <class T>
__global__ void encoder_backward_wte_kernel(T* dwte, const T* dout, const int32_t* tok, int N, int V, int C) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= int64_t(V) * C) return;
  const int v = static_cast<int>(i / C), c = static_cast<int>(i % C);
  T acc = 0;
  for (int r = 0; r < N; ++r)
    if (tok[r] == v) acc += dout[int64_t(r) * C + c];
  dwte[i] += acc;
}

// ---- layer normalisation: one warp per row

template <class T>
__global__ void layernorm_forward_kernel(T* out, T* mean, T* rstd, const T* inp, const T* w, const T* b, int N,
                                         int C) {
  const int64_t row = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= N) return;
  const T* x = inp + row * C;
  T s = 0;
  for (int c = lane; c < C; c += kWarp) s += x[c];
  const T m = warp_sum(s) / T(C);
  T v = 0;
  for (int c = lane; c < C; c += kWarp) v += (x[c] - m) * (x[c] - m);
  v = warp_sum(v) / T(C);
  const T r = T(1) / sqrt(v + T(1e-5));
  T* o = out + row * C;
  for (int c = lane; c < C; c += kWarp) o[c] = (x[c] - m) * r * w[c] + b[c];
  if (lane == 0) mean[row] = m, rstd[row] = r;
}

template <class T>
__global__ void layernorm_backward_input_kernel(T* dinp, const T* dout, const T* inp, const T* w, const T* mean,
                                                const T* rstd, int N, int C) {
  const int64_t row = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= N) return;
  const T* d = dout + row * C;
  const T* x = inp + row * C;
  const T m = mean[row], r = rstd[row];
  T a = 0, bsum = 0;
  for (int c = lane; c < C; c += kWarp) {
    const T norm = (x[c] - m) * r, dnorm = w[c] * d[c];
    a += dnorm;
    bsum += dnorm * norm;
  }
  const T dnorm_mean = warp_sum(a) / T(C), dnorm_norm_mean = warp_sum(bsum) / T(C);
  T* di = dinp + row * C;
  for (int c = lane; c < C; c += kWarp) {
    const T norm = (x[c] - m) * r, dnorm = w[c] * d[c];
    di[c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * r;
  }
}

// partial sums over chunks of kRowsPerChunk rows: pw[k, c] = Σ norm·dout, pb[k, c] = Σ dout
template <class T>
__global__ void layernorm_backward_params_partial_kernel(T* pw, T* pb, const T* dout, const T* inp, const T* mean,
                                                         const T* rstd, int N, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x, k = blockIdx.y;
  if (c >= C) return;
  const int r1 = min(N, (k + 1) * kRowsPerChunk);
  T aw = 0, ab = 0;
  for (int r = k * kRowsPerChunk; r < r1; ++r) {
    const T d = dout[int64_t(r) * C + c];
    aw += (inp[int64_t(r) * C + c] - mean[r]) * rstd[r] * d;
    ab += d;
  }
  pw[int64_t(k) * C + c] = aw;
  pb[int64_t(k) * C + c] = ab;
}

// out[c] += Σ_k partial[k, c], in k order
template <class T>
__global__ void column_sum_finish_kernel(T* out, const T* partial, int K, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  T acc = 0;
  for (int k = 0; k < K; ++k) acc += partial[int64_t(k) * C + c];
  out[c] += acc;
}

// partial[k, c] = Σ_{rows of chunk k} x[r, c]
template <class T>
__global__ void column_sum_partial_kernel(T* partial, const T* x, int N, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x, k = blockIdx.y;
  if (c >= C) return;
  const int r1 = min(N, (k + 1) * kRowsPerChunk);
  T acc = 0;
  for (int r = k * kRowsPerChunk; r < r1; ++r) acc += x[int64_t(r) * C + c];
  partial[int64_t(k) * C + c] = acc;
}

// ---- elementwise

template <class T>
__global__ void add_bias_kernel(T* out, const T* bias, int64_t N_OC, int OC) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < N_OC) out[i] += bias[i % OC];
}

template <class T>
__global__ void residual_forward_kernel(T* out, const T* a, const T* b, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

template <class T>
__global__ void residual_backward_kernel(T* da, T* db, const T* dout, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) da[i] += dout[i], db[i] += dout[i];
}

template <class T>
__global__ void gelu_forward_kernel(T* out, const T* inp, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const T k = sqrt(T(2) / T(M_PI));
  const T x = inp[i];
  out[i] = T(0.5) * x * (T(1) + tanh(k * (x + T(0.044715) * x * x * x)));
}

template <class T>
__global__ void gelu_backward_kernel(T* dinp, const T* inp, const T* dout, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const T k = sqrt(T(2) / T(M_PI));
  const T x = inp[i];
  const T th = tanh(k * (x + T(0.044715) * x * x * x));
  const T sech2 = T(1) - th * th;
  const T local = T(0.5) * (T(1) + th) + T(0.5) * x * sech2 * k * (T(1) + T(3 * 0.044715) * x * x);
  dinp[i] += local * dout[i];
}

// ---- attention helpers

// qkv [B, T, 3, NH, hs] → q, k, v [B, NH, T, hs]
template <class T>
__global__ void permute_qkv_kernel(T* q, T* k, T* v, const T* qkv, int B, int Tn, int NH, int hs) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= int64_t(B) * NH * Tn * hs) return;
  const int C = NH * hs;
  const int d = static_cast<int>(i % hs);
  const int t = static_cast<int>((i / hs) % Tn);
  const int h = static_cast<int>((i / (int64_t(hs) * Tn)) % NH);
  const int64_t b = i / (int64_t(hs) * Tn * NH);
  const int64_t src = b * Tn * 3 * C + int64_t(t) * 3 * C + h * hs + d;
  q[i] = qkv[src];
  k[i] = qkv[src + C];
  v[i] = qkv[src + 2 * C];
}

// inverse: dq, dk, dv [B, NH, T, hs] → dqkv [B, T, 3, NH, hs] (written, not accumulated)
template <class T>
__global__ void unpermute_qkv_kernel(T* dqkv, const T* dq, const T* dk, const T* dv, int B, int Tn, int NH, int hs) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= int64_t(B) * NH * Tn * hs) return;
  const int C = NH * hs;
  const int d = static_cast<int>(i % hs);
  const int t = static_cast<int>((i / hs) % Tn);
  const int h = static_cast<int>((i / (int64_t(hs) * Tn)) % NH);
  const int64_t b = i / (int64_t(hs) * Tn * NH);
  const int64_t dst = b * Tn * 3 * C + int64_t(t) * 3 * C + h * hs + d;
  dqkv[dst] = dq[i];
  dqkv[dst + C] = dk[i];
  dqkv[dst + 2 * C] = dv[i];
}

// y [B, NH, T, hs] → out [B, T, NH·hs] (forward = true), or the other way
template <class T>
__global__ void heads_to_rows_kernel(T* out, const T* y, int B, int Tn, int NH, int hs, bool forward) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= int64_t(B) * NH * Tn * hs) return;
  const int C = NH * hs;
  const int d = static_cast<int>(i % hs);
  const int t = static_cast<int>((i / hs) % Tn);
  const int h = static_cast<int>((i / (int64_t(hs) * Tn)) % NH);
  const int64_t b = i / (int64_t(hs) * Tn * NH);
  const int64_t rowwise = b * Tn * C + int64_t(t) * C + h * hs + d;
  if (forward) out[rowwise] = y[i];
  else out[i] = y[rowwise];
}

// causal softmax of scale·preatt, one warp per row of [B·NH·T, T]; zero above the diagonal
template <class T>
__global__ void causal_softmax_kernel(T* att, const T* preatt, int rows, int Tn, T scale) {
  const int64_t row = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const int t = static_cast<int>(row % Tn);
  const T* x = preatt + row * Tn;
  T* y = att + row * Tn;
  T mx = -INFINITY;
  for (int t2 = lane; t2 <= t; t2 += kWarp) mx = fmax(mx, x[t2] * scale);
  mx = warp_max(mx);
  T s = 0;
  for (int t2 = lane; t2 <= t; t2 += kWarp) {
    const T e = exp(x[t2] * scale - mx);
    y[t2] = e;
    s += e;
  }
  const T inv = T(1) / warp_sum(s);
  for (int t2 = lane; t2 < Tn; t2 += kWarp) y[t2] = t2 <= t ? y[t2] * inv : T(0);
}

// dpreatt = scale · att ⊙ (datt − Σ_row att ⊙ datt) on the causal part, 0 above it
template <class T>
__global__ void causal_softmax_backward_kernel(T* dpre, const T* datt, const T* att, int rows, int Tn, T scale) {
  const int64_t row = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const int t = static_cast<int>(row % Tn);
  const T* a = att + row * Tn;
  const T* d = datt + row * Tn;
  T dot = 0;
  for (int t2 = lane; t2 <= t; t2 += kWarp) dot += a[t2] * d[t2];
  dot = warp_sum(dot);
  T* o = dpre + row * Tn;
  for (int t2 = lane; t2 < Tn; t2 += kWarp) o[t2] = t2 <= t ? a[t2] * (d[t2] - dot) * scale : T(0);
}

// ---- cuBLAS in T

cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
                    const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  return cublasSgemm(h, ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc);
}
cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, double alpha,
                    const double* A, int lda, const double* B, int ldb, double beta, double* C, int ldc) {
  return cublasDgemm(h, ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc);
}
cublasStatus_t gemm_batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            float alpha, const float* A, int lda, long long sA, const float* B, int ldb, long long sB,
                            float beta, float* C, int ldc, long long sC, int count) {
  return cublasSgemmStridedBatched(h, ta, tb, m, n, k, &alpha, A, lda, sA, B, ldb, sB, &beta, C, ldc, sC, count);
}
cublasStatus_t gemm_batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            double alpha, const double* A, int lda, long long sA, const double* B, int ldb,
                            long long sB, double beta, double* C, int ldc, long long sC, int count) {
  return cublasDgemmStridedBatched(h, ta, tb, m, n, k, &alpha, A, lda, sA, B, ldb, sB, &beta, C, ldc, sC, count);
}

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

template <class T>
class Engine final : public CharLmCudaEngine {
 public:
  // tf32 (T = float only): cuBLAS may round GEMM operands to TF32 and use the tensor cores
  Engine(const CharLmCudaShape& sh, const CharLmCudaLayout& L, bool tf32)
      : sh_(sh), L_(L), tf32_(tf32), blas_(stream_.get()) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
    STALE_CHECK(!tf32 || (std::is_same_v<T, float>), "tf32 is a float32-storage mode");
    if (tf32_) STALE_CUBLAS_CHECK(cublasSetMathMode(blas_.get(), CUBLAS_TF32_TENSOR_OP_MATH));
    int dev = 0;
    STALE_CUDA_CHECK(cudaGetDevice(&dev));
    cudaDeviceProp p{};
    STALE_CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
    device_ = p.name;
    d_ = L_.stage_offsets.back();
  }

  std::string precision() const override {
    if (tf32_) return "tf32";
    return std::is_same_v<T, float> ? "float32" : "float64";
  }
  std::string device_name() const override { return device_; }
  double compute_seconds() const override { return compute_ms_ * 1e-3; }

  void forward_all(const double* w, const int32_t* tokens, int rows, int len, double* logits) override {
    const int S = sh_.S;
    const int64_t N = int64_t(rows) * len;
    // the stages' buffers persist from call to call (they only grow)
    if (all_.empty())
      for (int s = 0; s < S; ++s) all_.push_back(std::make_unique<StageDev<T>>(s, rows, len, pool_));
    for (auto& a : all_) a->rows = rows, a->len = len;
    params_.reserve(d_);
    upload(params_.get(), w, d_);
    all_[0]->buf().tokens.reserve(N);
    upload_tokens(all_[0]->buf().tokens.get(), tokens, N);
    // stage s writes its output straight into stage s + 1's input
    for (int s = 1; s < S; ++s) all_[s]->buf().x.reserve(N * sh_.E);
    logits_.reserve(N * sh_.V);
    STALE_CUDA_CHECK(cudaEventRecord(compute_begin_.get(), stream()));
    embed_forward(params_.get() + off(0), all_[0]->buf().tokens.get(), rows, len, all_[1]->buf().x.get());
    for (int s = 1; s < S - 1; ++s) block_forward(params_.get() + off(s), *all_[s], all_[s + 1]->buf().x.get());
    head_forward(params_.get() + off(S - 1), *all_[S - 1], logits_.get());
    STALE_CUDA_CHECK(cudaEventRecord(compute_end_.get(), stream()));
    download(logits, logits_.get(), N * sh_.V);
    add_compute_time();
  }

  void backward_all(const double* dlogits, int lowest, double* grad) override {
    const int S = sh_.S;
    STALE_CHECK(!all_.empty(), "backward_all needs a forward_all first");
    const int rows = all_[0]->rows, len = all_[0]->len;
    const int64_t N = int64_t(rows) * len;
    grads_.reserve(d_);
    STALE_CUDA_CHECK(cudaMemsetAsync(grads_.get(), 0, d_ * sizeof(T), stream_.get()));
    dlogits_.reserve(N * sh_.V);
    upload(dlogits_.get(), dlogits, N * sh_.V);
    dx_.reserve(N * sh_.E);
    dnext_.reserve(N * sh_.E);
    T *dx = dx_.get(), *dnext = dnext_.get();
    STALE_CUDA_CHECK(cudaEventRecord(compute_begin_.get(), stream()));
    head_backward(params_.get() + off(S - 1), *all_[S - 1], dlogits_.get(), grads_.get() + off(S - 1), dx);
    for (int s = S - 2; s >= 1 && s >= lowest; --s) {
      block_backward(params_.get() + off(s), *all_[s], dx, grads_.get() + off(s), dnext);
      std::swap(dx, dnext);
    }
    if (lowest == 0) embed_backward(dx, all_[0]->buf().tokens.get(), rows, len, grads_.get() + off(0));
    STALE_CUDA_CHECK(cudaEventRecord(compute_end_.get(), stream()));
    download(grad + off(lowest), grads_.get() + off(lowest), d_ - off(lowest));
    add_compute_time();
  }

  std::unique_ptr<StageState> stage_forward(int s, int rows, int len, const int32_t* tokens, const double* in,
                                            const double* w_s, double* out) override {
    STALE_CHECK(s >= 0 && s < sh_.S, "stage id");
    auto st = std::make_unique<StageDev<T>>(s, rows, len, pool_);
    auto& b = st->buf();
    const int64_t N = int64_t(rows) * len, ds = size(s);
    stage_params_.reserve(ds);
    upload(stage_params_.get(), w_s, ds);
    const int64_t out_cols = s == sh_.S - 1 ? sh_.V : sh_.E;
    stage_out_.reserve(N * out_cols);
    if (s == 0) {
      b.tokens.reserve(N);
      upload_tokens(b.tokens.get(), tokens, N);
      embed_forward(stage_params_.get(), b.tokens.get(), rows, len, stage_out_.get());
    } else {
      b.x.reserve(N * sh_.E);
      upload(b.x.get(), in, N * sh_.E);
      if (s < sh_.S - 1) block_forward(stage_params_.get(), *st, stage_out_.get());
      else head_forward(stage_params_.get(), *st, stage_out_.get());
    }
    download(out, stage_out_.get(), N * out_cols);
    return st;
  }

  void stage_backward(int s, const StageState& state, const double* grad_out, const double* w_s, double* grad_w_s,
                      double* grad_in) override {
    const auto* st = dynamic_cast<const StageDev<T>*>(&state);
    STALE_CHECK(st != nullptr && st->s == s, "stage_backward needs this engine's state of stage s");
    const int64_t N = int64_t(st->rows) * st->len, ds = size(s);
    const int64_t out_cols = s == sh_.S - 1 ? sh_.V : sh_.E;
    stage_params_.reserve(ds);
    upload(stage_params_.get(), w_s, ds);
    stage_dout_.reserve(N * out_cols);
    upload(stage_dout_.get(), grad_out, N * out_cols);
    stage_grad_.reserve(ds);
    STALE_CUDA_CHECK(cudaMemsetAsync(stage_grad_.get(), 0, ds * sizeof(T), stream_.get()));
    dx_.reserve(N * sh_.E);
    if (s == 0) {
      embed_backward(stage_dout_.get(), st->buf().tokens.get(), st->rows, st->len, stage_grad_.get());
    } else if (s < sh_.S - 1) {
      block_backward(stage_params_.get(), *st, stage_dout_.get(), stage_grad_.get(), dx_.get());
    } else {
      head_backward(stage_params_.get(), *st, stage_dout_.get(), stage_grad_.get(), dx_.get());
    }
    download(grad_w_s, stage_grad_.get(), ds);
    if (s > 0) download(grad_in, dx_.get(), N * sh_.E);
  }

 private:
  int64_t off(int s) const { return L_.stage_offsets[s]; }
  int64_t size(int s) const { return L_.stage_offsets[s + 1] - L_.stage_offsets[s]; }
  cudaStream_t stream() const { return stream_.get(); }

  // after a download's synchronisation both events have completed
  void add_compute_time() {
    float ms = 0;
    STALE_CUDA_CHECK(cudaEventElapsedTime(&ms, compute_begin_.get(), compute_end_.get()));
    compute_ms_ += ms;
  }

  // host doubles → device T, and back. float: converted on the host (host_precision_convert.hpp)
  // into page-locked memory, so the bus carries 4 bytes a value at the pinned copy rate. Why:
  // a float32 whole-model step of the E5 paper model took 43 ms on the lent H100
  // (results/gpu/gpu_check_2026-11-22.md) where its 147 GFLOP need 2.9 ms at the measured
  // SGEMM rate; the step moves 2 × 89 MB of doubles through pageable copies. double→float
  // rounds to nearest even on either side, so the device sees the values a device-side
  // conversion gives. double: the pageable copy, converted (copied) on the device.
  void upload(T* dst, const double* src, int64_t n) {
    if constexpr (std::is_same_v<T, float>) {
      host_stage_.reserve(n);
      float* h = host_stage_.get();
      convert_on_host(h, src, n);
      STALE_CUDA_CHECK(cudaMemcpyAsync(dst, h, n * sizeof(float), cudaMemcpyHostToDevice, stream()));
      // the next upload may overwrite the pinned buffer only after this copy read it
      STALE_CUDA_CHECK(cudaStreamSynchronize(stream()));
      return;
    }
    staging_.reserve(n);
    STALE_CUDA_CHECK(cudaMemcpyAsync(staging_.get(), src, n * sizeof(double), cudaMemcpyHostToDevice, stream()));
    STALE_LAUNCH(from_double_kernel<T>, grid_for(n), kThreads, stream(), dst, staging_.get(), n);
    // the next upload may reuse the staging buffer only after this conversion read it: the
    // stream orders both, and the host array may be freed once the copy is done
    STALE_CUDA_CHECK(cudaStreamSynchronize(stream()));
  }
  void download(double* dst, const T* src, int64_t n) {
    if constexpr (std::is_same_v<T, float>) {
      host_stage_.reserve(n);
      float* h = host_stage_.get();
      STALE_CUDA_CHECK(cudaMemcpyAsync(h, src, n * sizeof(float), cudaMemcpyDeviceToHost, stream()));
      STALE_CUDA_CHECK(cudaStreamSynchronize(stream()));
      convert_on_host(dst, h, n);
      return;
    }
    staging_.reserve(n);
    STALE_LAUNCH(to_double_kernel<T>, grid_for(n), kThreads, stream(), staging_.get(), src, n);
    STALE_CUDA_CHECK(cudaMemcpyAsync(dst, staging_.get(), n * sizeof(double), cudaMemcpyDeviceToHost, stream()));
    STALE_CUDA_CHECK(cudaStreamSynchronize(stream()));
  }
  void upload_tokens(int32_t* dst, const int32_t* src, int64_t n) {
    STALE_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(int32_t), cudaMemcpyHostToDevice, stream()));
    STALE_CUDA_CHECK(cudaStreamSynchronize(stream()));
  }
  void zero(T* p, int64_t n) { STALE_CUDA_CHECK(cudaMemsetAsync(p, 0, n * sizeof(T), stream())); }

  // ---- layers on device pointers (charlm_layers.hpp semantics: backward accumulates)

  void matmul_forward(T* out, const T* inp, const T* W, const T* bias, int N, int C, int OC) {
    STALE_CUBLAS_CHECK(gemm(blas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, T(1), W, C, inp, C, T(0), out, OC));
    if (bias) STALE_LAUNCH(add_bias_kernel<T>, grid_for(int64_t(N) * OC), kThreads, stream(), out, bias, int64_t(N) * OC, OC);
  }

  void matmul_backward(T* dinp, T* dW, T* db, const T* dout, const T* inp, const T* W, int N, int C, int OC) {
    if (dinp) STALE_CUBLAS_CHECK(gemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, C, N, OC, T(1), W, C, dout, OC, T(1), dinp, C));
    if (dW) STALE_CUBLAS_CHECK(gemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_T, C, OC, N, T(1), inp, C, dout, OC, T(1), dW, C));
    if (db) column_sum(db, dout, N, OC);
  }

  // out[c] += Σ_r x[r, c], in a fixed order
  void column_sum(T* out, const T* x, int N, int C) {
    const int K = (N + kRowsPerChunk - 1) / kRowsPerChunk;
    partial_.reserve(int64_t(K) * C);
    const dim3 grid(grid_for(C), K);
    STALE_LAUNCH(column_sum_partial_kernel<T>, grid, kThreads, stream(), partial_.get(), x, N, C);
    STALE_LAUNCH(column_sum_finish_kernel<T>, grid_for(C), kThreads, stream(), out, partial_.get(), K, C);
  }

  void layernorm_forward(T* out, T* mean, T* rstd, const T* inp, const T* w, const T* b, int N, int C) {
    STALE_LAUNCH(layernorm_forward_kernel<T>, grid_for(int64_t(N) * kWarp), kThreads, stream(), out, mean, rstd, inp, w, b,
                 N, C);
  }

  void layernorm_backward(T* dinp, T* dw, T* db, const T* dout, const T* inp, const T* w, const T* mean,
                          const T* rstd, int N, int C) {
    STALE_LAUNCH(layernorm_backward_input_kernel<T>, grid_for(int64_t(N) * kWarp), kThreads, stream(), dinp, dout, inp, w,
                 mean, rstd, N, C);
    const int K = (N + kRowsPerChunk - 1) / kRowsPerChunk;
    partial_.reserve(2 * int64_t(K) * C);
    T* pw = partial_.get();
    T* pb = pw + int64_t(K) * C;
    const dim3 grid(grid_for(C), K);
    STALE_LAUNCH(layernorm_backward_params_partial_kernel<T>, grid, kThreads, stream(), pw, pb, dout, inp, mean, rstd, N, C);
    STALE_LAUNCH(column_sum_finish_kernel<T>, grid_for(C), kThreads, stream(), dw, pw, K, C);
    STALE_LAUNCH(column_sum_finish_kernel<T>, grid_for(C), kThreads, stream(), db, pb, K, C);
  }

  void attention_forward(T* out, T* att, const T* qkv, int B, int Tn) {
    const int C = sh_.E, NH = sh_.NH, hs = C / NH;
    const int64_t n = int64_t(B) * Tn * C, bh = int64_t(B) * NH;
    qkv_perm_.reserve(3 * n);
    T *q = qkv_perm_.get(), *k = q + n, *v = k + n;
    STALE_LAUNCH(permute_qkv_kernel<T>, grid_for(n), kThreads, stream(), q, k, v, qkv, B, Tn, NH, hs);
    preatt_.reserve(bh * Tn * Tn);
    STALE_CUBLAS_CHECK(gemm_batched(blas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, Tn, Tn, hs, T(1), k, hs, int64_t(Tn) * hs, q,
                                    hs, int64_t(Tn) * hs, T(0), preatt_.get(), Tn, int64_t(Tn) * Tn, static_cast<int>(bh)));
    const T scale = T(1) / sqrt(T(hs));
    STALE_LAUNCH(causal_softmax_kernel<T>, grid_for(bh * Tn * kWarp), kThreads, stream(), att, preatt_.get(),
                 static_cast<int>(bh * Tn), Tn, scale);
    heads_.reserve(n);
    STALE_CUBLAS_CHECK(gemm_batched(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, hs, Tn, Tn, T(1), v, hs, int64_t(Tn) * hs, att,
                                    Tn, int64_t(Tn) * Tn, T(0), heads_.get(), hs, int64_t(Tn) * hs, static_cast<int>(bh)));
    STALE_LAUNCH(heads_to_rows_kernel<T>, grid_for(n), kThreads, stream(), out, heads_.get(), B, Tn, NH, hs, true);
  }

  // dqkv is written (not accumulated): the callers pass a fresh buffer
  void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* att, int B, int Tn) {
    const int C = sh_.E, NH = sh_.NH, hs = C / NH;
    const int64_t n = int64_t(B) * Tn * C, bh = int64_t(B) * NH;
    qkv_perm_.reserve(3 * n);
    T *q = qkv_perm_.get(), *k = q + n, *v = k + n;
    STALE_LAUNCH(permute_qkv_kernel<T>, grid_for(n), kThreads, stream(), q, k, v, qkv, B, Tn, NH, hs);
    heads_.reserve(n);
    T* dy = heads_.get();
    STALE_LAUNCH(heads_to_rows_kernel<T>, grid_for(n), kThreads, stream(), dy, dout, B, Tn, NH, hs, false);
    preatt_.reserve(2 * bh * Tn * Tn);
    T *datt = preatt_.get(), *dpre = datt + bh * Tn * Tn;
    dqkv_perm_.reserve(3 * n);
    T *dq = dqkv_perm_.get(), *dk = dq + n, *dv = dk + n;
    const long long sTT = int64_t(Tn) * Tn, sTh = int64_t(Tn) * hs;
    const int count = static_cast<int>(bh);
    // datt = dy vᵀ;  dv = attᵀ dy
    STALE_CUBLAS_CHECK(gemm_batched(blas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, Tn, Tn, hs, T(1), v, hs, sTh, dy, hs, sTh,
                                    T(0), datt, Tn, sTT, count));
    STALE_CUBLAS_CHECK(gemm_batched(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_T, hs, Tn, Tn, T(1), dy, hs, sTh, att, Tn, sTT,
                                    T(0), dv, hs, sTh, count));
    const T scale = T(1) / sqrt(T(hs));
    STALE_LAUNCH(causal_softmax_backward_kernel<T>, grid_for(bh * Tn * kWarp), kThreads, stream(), dpre, datt, att,
                 static_cast<int>(bh * Tn), Tn, scale);
    // dq = dpre k;  dk = dpreᵀ q
    STALE_CUBLAS_CHECK(gemm_batched(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, hs, Tn, Tn, T(1), k, hs, sTh, dpre, Tn, sTT,
                                    T(0), dq, hs, sTh, count));
    STALE_CUBLAS_CHECK(gemm_batched(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_T, hs, Tn, Tn, T(1), q, hs, sTh, dpre, Tn, sTT,
                                    T(0), dk, hs, sTh, count));
    STALE_LAUNCH(unpermute_qkv_kernel<T>, grid_for(n), kThreads, stream(), dqkv, dq, dk, dv, B, Tn, NH, hs);
  }

  // ---- the three kinds of stage

  void embed_forward(const T* p, const int32_t* tok, int rows, int len, T* out) {
    const int64_t NC = int64_t(rows) * len * sh_.E;
    STALE_LAUNCH(encoder_forward_kernel<T>, grid_for(NC), kThreads, stream(), out, tok, p + L_.wte, p + L_.wpe, len, sh_.E,
                 NC);
  }

  void embed_backward(const T* dout, const int32_t* tok, int rows, int len, T* dp) {
    const int E = sh_.E;
    STALE_LAUNCH(encoder_backward_wpe_kernel<T>, grid_for(int64_t(len) * E), kThreads, stream(), dp + L_.wpe, dout, rows,
                 len, E);
    STALE_LAUNCH(encoder_backward_wte_kernel<T>, grid_for(int64_t(sh_.V) * E), kThreads, stream(), dp + L_.wte, dout, tok,
                 rows * len, sh_.V, E);
  }

  // a.x holds the input
  void block_forward(const T* p, StageDev<T>& st, T* out) {
    auto& a = st.buf();
    const int E = sh_.E, B = st.rows, Tn = st.len, N = B * Tn;
    const int64_t NE = int64_t(N) * E;
    for (auto* buf : {&a.ln1, &a.atty, &a.res2, &a.ln2}) buf->reserve(NE);
    for (auto* buf : {&a.mean1, &a.rstd1, &a.mean2, &a.rstd2}) buf->reserve(N);
    a.qkv.reserve(3 * NE);
    a.att.reserve(int64_t(B) * sh_.NH * Tn * Tn);
    a.fch.reserve(4 * NE);
    a.fchg.reserve(4 * NE);
    scratch_.reserve(NE);
    T* branch = scratch_.get();
    layernorm_forward(a.ln1.get(), a.mean1.get(), a.rstd1.get(), a.x.get(), p + L_.ln1w, p + L_.ln1b, N, E);
    matmul_forward(a.qkv.get(), a.ln1.get(), p + L_.qkvw, p + L_.qkvb, N, E, 3 * E);
    attention_forward(a.atty.get(), a.att.get(), a.qkv.get(), B, Tn);
    matmul_forward(branch, a.atty.get(), p + L_.attprojw, p + L_.attprojb, N, E, E);
    STALE_LAUNCH(residual_forward_kernel<T>, grid_for(NE), kThreads, stream(), a.res2.get(), a.x.get(), branch, NE);
    layernorm_forward(a.ln2.get(), a.mean2.get(), a.rstd2.get(), a.res2.get(), p + L_.ln2w, p + L_.ln2b, N, E);
    matmul_forward(a.fch.get(), a.ln2.get(), p + L_.fcw, p + L_.fcb, N, E, 4 * E);
    STALE_LAUNCH(gelu_forward_kernel<T>, grid_for(4 * NE), kThreads, stream(), a.fchg.get(), a.fch.get(), 4 * NE);
    matmul_forward(branch, a.fchg.get(), p + L_.fcprojw, p + L_.fcprojb, N, 4 * E, E);
    STALE_LAUNCH(residual_forward_kernel<T>, grid_for(NE), kThreads, stream(), out, a.res2.get(), branch, NE);
  }

  // dp accumulates; dx is overwritten
  void block_backward(const T* p, const StageDev<T>& st, const T* dout, T* dp, T* dx) {
    const auto& a = st.buf();
    const int E = sh_.E, B = st.rows, Tn = st.len, N = B * Tn;
    const int64_t NE = int64_t(N) * E;
    bwd_.reserve(11 * NE);
    T *dres2 = bwd_.get(), *dbranch = dres2 + NE, *dwide = dbranch + NE, *dwide2 = dwide + 4 * NE,
      *dln = dwide2 + 4 * NE;
    zero(bwd_.get(), 11 * NE);
    // out = res2 + fcproj(gelu(fc(ln2(res2))))
    STALE_LAUNCH(residual_backward_kernel<T>, grid_for(NE), kThreads, stream(), dres2, dbranch, dout, NE);
    matmul_backward(dwide, dp + L_.fcprojw, dp + L_.fcprojb, dbranch, a.fchg.get(), p + L_.fcprojw, N, 4 * E, E);
    STALE_LAUNCH(gelu_backward_kernel<T>, grid_for(4 * NE), kThreads, stream(), dwide2, a.fch.get(), dwide, 4 * NE);
    matmul_backward(dln, dp + L_.fcw, dp + L_.fcb, dwide2, a.ln2.get(), p + L_.fcw, N, E, 4 * E);
    layernorm_backward(dres2, dp + L_.ln2w, dp + L_.ln2b, dln, a.res2.get(), p + L_.ln2w, a.mean2.get(), a.rstd2.get(),
                       N, E);
    // res2 = x + attproj(attention(qkv(ln1(x))))
    zero(dx, NE);
    zero(dbranch, NE);
    STALE_LAUNCH(residual_backward_kernel<T>, grid_for(NE), kThreads, stream(), dx, dbranch, dres2, NE);
    T* datty = dwide;  // 4·NE free again: datty (NE) then dqkv (3·NE)
    T* dqkv = dwide + NE;
    zero(datty, NE);
    matmul_backward(datty, dp + L_.attprojw, dp + L_.attprojb, dbranch, a.atty.get(), p + L_.attprojw, N, E, E);
    attention_backward(dqkv, datty, a.qkv.get(), a.att.get(), B, Tn);
    zero(dln, NE);
    matmul_backward(dln, dp + L_.qkvw, dp + L_.qkvb, dqkv, a.ln1.get(), p + L_.qkvw, N, E, 3 * E);
    layernorm_backward(dx, dp + L_.ln1w, dp + L_.ln1b, dln, a.x.get(), p + L_.ln1w, a.mean1.get(), a.rstd1.get(), N, E);
  }

  // a.x holds the input; logits [N, V]
  void head_forward(const T* p, StageDev<T>& st, T* logits) {
    auto& a = st.buf();
    const int E = sh_.E, N = st.rows * st.len;
    a.lnf.reserve(int64_t(N) * E);
    a.meanf.reserve(N);
    a.rstdf.reserve(N);
    layernorm_forward(a.lnf.get(), a.meanf.get(), a.rstdf.get(), a.x.get(), p + L_.lnfw, p + L_.lnfb, N, E);
    matmul_forward(logits, a.lnf.get(), p + L_.lmw, static_cast<const T*>(nullptr), N, E, sh_.V);
  }

  void head_backward(const T* p, const StageDev<T>& st, const T* dlogits, T* dp, T* dx) {
    const auto& a = st.buf();
    const int E = sh_.E, N = st.rows * st.len;
    bwd_.reserve(int64_t(N) * E);
    T* dlnf = bwd_.get();
    zero(dlnf, int64_t(N) * E);
    matmul_backward(dlnf, dp + L_.lmw, static_cast<T*>(nullptr), dlogits, a.lnf.get(), p + L_.lmw, N, E, sh_.V);
    zero(dx, int64_t(N) * E);
    layernorm_backward(dx, dp + L_.lnfw, dp + L_.lnfb, dlnf, a.x.get(), p + L_.lnfw, a.meanf.get(), a.rstdf.get(), N,
                       E);
  }

  CharLmCudaShape sh_;
  CharLmCudaLayout L_;
  bool tf32_ = false;
  int64_t d_ = 0;
  std::string device_;
  cuda::Stream stream_;
  cuda::BlasHandle blas_;
  Event compute_begin_, compute_end_;
  double compute_ms_ = 0;
  std::shared_ptr<BufferPool<T>> pool_ = std::make_shared<BufferPool<T>>();
  // the last forward_all's stages and parameters
  std::vector<std::unique_ptr<StageDev<T>>> all_;
  DeviceArray<T> params_, grads_, logits_, dlogits_, dx_, dnext_;
  // stage-wise calls
  DeviceArray<T> stage_params_, stage_out_, stage_dout_, stage_grad_;
  // scratch (contents live within one layer call, or one stage call for bwd_)
  DeviceArray<T> scratch_, bwd_, partial_, qkv_perm_, dqkv_perm_, preatt_, heads_;
  DeviceArray<double> staging_;
  cuda::PinnedArray<float> host_stage_;
};

}  // namespace

bool charlm_cuda_compiled() { return true; }

std::unique_ptr<CharLmCudaEngine> make_charlm_cuda_engine(const CharLmCudaShape& shape, const CharLmCudaLayout& layout,
                                                          CharLmCudaPrecision precision) {
  int n = 0;
  const cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess || n == 0)
    throw UserError(std::string("backend cuda: no CUDA device (") + (rc != cudaSuccess ? cudaGetErrorString(rc) : "none found") +
                    "); use backend = \"cpu\"");
  switch (precision) {
    case CharLmCudaPrecision::Float32: return std::make_unique<Engine<float>>(shape, layout, false);
    case CharLmCudaPrecision::Tf32: return std::make_unique<Engine<float>>(shape, layout, true);
    case CharLmCudaPrecision::Float64: break;
  }
  return std::make_unique<Engine<double>>(shape, layout, false);
}

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
