#pragma once
// The kernels of the char-level GPT's CUDA twin: the layers of charlm_layers.hpp (encoder,
// LayerNorm, bias, residual, GELU, attention's permutations and causal softmax), each the
// device twin of its CPU reference in charlm_layers_cpu.cpp; tests/gpu/test_charlm_cuda.cpp
// checks every stage against it on awkward sizes. Templates in T = float | double,
// instantiated by the engine (charlm_cuda_engine.cu).
//
// Shape letters as in charlm_layers.hpp: B windows (rows), T positions (len), C = E
// channels, OC output channels, NH heads, hs = C / NH, V vocabulary, N = B·T.
//
// Determinism: no atomics. Every reduction (LayerNorm statistics, softmax, bias and
// LayerNorm parameter gradients, embedding gradients) has a fixed order or a fixed
// shuffle tree.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "objectives/charlm/charlm_cuda_launch.cuh"

namespace stale::charlm_cuda {

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

}  // namespace stale::charlm_cuda
