#pragma once
// The device half of the CUDA linear models, behind an interface of plain host arrays.
//
// Why a separate, Eigen-free interface: the .cu files are compiled by nvcc (C++17, without
// -march=native), the rest of the harness by the host compiler with -march=native. Eigen
// objects allocated under one set of SIMD flags and freed under the other use different
// aligned allocators (handmade 32-byte alignment with AVX, plain malloc without), which
// corrupts the heap. So no Eigen type crosses into a .cu file: linear_model_cuda.cu
// implements this interface on raw double arrays, and linear_model_cuda_objective.cpp (host
// compiler) adapts it to the Objective interface. A build without nvcc links
// linear_model_cuda_nocuda.cpp, whose factory says "built without CUDA".
//
// Shapes (column-major throughout, like the data matrix X, n × d, lda = n):
//   Z  d × P   the points, one per column
//   A  r × P   activations X[rows, :] Z of a row range (a mini-batch or all data)
//   G  c × P   gradients restricted to a column range [col0, col0 + c) (a stage's block)
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace stale {

enum class LinearLoss { Squared, Logistic };
enum class Precision { Float64, Float32 };

struct LinearCudaData {
  const double* X = nullptr;       // n × d, column-major
  const double* y = nullptr;       // n
  const double* weight = nullptr;  // n sample weights c_i (full objective = Σ c_i ℓ_i)
  int64_t n = 0, d = 0;
  std::vector<int64_t> block_offsets;  // S + 1 stage boundaries, 0 … d (for staged calls)
};

class LinearCudaEngine {
 public:
  // Columns [first_col, first_col + num_cols) of Z are evaluated on rows [row0, row0 + rows);
  // `scale` multiplies ℓ' when the call does not use the sample weights (1 / batch size).
  struct Group {
    int64_t row0 = 0, rows = 0;
    int first_col = 0, num_cols = 0;
    double scale = 1.0;
  };

  virtual ~LinearCudaEngine() = default;
  virtual std::string precision() const = 0;
  virtual std::string device_name() const = 0;

  // For every group g and column p of it:
  //   a = X[rows_g, :] Z[:, p],  r_i = c_i ℓ'(a_i, y_i),  G[:, p] = X[rows_g, col0:col0+cols]ᵀ r,
  //   values[p] = Σ_i c'_i ℓ(a_i, y_i),
  // with c_i = c'_i = the sample weights when sample_weights, else c_i = scale_g, c'_i = 1.
  // G (cols × P) and values (P) may be null when not wanted. One upload of Z, one download
  // of the results; the groups run back to back on one stream.
  //
  // staged (P = 1, [col0, col0 + cols) a union of whole blocks): a and the gradient are
  // formed block by block with exactly the cuBLAS calls, operands and alignments of
  // forward_slice / loss_head / backward_slice, so that a mini-batch gradient equals the
  // stage-wise pipeline's bit for bit, as on the CPU twin (PipeDream ≡ RPD replaying its
  // delays relies on it). Otherwise a is one GEMV/GEMM over all d columns.
  virtual void grad_many(const double* Z, int P, const std::vector<Group>& groups, bool sample_weights, bool staged,
                         int64_t col0, int64_t cols, double* G, double* values) = 0;

  // Stage-wise pipeline on rows [row0, row0 + rows) and the block [col0, col0 + cols):
  //   out = in + X[rows, cols] w_s
  virtual void forward_slice(int64_t row0, int64_t rows, int64_t col0, int64_t cols, const double* w_s,
                             const double* in, double* out) = 0;
  //   grad_i = scale ℓ'(act_i, y_i),  returns Σ_i ℓ(act_i, y_i)
  virtual double loss_head(int64_t row0, int64_t rows, const double* act, double scale, double* grad) = 0;
  //   grad_w = X[rows, cols]ᵀ grad_out
  virtual void backward_slice(int64_t row0, int64_t rows, int64_t col0, int64_t cols, const double* grad_out,
                              double* grad_w) = 0;

  // Uploads `count` values and downloads them again through the staging path every call
  // uses, with the same synchronisation: the per-call transfer cost, for the benchmark.
  virtual void round_trip(const double* in, double* out, int64_t count) = 0;
};

// Uploads the data once (converted to float for Float32). Throws UserError when CUDA is not
// compiled in, no device is present, or the data does not fit in device memory.
std::unique_ptr<LinearCudaEngine> make_linear_cuda_engine(const LinearCudaData& data, LinearLoss loss,
                                                          Precision precision);

// Limits the benchmark compares against, measured on device 0.
struct CudaDeviceLimits {
  std::string device;
  double copy_bytes_per_s = 0;  // device-to-device cudaMemcpy, bytes read + written per second
  double dgemm_flops = 0;       // cuBLAS DGEMM, square, flop/s
  double sgemm_flops = 0;       // cuBLAS SGEMM (no TF32), square, flop/s
};
CudaDeviceLimits measure_cuda_device_limits();

}  // namespace stale
