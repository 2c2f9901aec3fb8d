#include "src/pipeline/op_source.hpp"

#include <algorithm>
#include <numeric>

#include "src/core/error.hpp"

namespace stale {

namespace {

class PrecomputedOps final : public OpSource {
 public:
  PrecomputedOps(const Schedule& s, const SimResult& sim, int64_t window)
      : s_(s), sim_(sim), moments_(window, s.blocks()) {
    STALE_CHECK(sim.start.size() == s.ops.size(), "a precomputed order needs the simulation's timeline");
    order_.resize(s.ops.size());
    std::iota(order_.begin(), order_.end(), 0);
    std::vector<int> device_of_op(s.ops.size());
    for (int d = 0; d < s.stages; ++d)
      for (int64_t i = s.offsets[d]; i < s.offsets[d + 1]; ++i) device_of_op[i] = d;
    std::stable_sort(order_.begin(), order_.end(), [&](int64_t a, int64_t b) {
      if (sim.start[a] != sim.start[b]) return sim.start[a] < sim.start[b];
      return device_of_op[a] < device_of_op[b];
    });
  }
  int64_t next() override { return pos_ < order_.size() ? order_[pos_++] : -1; }
  const OpTiming& finish(const OpState&) override {
    const int64_t idx = order_[pos_ - 1];
    timing_.end = sim_.end[idx];
    timing_.delays = nullptr;
    if (s_.ops[idx].updates()) {
      if (s_.replicas == 1 && update_index_ < static_cast<int64_t>(sim_.updates.size())) {
        row_ = sim_.delay_row(sim_.updates[update_index_]);
        moments_.add(row_);
        timing_.delays = &row_;
      }
      ++update_index_;
    }
    return timing_;
  }
  DelayMoments moments() override {
    moments_.close();
    return moments_;
  }
  std::shared_ptr<const SimResult> timeline() override { return nullptr; }

 private:
  const Schedule& s_;
  const SimResult& sim_;
  std::vector<int64_t> order_;
  size_t pos_ = 0;
  int64_t update_index_ = 0;  // position in sim.updates (serial order)
  std::vector<int64_t> row_;
  OpTiming timing_;
  DelayMoments moments_;
};

}  // namespace

std::unique_ptr<OpSource> precomputed_ops(const Schedule& schedule, const SimResult& sim, int64_t moment_window) {
  return std::make_unique<PrecomputedOps>(schedule, sim, moment_window);
}

}  // namespace stale
