#pragma once
// When a run stops as if interrupted: a SIGINT/SIGTERM/SIGHUP the handler recorded
// (src/run/interrupt.hpp), or k ≥ stop_after (tests of checkpoint and resume). Latched at an
// update boundary, so that the method checkpoints and returns there; once latched it stays.
#include <cstdint>

#include "src/run/interrupt.hpp"

namespace stale {

class StopPolicy {
 public:
  // stop_after: 0 never
  explicit StopPolicy(int64_t stop_after) : stop_after_(stop_after) {}
  // at the run's start, after each update and after a restore, with the updates done. A
  // signal is taken only at an update whose event the method computed in full (`signals`:
  // MetricsObserver::records_update); stop_after is known before the update and answered there
  void latch(int64_t k, bool signals = true) {
    if ((signals && stop_requested()) || reaches(k)) stopping_ = true;
  }
  // whether update k reaches stop_after
  bool reaches(int64_t k) const { return stop_after_ > 0 && k >= stop_after_; }
  bool stopping() const { return stopping_; }

 private:
  int64_t stop_after_;
  bool stopping_ = false;
};

}  // namespace stale
