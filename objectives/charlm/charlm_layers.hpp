#pragma once
// Layers of the character-level GPT (docs/theory.md §7), llm.c style: each layer is a pair
// `X_forward` / `X_backward` over plain row-major arrays, templated on the scalar (float for
// training, double for gradient checks). This CPU version (Eigen GEMMs + OpenMP) is the
// reference every fast path (charlm_cuda_kernels.cuh) is checked against.
//
// Shape letters, used everywhere below:
//   B  batch (windows per mini-batch)       T  time (context length; t indexes positions)
//   C  channels (embedding width E)          OC output channels of a linear layer
//   NH number of attention heads             hs head size C / NH
//   V  vocabulary size                       N  = B·T rows of an activation
// An activation [B, T, C] is stored as N rows of C contiguous values.
//
// Conventions (llm.c's): a forward writes its outputs; a backward ACCUMULATES (+=) into its
// gradient buffers, so the caller zeroes them once and residual branches just add up. A
// null gradient pointer means "not needed". A layer call is serial and sums in a fixed
// order; the caller parallelises over groups of windows (charlm_cpu.cpp). The layers only
// ever see a few windows' rows, so the B and N below are those of the group.
#include <cstdint>

namespace stale::charlm {

// out[b,t,:] = wte[tokens[b,t], :] + wpe[t, :]          wte [V, C], wpe [T, C]
template <class T>
void encoder_forward(T* out, const int32_t* tokens, const T* wte, const T* wpe, int B, int Tn, int C);
template <class T>
void encoder_backward(T* dwte, T* dwpe, const T* dout, const int32_t* tokens, int B, int Tn, int C);

// out = (inp − mean) · rstd · weight + bias per row; mean, rstd [N] are saved for backward
template <class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias, int N, int C);
template <class T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, const T* mean,
                        const T* rstd, int N, int C);

// out[N, OC] = inp[N, C] · weight[OC, C]ᵀ + bias[OC]   (bias may be null: the LM head)
template <class T>
void matmul_forward(T* out, const T* inp, const T* weight, const T* bias, int N, int C, int OC);
// dinp += dout · weight;  dweight += doutᵀ · inp;  dbias += Σ_rows dout
template <class T>
void matmul_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int N, int C, int OC);

// Causal multi-head self-attention on a fused qkv [N, 3C] (q | k | v, head h in columns
// h·hs … h·hs + hs − 1 of each third): att[b,h,t,t2] = softmax_{t2≤t}(q_t·k_t2 / √hs) (zero
// for t2 > t) is saved for backward; out[b,t,h·hs:(h+1)·hs] = Σ_t2 att[b,h,t,t2] v_t2.
template <class T>
void attention_forward(T* out, T* att, const T* qkv, int B, int Tn, int C, int NH);
template <class T>
void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* att, int B, int Tn, int C, int NH);

// GELU, tanh approximation (GPT-2): 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))
template <class T>
void gelu_forward(T* out, const T* inp, int64_t n);
template <class T>
void gelu_backward(T* dinp, const T* inp, const T* dout, int64_t n);

// out = a + b;  da += dout, db += dout
template <class T>
void residual_forward(T* out, const T* a, const T* b, int64_t n);
template <class T>
void residual_backward(T* da, T* db, const T* dout, int64_t n);

// Softmax cross-entropy, mean over the N rows: writes probs [N, V], returns
// (1/N) Σ_rows −log probs[row, targets[row]] (accumulated in double, in row order).
template <class T>
double crossentropy_forward(T* probs, const T* logits, const int32_t* targets, int N, int V);
// dlogits += dloss · (probs − onehot(targets)) / N
template <class T>
void crossentropy_backward(T* dlogits, const T* probs, const int32_t* targets, double dloss, int N, int V);

}  // namespace stale::charlm
