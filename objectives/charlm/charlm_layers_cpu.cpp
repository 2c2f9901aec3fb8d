// CPU reference of the character-level GPT's layers (charlm_layers.hpp): serial loops as in
// llm.c's train_gpt2.c, with the matrix products handed to Eigen over mapped row-major
// arrays. Parallelism lives one level up (charlm_cpu.cpp runs a stage on groups of windows
// in parallel), so a layer call never forks threads and needs no barrier.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>

#include "objectives/charlm/charlm_layers.hpp"

namespace stale::charlm {

namespace {

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MapRM = Eigen::Map<RowMat<T>>;
template <class T>
using CMapRM = Eigen::Map<const RowMat<T>>;
template <class T>
using StridedRM = Eigen::Map<RowMat<T>, 0, Eigen::OuterStride<>>;
template <class T>
using CStridedRM = Eigen::Map<const RowMat<T>, 0, Eigen::OuterStride<>>;
template <class T>
using VecT = Eigen::Matrix<T, Eigen::Dynamic, 1>;

}  // namespace

// ---- encoder (token + position embedding)

template <class T>
void encoder_forward(T* out, const int32_t* tokens, const T* wte, const T* wpe, int B, int Tn, int C) {
  for (int64_t r = 0; r < int64_t(B) * Tn; ++r) {
    const T* e = wte + int64_t(tokens[r]) * C;
    const T* p = wpe + (r % Tn) * C;
    T* o = out + r * C;
    for (int c = 0; c < C; ++c) o[c] = e[c] + p[c];
  }
}

template <class T>
void encoder_backward(T* dwte, T* dwpe, const T* dout, const int32_t* tokens, int B, int Tn, int C) {
  for (int64_t r = 0; r < int64_t(B) * Tn; ++r) {
    const T* d = dout + r * C;
    T* e = dwte + int64_t(tokens[r]) * C;
    T* p = dwpe + (r % Tn) * C;
    for (int c = 0; c < C; ++c) e[c] += d[c], p[c] += d[c];
  }
}

// ---- layer normalisation

template <class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias, int N, int C) {
  const T eps = T(1e-5);
  for (int64_t r = 0; r < N; ++r) {
    const T* x = inp + r * C;
    T m = 0;
    for (int c = 0; c < C; ++c) m += x[c];
    m /= T(C);
    T v = 0;
    for (int c = 0; c < C; ++c) v += (x[c] - m) * (x[c] - m);
    v /= T(C);
    const T s = T(1) / std::sqrt(v + eps);
    T* o = out + r * C;
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[r] = m;
    rstd[r] = s;
  }
}

