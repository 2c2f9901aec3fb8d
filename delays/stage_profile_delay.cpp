// A fixed per-block delay profile: every update reads block i exactly min(d_i, k) updates old,
// d = delay.profile (one entry per block). It replays the shape of a pipeline's staleness
// without its randomness — e.g. PipeDream's steady-state delays by read block, S² − S/2 for
// block 0 falling to S/2 for the last (`stale schedule pipedream --stages S`, its
// delay_summary) — so that RPD's bound (docs/theory.md §3, δ = max_i d_i) and the measured
// rate can be compared for a profile measured on a cluster, one number per stage.
//
// This model, its key and its test are the whole of it: the key is declared here
// (add_component_keys), the registry entry here, the test in tests/delays/.
#include <algorithm>
#include <numeric>

#include "delays/delay_registry.hpp"
#include "src/config/config.hpp"

namespace stale {
namespace {

class StageProfileDelay final : public DelayModel {
 public:
  explicit StageProfileDelay(std::vector<int64_t> profile) : d_(std::move(profile)) {}
  std::string name() const override { return "profile"; }
  int64_t bound() const override { return *std::max_element(d_.begin(), d_.end()); }
  int64_t delay(int64_t k, int block) const override { return std::min(d_[static_cast<size_t>(block)], k); }
  double steady_state_mean() const override {
    return static_cast<double>(std::accumulate(d_.begin(), d_.end(), int64_t{0})) / static_cast<double>(d_.size());
  }

 private:
  std::vector<int64_t> d_;
};

const bool keys = add_component_keys({keys::IntList(
    "delay.profile", {},
    "profile: one delay per block (objective.stages entries, each ≥ 0); update k reads block i min(d_i, k) "
    "updates old, a per-stage profile measured on a cluster or read off `stale schedule`",
    0)});

const bool registered = DelayRegistry::add(
    {"profile", "a fixed delay per block (delay.profile), capped at min(d_i, k): a measured per-stage profile", 6,
     {"delay.profile"},
     [](const DelayContext& c) -> std::unique_ptr<DelayModel> {
       const std::vector<double> raw = c.cfg.get_floats("delay.profile");
       if (static_cast<int>(raw.size()) != c.stages)
         config_error("delay.profile",
                      "has " + std::to_string(raw.size()) + " entries but the run has objective.stages = " +
                          std::to_string(c.stages) + " blocks; give one delay per block, e.g. delay.profile=[" +
                          std::string(c.stages > 1 ? "6, 4, …, 0" : "3") + "]");
       std::vector<int64_t> d(raw.size());
       std::transform(raw.begin(), raw.end(), d.begin(), [](double v) { return static_cast<int64_t>(v); });
       return std::make_unique<StageProfileDelay>(std::move(d));
     },
     [](const Config& cfg, double) {
       const std::vector<double> p = cfg.get_floats("delay.profile");
       return p.empty() ? 1.0 : *std::max_element(p.begin(), p.end()) + 1.0;
     },
     /*simulates_schedule=*/false});

}  // namespace
}  // namespace stale
