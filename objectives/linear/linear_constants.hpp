#pragma once
// Exact constants of the linear models, needed by the bound of docs/theory.md §3:
//  - least squares: H = Xᵀ diag(c) X is the Hessian; L = λ_max(H), μ = λ_min(H) exactly;
//    f_* = 0 in closed form when y = X w_true (all three generators), else a normal-equation
//    solve;
//  - logistic: L = ¼ λ_max(Xᵀ diag(c) X) + λ (an upper bound), μ = λ; f_* by damped Newton to
//    ‖∇f‖ ≤ 1e-12 ‖∇f(0)‖.
// Both are cached on disk ($STALE_CACHE_DIR, default ~/.cache/stale) under a hash of the data,
// the loss, λ and the algorithms' version: the eigenvalues cost O(d³) and a real data set
// seconds per Newton step, while a sweep builds the same data set hundreds of times. Only a
// converged f_* is cached.
//
// Files: least_squares_constants.cpp, logistic_constants.cpp (damped Newton),
// dense_spectrum.* (eigenvalues, the memory check), linear_constants_cache.* (the disk cache).
#include "objectives/linear/linear_model_cpu.hpp"

namespace stale {

ObjectiveConstants least_squares_constants(const LeastSquaresCpu& f);
ObjectiveConstants logistic_constants(const LogisticCpu& f);

}  // namespace stale
