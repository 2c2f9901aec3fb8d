// Fresh reads: RPD with this model is block-coordinate SGD, bit for bit.
#include "delays/delay_registry.hpp"
#include "src/config/config.hpp"

namespace stale {
namespace {
class ZeroDelay final : public DelayModel {
 public:
  std::string name() const override { return "zero"; }
  int64_t bound() const override { return 0; }
  int64_t delay(int64_t, int) const override { return 0; }
  double steady_state_mean() const override { return 0.0; }
};
}  // namespace
std::unique_ptr<DelayModel> make_zero_delay() { return std::make_unique<ZeroDelay>(); }
namespace {
const bool registered = DelayRegistry::add(
    {"zero", "fresh reads: rpd is block-coordinate SGD bit for bit", 0, {}, [](const DelayContext&) {
       return make_zero_delay();
     },
     nullptr, /*simulates_schedule=*/false, /*fixed_delay=*/[](const Config&) -> int64_t { return 0; }});
}  // namespace
}  // namespace stale
