#pragma once
// When a run's metrics are evaluated and recorded (log.every, log.iterates_every,
// log.exact_mean): a row at k = 0, at every update that crosses a multiple of `every`, and at
// the last update K; an iterate with every stride-th row and the last. Every question about the
// cadence is answered here, so that the recorder and anyone asking ahead (a method that skips
// a logged-only quantity off the cadence) agree by construction.
#include <algorithm>
#include <cstdint>

#include "src/config/log_params.hpp"

namespace stale {

class LogCadence {
 public:
  // iterates_every: −1 auto (LogParams::iterate_cadence), 0 none
  LogCadence(int64_t every, int64_t iterates_every, bool exact_mean, int64_t updates, int64_t dim)
      : every_(every),
        iterates_every_(LogParams::resolved_iterate_cadence(every, iterates_every, dim)),
        updates_(updates),
        exact_mean_(exact_mean) {}

  // an update that took the count from k_before to k writes a row: it crossed a multiple of
  // `every` (several updates reported at once may cross one), or it is the last
  bool on_cadence(int64_t k_before, int64_t k) const { return k / every_ != k_before / every_ || k == updates_; }
  // f and ∇f are evaluated at every update for the exact running mean
  // (1/K) Σ_{k<K} ‖∇f(w_k)‖², else only on the cadence (the mean then samples the rows)
  bool evaluates(bool on_cadence) const { return exact_mean_ || on_cadence; }
  bool exact_mean() const { return exact_mean_; }

  // the row numbered `row` (0 at k = 0), at update k, also stores the iterate
  bool iterate_due(int64_t row, int64_t k) const {
    return iterates_every_ > 0 && (row % std::max<int64_t>(1, iterates_every_ / every_) == 0 || k == updates_);
  }
  // what the log reserves: row 0, one per cadence, the last; an iterate every stride-th row and the last
  int64_t expected_rows() const { return updates_ / std::max<int64_t>(1, every_) + 2; }
  int64_t expected_iterates() const {
    const int64_t stride = std::max<int64_t>(1, iterates_every_ / std::max<int64_t>(1, every_));
    return iterates_every_ > 0 ? expected_rows() / stride + 2 : 0;
  }
  int64_t updates() const { return updates_; }

 private:
  int64_t every_, iterates_every_, updates_;
  bool exact_mean_;
};

}  // namespace stale
