#pragma once
// The on-disk cache of the linear models' constants (linear_constants.hpp): one record per
// data set under cache_dir() (cache_records.hpp), keyed by a hash of the data, the
// loss, λ and the algorithms' version. A record that cannot be written only costs time.
#include <cstdint>
#include <filesystem>
#include <string>

#include "objectives/cache_records.hpp"
#include "objectives/linear/linear_data.hpp"
#include "objectives/objective.hpp"

namespace stale {

// One record per data set: λ_max and λ_min of the Hessian, f_* and w_* (empty when f_* is in
// closed form) and how f_* was found. Written to a unique temporary name and renamed, so
// concurrent runs never read a half-written record.
struct CachedConstants {
  double lambda_max = 0, lambda_min = 0, f_star = 0;
  Vec w_star;
  std::string method;
};

// the key of (data, loss, λ) under the current algorithm version
uint64_t constants_key(const LinearData& data, const char* loss, double lambda);
// false when there is no record for `key` or it does not fit dimension d
bool load_cached(uint64_t key, Index d, CachedConstants& c);
void store_cached(uint64_t key, Index d, const CachedConstants& c);

// A solve's f_* and w_*: into c always, into the record under `key` only when `converged`, so
// that a later run never inherits a bad f_*.
void keep_solution(uint64_t key, Index d, double f_star, const Vec& w, const std::string& method, bool converged,
                   CachedConstants& cc, ObjectiveConstants& c);
// when a Newton-type logistic solve counts as converged (dense and sparse alike): |g|/|g0| ≤
// 1e-12, the Newton decrement at machine precision, or a stall at |g|/|g0| ≤ 1e-9
inline bool newton_converged(double rel, bool at_precision, bool stalled) {
  return rel <= 1e-12 || at_precision || (stalled && rel <= 1e-9);
}

// The Gram matrix H = Xᵀ diag(c) X + λI of the same data (the exact-metrics tracker's
// Hessian), stored beside the record for d ≤ kMaxCachedGramDim: at d = 512 computing it was a
// quarter of a short run's set-up, reading it back is a 2 MB copy. Bit-identical to the
// computed matrix (a content checksum guards the record).
constexpr Index kMaxCachedGramDim = 2048;
bool load_cached_gram(uint64_t key, Index d, Mat& H);
void store_cached_gram(uint64_t key, const Mat& H);

}  // namespace stale
