#pragma once
// The run observer the tests record a method's trajectory with: every iterate w_0 … w_K,
// every update event, and each update's per-block delays (copied: the event's pointer is
// only valid during the call).
#include <cstdint>
#include <vector>

#include "optimizers/method.hpp"

namespace stale::test {

class IterateRecorder final : public RunObserver {
 public:
  std::vector<Vec> iterates;                 // w_0, w_1, …: iterates[k] is w after update k
  std::vector<UpdateEvent> events;           // events[k - 1] is update k (its delays pointer cleared)
  std::vector<std::vector<int64_t>> delays;  // delays[k - 1]: update k's per-block delays (empty: fresh reads)
  void on_start(const Vec& w0) override { iterates.push_back(w0); }
  void on_update(const UpdateEvent& e, ConstVecRef, const Vec& w) override {
    iterates.push_back(w);
    delays.push_back(e.delays ? *e.delays : std::vector<int64_t>{});
    events.push_back(e);
    events.back().delays = nullptr;
  }
  bool should_stop() const override { return false; }
};

}  // namespace stale::test
