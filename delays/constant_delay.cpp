// Every block is read exactly δ updates old (min(δ, k) at the start): the worst case the
// bound of docs/theory.md §3 allows, applied to every block at every step.
#include "delays/delay_registry.hpp"
#include "src/config/config.hpp"

#include <algorithm>

namespace stale {
namespace {
class ConstantDelay final : public DelayModel {
 public:
  explicit ConstantDelay(int64_t d) : d_(d) {}
  std::string name() const override { return "constant"; }
  int64_t bound() const override { return d_; }
  int64_t delay(int64_t k, int) const override { return std::min(d_, k); }
  double steady_state_mean() const override { return static_cast<double>(d_); }

 private:
  int64_t d_;
};
}  // namespace
std::unique_ptr<DelayModel> make_constant_delay(int64_t d) { return std::make_unique<ConstantDelay>(d); }
namespace {
const bool registered = DelayRegistry::add({"constant", "every read is min(delta, k) updates old", 1, {"delay.max"},
                                            [](const DelayContext& c) {
                                              return make_constant_delay(c.cfg.get_int("delay.max"));
                                            },
                                            versions_up_to_delay_max, /*simulates_schedule=*/false,
                                            /*fixed_delay=*/[](const Config& cfg) { return cfg.get_int("delay.max"); }});
}  // namespace
}  // namespace stale