template <class T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, const T* mean,
                        const T* rstd, int N, int C) {
  for (int64_t r = 0; r < N; ++r) {
    const T* d = dout + r * C;
    const T* x = inp + r * C;
    const T m = mean[r], s = rstd[r];
    // dinp = rstd · (dnorm − mean(dnorm) − norm · mean(dnorm · norm)),  dnorm = weight ⊙ dout
    T dnorm_mean = 0, dnorm_norm_mean = 0;
    for (int c = 0; c < C; ++c) {
      const T norm = (x[c] - m) * s, dnorm = weight[c] * d[c];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= T(C);
    dnorm_norm_mean /= T(C);
    T* di = dinp + r * C;
    for (int c = 0; c < C; ++c) {
      const T norm = (x[c] - m) * s, dnorm = weight[c] * d[c];
      if (dweight) dweight[c] += norm * d[c];
      if (dbias) dbias[c] += d[c];
      di[c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
    }
  }
}

// ---- linear layer

template <class T>
void matmul_forward(T* out, const T* inp, const T* weight, const T* bias, int N, int C, int OC) {
  MapRM<T> Y(out, N, OC);
  Y.noalias() = CMapRM<T>(inp, N, C) * CMapRM<T>(weight, OC, C).transpose();
  if (bias) Y.rowwise() += Eigen::Map<const VecT<T>>(bias, OC).transpose();
}

template <class T>
void matmul_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int N, int C,
                     int OC) {
  CMapRM<T> D(dout, N, OC);
  if (dinp) MapRM<T>(dinp, N, C).noalias() += D * CMapRM<T>(weight, OC, C);
  if (dweight) MapRM<T>(dweight, OC, C).noalias() += D.transpose() * CMapRM<T>(inp, N, C);
  if (dbias) {
    for (int64_t r = 0; r < N; ++r)
      for (int o = 0; o < OC; ++o) dbias[o] += dout[r * OC + o];
  }
}

// ---- causal self-attention

template <class T>
void attention_forward(T* out, T* att, const T* qkv, int B, int Tn, int C, int NH) {
  const int hs = C / NH;
  const T scale = T(1) / std::sqrt(T(hs));
  const Eigen::OuterStride<> s3(3 * C), s1(C);
  for (int64_t i = 0; i < int64_t(B) * NH; ++i) {
    const int64_t b = i / NH, h = i % NH;
    const T* base = qkv + b * Tn * 3 * C + h * hs;
    CStridedRM<T> Q(base, Tn, hs, s3), K(base + C, Tn, hs, s3), Vv(base + 2 * C, Tn, hs, s3);
    MapRM<T> A(att + i * Tn * Tn, Tn, Tn);
    A.noalias() = Q * K.transpose();
    for (int t = 0; t < Tn; ++t) {
      T* a = A.data() + int64_t(t) * Tn;
      T mx = -std::numeric_limits<T>::infinity();
      for (int t2 = 0; t2 <= t; ++t2) mx = std::max(mx, a[t2] * scale);
      T sum = 0;
      for (int t2 = 0; t2 <= t; ++t2) sum += (a[t2] = std::exp(a[t2] * scale - mx));
      const T inv = T(1) / sum;
      for (int t2 = 0; t2 <= t; ++t2) a[t2] *= inv;
      for (int t2 = t + 1; t2 < Tn; ++t2) a[t2] = 0;
    }
    StridedRM<T>(out + b * Tn * C + h * hs, Tn, hs, s1).noalias() = A * Vv;
  }
}

template <class T>
void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* att, int B, int Tn, int C, int NH) {
  const int hs = C / NH;
  const T scale = T(1) / std::sqrt(T(hs));
  const Eigen::OuterStride<> s3(3 * C), s1(C);
  RowMat<T> dA(Tn, Tn);
  for (int64_t i = 0; i < int64_t(B) * NH; ++i) {
    const int64_t b = i / NH, h = i % NH;
    const int64_t off = b * Tn * 3 * C + h * hs;
    CStridedRM<T> Q(qkv + off, Tn, hs, s3), K(qkv + off + C, Tn, hs, s3), Vv(qkv + off + 2 * C, Tn, hs, s3);
    StridedRM<T> dQ(dqkv + off, Tn, hs, s3), dK(dqkv + off + C, Tn, hs, s3), dV(dqkv + off + 2 * C, Tn, hs, s3);
    CMapRM<T> A(att + i * Tn * Tn, Tn, Tn);
    CStridedRM<T> dO(dout + b * Tn * C + h * hs, Tn, hs, s1);
    dV.noalias() += A.transpose() * dO;
    dA.noalias() = dO * Vv.transpose();
    // softmax backward on the causal rows; dA becomes d(pre-softmax scores) · scale
    for (int t = 0; t < Tn; ++t) {
      const T* a = A.data() + int64_t(t) * Tn;
      T* d = dA.data() + int64_t(t) * Tn;
      T dot = 0;
      for (int t2 = 0; t2 <= t; ++t2) dot += a[t2] * d[t2];
      for (int t2 = 0; t2 <= t; ++t2) d[t2] = a[t2] * (d[t2] - dot) * scale;
      for (int t2 = t + 1; t2 < Tn; ++t2) d[t2] = 0;
    }
    dQ.noalias() += dA * K;
    dK.noalias() += dA.transpose() * Q;
  }
}

