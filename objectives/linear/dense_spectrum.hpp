#pragma once
// Dense symmetric d × d matrices behind the linear models' constants (linear_constants.hpp):
// their extreme eigenvalues, and the memory check made before one is formed.
#include <string>

#include "src/core/types.hpp"

namespace stale {

// extreme eigenvalues of a symmetric matrix (dense solver up to 4096, else Lanczos-free
// power iteration for the largest and 0 for the smallest)
void extreme_eigenvalues(const Mat& H, double& lambda_max, double& lambda_min);

// throws (naming objective.dim and the data file's feature indices) when `copies` dense
// d × d matrices of double do not fit the memory budget (src/core/memory.hpp)
void check_dense_hessian(Index d, int copies, const std::string& what);

}  // namespace stale
