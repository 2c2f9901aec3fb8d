#pragma once
// L, μ and f_* of the linear models over CSR data (linear_model_cpu_sparse.hpp), by the same
// definitions as linear_constants.hpp but without a d × d matrix when d is large:
//  - H = Xᵀ diag(c) X (+ λI). For d ≤ kSparseDenseGramMaxDim the Gram matrix is formed dense
//    from the rows' nonzeros (Σ_i over nnz_i² products) and its extreme eigenvalues taken
//    exactly, as the dense twin does; above, λ_max by Lanczos with sparse products and μ = 0
//    (exact for least squares when n < d; otherwise a valid lower bound: "unknown");
//  - least squares: f_* by conjugate gradients on the normal equations H w = Xᵀ diag(c) y;
//  - logistic: L = ¼ λ_max(XᵀCX) + λ, μ = λ, f_* by Newton–CG (each Newton system solved by
//    CG with Hessian–vector products) with Armijo backtracking, to ‖∇f‖ ≤ 1e-12 ‖∇f(0)‖ or a
//    Newton decrement at machine precision.
// Cached like the dense constants ($STALE_CACHE_DIR, linear_constants_cache.hpp), under a
// hash of the CSR arrays, y, the weights, the loss, λ and kSparseConstantsVersion; only a
// converged f_* is cached.
#include <cstdint>
#include <functional>

#include "objectives/linear/linear_model_cpu_sparse.hpp"

namespace stale {

ObjectiveConstants least_squares_constants(const LeastSquaresCpuSparse& f);
ObjectiveConstants logistic_constants(const LogisticCpuSparse& f);

// up to this d the Gram matrix is formed dense (128 MiB) and its spectrum solved exactly,
// the bound of the dense twin's eigen solver (dense_spectrum.cpp)
constexpr Index kSparseDenseGramMaxDim = 4096;

// bump when a solver or tolerance below changes: old cache records are then never found
constexpr uint64_t kSparseConstantsVersion = 1;
uint64_t sparse_constants_key(const LinearData& data, const char* loss, double lambda);

// ---- the iterative building blocks (tested on small problems against dense solves)
using LinearOperator = std::function<void(const Vec& v, Vec& out)>;  // out = A v, A symmetric

// Largest eigenvalue of a symmetric positive semidefinite A (d × d) by Lanczos from a seeded
// start, without reorthogonalisation (lost orthogonality only duplicates converged Ritz
// values, the largest one still converges); stops when it changes by ≤ rel_tol in two
// consecutive steps or an invariant subspace is found. converged = false after max_steps.
double lanczos_lambda_max(const LinearOperator& A, Index d, int max_steps, double rel_tol, bool* converged = nullptr);

struct CgResult {
  Vec x;
  int iterations = 0;
  double rel_residual = 0;  // ‖b − A x‖ / ‖b‖ (the recursive residual)
};
// A x = b for symmetric positive semidefinite A (b in A's range), from x = 0
CgResult conjugate_gradient(const LinearOperator& A, const Vec& b, double rel_tol, int max_iterations);

}  // namespace stale
