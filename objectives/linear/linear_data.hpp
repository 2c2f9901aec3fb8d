#pragma once
// Data of the linear models (docs/theory.md §7): a design matrix X (n × d), targets y, and the
// fixed partition of the rows into M near-equal mini-batches. Produced by the generators
// (on the host, seeded) or by the LIBSVM loader, then handed to a backend's objective.
//
// Sample weights make the full objective the mean of the batch objectives even when
// batch sizes differ by one: f = (1/M) Σ_m f_m with f_m the mean loss over batch m, so
// sample i of batch m carries c_i = 1/(M·n_m) (= 1/n when batch_size divides n).
#include <Eigen/SparseCore>
#include <optional>
#include <string>
#include <vector>

#include "src/core/types.hpp"

namespace stale {

// X stored by rows, compressed (CSR): what objective.storage = "sparse" keeps instead of the
// dense X (objectives/linear/linear_model_cpu_sparse.hpp)
using SparseRowMat = Eigen::SparseMatrix<double, Eigen::RowMajor>;

struct LinearData {
  Mat X;                      // n × d, column-major (X[:, slice_s] is contiguous per column); 0 × 0 when sparse
  SparseRowMat X_sparse;      // n × d CSR when the data are stored sparse (then X is empty), else 0 × 0
  Vec y;                      // n targets (least squares: real; logistic: {0, 1})
  Vec weight;                 // n sample weights c_i
  std::vector<Index> batch_offsets;  // M + 1 row offsets; batch m = rows [off[m], off[m+1])
  std::string description;    // e.g. "random n=600 d=512" or the data file path
  std::string source_path;    // the data file read, resolved ("" for generated data)
  std::optional<Vec> w_true;  // the generating weights, when known
  bool sparse() const { return X_sparse.rows() > 0; }
  Index n() const { return sparse() ? X_sparse.rows() : X.rows(); }
  Index d() const { return sparse() ? X_sparse.cols() : X.cols(); }
  int num_batches() const { return static_cast<int>(batch_offsets.size()) - 1; }
};

// Partition n rows into M = n / batch_size near-equal batches and set the weights.
void partition_batches(LinearData& data, Index batch_size);

// Least-squares generators, y = X w_true (no noise), so f_* = 0 and w_* = w_true.
LinearData make_random_least_squares(Index n, Index d, uint64_t seed);
// Hessian exactly T + μI, T = tridiag(−1, 2, −1) (for equal batches): X = √n Q Lᵀ, L Lᵀ = A.
LinearData make_nesterov_least_squares(Index n, Index d, double mu, uint64_t seed);
// Hessian V diag(λ) Vᵀ with λ spaced geometrically or linearly in [mu, L].
LinearData make_spectrum_least_squares(Index n, Index d, double mu, double L, bool geometric, uint64_t seed);
// the d prescribed eigenvalues, largest first
Vec prescribed_spectrum(Index d, double mu, double L, bool geometric);

// Logistic regression: X ~ N(0, I), w_true ~ N(0, I), y ~ Bernoulli(sigmoid(X w_true)).
LinearData make_synthetic_logistic(Index n, Index d, uint64_t seed);

}  // namespace stale