// ---- GELU and residual

template <class T>
void gelu_forward(T* out, const T* inp, int64_t n) {
  const T k = std::sqrt(T(2) / T(M_PI));
  for (int64_t i = 0; i < n; ++i) {
    const T x = inp[i];
    out[i] = T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
  }
}

template <class T>
void gelu_backward(T* dinp, const T* inp, const T* dout, int64_t n) {
  const T k = std::sqrt(T(2) / T(M_PI));
  for (int64_t i = 0; i < n; ++i) {
    const T x = inp[i];
    const T th = std::tanh(k * (x + T(0.044715) * x * x * x));
    const T sech2 = T(1) - th * th;
    const T local = T(0.5) * (T(1) + th) + T(0.5) * x * sech2 * k * (T(1) + T(3 * 0.044715) * x * x);
    dinp[i] += local * dout[i];
  }
}

template <class T>
void residual_forward(T* out, const T* a, const T* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <class T>
void residual_backward(T* da, T* db, const T* dout, int64_t n) {
  for (int64_t i = 0; i < n; ++i) da[i] += dout[i], db[i] += dout[i];
}

// ---- softmax cross-entropy

template <class T>
double crossentropy_forward(T* probs, const T* logits, const int32_t* targets, int N, int V) {
  double loss = 0;
  for (int64_t r = 0; r < N; ++r) {
    const T* l = logits + r * V;
    T* p = probs + r * V;
    T mx = l[0];
    for (int v = 1; v < V; ++v) mx = std::max(mx, l[v]);
    T sum = 0;
    for (int v = 0; v < V; ++v) sum += (p[v] = std::exp(l[v] - mx));
    const T inv = T(1) / sum;
    for (int v = 0; v < V; ++v) p[v] *= inv;
    loss -= std::log(static_cast<double>(p[targets[r]]));
  }
  return loss / N;
}

template <class T>
void crossentropy_backward(T* dlogits, const T* probs, const int32_t* targets, double dloss, int N, int V) {
  const T scale = static_cast<T>(dloss / N);
  for (int64_t r = 0; r < N; ++r) {
    const T* p = probs + r * V;
    T* d = dlogits + r * V;
    for (int v = 0; v < V; ++v) d[v] += (p[v] - (v == targets[r] ? T(1) : T(0))) * scale;
  }
}

#define STALE_CHARLM_INSTANTIATE(T)                                                                              \
  template void encoder_forward<T>(T*, const int32_t*, const T*, const T*, int, int, int);                      \
  template void encoder_backward<T>(T*, T*, const T*, const int32_t*, int, int, int);                           \
  template void layernorm_forward<T>(T*, T*, T*, const T*, const T*, const T*, int, int);                       \
  template void layernorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*, int, int);  \
  template void matmul_forward<T>(T*, const T*, const T*, const T*, int, int, int);                             \
  template void matmul_backward<T>(T*, T*, T*, const T*, const T*, const T*, int, int, int);                    \
  template void attention_forward<T>(T*, T*, const T*, int, int, int, int);                                     \
  template void attention_backward<T>(T*, const T*, const T*, const T*, int, int, int, int);                    \
  template void gelu_forward<T>(T*, const T*, int64_t);                                                         \
  template void gelu_backward<T>(T*, const T*, const T*, int64_t);                                              \
  template void residual_forward<T>(T*, const T*, const T*, int64_t);                                           \
  template void residual_backward<T>(T*, T*, const T*, int64_t);                                                \
  template double crossentropy_forward<T>(T*, const T*, const int32_t*, int, int);                              \
  template void crossentropy_backward<T>(T*, const T*, const int32_t*, double, int, int);

STALE_CHARLM_INSTANTIATE(float)
STALE_CHARLM_INSTANTIATE(double)

}  // namespace stale::charlm
