// CUDA twin of the character-level GPT (charlm_cuda_engine.hpp): the layers of
// charlm_layers.hpp as small kernels (charlm_cuda_kernels.cuh), the matrix products as
// cuBLAS GEMMs (llm.c's train_gpt2.cu, fp32 path, without its fused/cuDNN kernels). Each kernel has its CPU
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
//
// This file holds the engine: parameters and activations on the device, the layer calls in
// order, the stage-wise and monolithic forward/backward, and the transfers. The kernels are
// in charlm_cuda_kernels.cuh, the GEMMs in charlm_cuda_blas.cuh, the per-stage buffers in
// charlm_cuda_stage_buffers.cuh.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "objectives/charlm/charlm_cuda_blas.cuh"
#include "objectives/charlm/charlm_cuda_engine.hpp"
#include "objectives/charlm/charlm_cuda_kernels.cuh"
#include "objectives/charlm/charlm_cuda_stage_buffers.cuh"
#include "objectives/cuda/cuda_check.cuh"
#include "objectives/cuda/cuda_event.cuh"
#include "objectives/charlm/host_precision_convert.hpp"
#include "src/core/error.hpp"

namespace stale {

namespace {

using namespace charlm_cuda;
using cuda::DeviceArray;
using cuda::Event;

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

}  // namespace stale
