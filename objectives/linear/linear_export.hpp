#pragma once
// The linear models' export (objective_export.hpp): the data, partition and exact constants of
// a least-squares or logistic config, as a run of it sees them.
#include "objectives/objective_export.hpp"

namespace stale {

class Config;

// X [n × d] row-major (None for data stored sparse: then X_csr/{indptr, indices, data, shape},
// scipy.sparse.csr_matrix's arrays), y, the sample weights, batch_offsets, w_true (or None),
// L, L_exact, mu, f_star, f_star_method, f_star_is_lower_bound, w_star (or None), block_sizes
// and the description; built on the cpu
ObjectiveExport linear_objective_export(const Config& cfg);

}  // namespace stale
