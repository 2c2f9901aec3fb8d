// Light-tailed random delays: geometric with success probability p = 1/(1 + mean), so the
// untruncated mean is `mean`, truncated to {0, …, min(δ, k)} (a delay must be bounded for
// docs/theory.md §3). Drawn by inverting the truncated CDF
//   F(j) = (1 − q^{j+1}) / (1 − q^{cap+1}),  q = 1 − p.
#include <algorithm>
#include <cmath>

#include "delays/delay_registry.hpp"
#include "src/config/config.hpp"
#include "src/core/rng.hpp"

namespace stale {

double truncated_geometric_mean(double mean, int64_t cap) {
  if (mean <= 0) return 0.0;
  const double q = mean / (1.0 + mean);
  double num = 0, den = 0, qj = 1;
  for (int64_t j = 0; j <= cap; ++j, qj *= q) num += static_cast<double>(j) * qj, den += qj;
  return num / den;
}

namespace {
class GeometricDelay final : public DelayModel {
 public:
  GeometricDelay(double mean, int64_t d, uint64_t seed) : mean_(mean), d_(d), seed_(seed) {
    q_ = mean / (1.0 + mean);
  }
  std::string name() const override { return "geometric"; }
  int64_t bound() const override { return d_; }
  int64_t delay(int64_t k, int block) const override {
    const int64_t cap = std::min(d_, k);
    if (cap == 0 || q_ == 0.0) return 0;
    const double u = bits_to_unit(hash_bits(seed_, Stream::Delays, static_cast<uint64_t>(k), static_cast<uint64_t>(block)));
    // smallest j with F(j) > u  ⇔  q^{j+1} < 1 − u (1 − q^{cap+1})
    const double target = 1.0 - u * (1.0 - std::pow(q_, static_cast<double>(cap + 1)));
    const double j = std::ceil(std::log(target) / std::log(q_) - 1.0);
    return std::clamp<int64_t>(static_cast<int64_t>(j), 0, cap);
  }
  double steady_state_mean() const override { return truncated_geometric_mean(mean_, d_); }

 private:
  double mean_, q_;
  int64_t d_;
  uint64_t seed_;
};
}  // namespace

std::unique_ptr<DelayModel> make_geometric_delay(double mean, int64_t d, uint64_t seed) {
  return std::make_unique<GeometricDelay>(mean, d, seed);
}

namespace {
const bool registered = DelayRegistry::add(
    {"geometric", "geometric with mean delay.mean, truncated to {0, ..., min(delta, k)}", 3, {"delay.max", "delay.mean"},
     [](const DelayContext& c) {
       const int64_t delta = c.cfg.get_int("delay.max");
       if (c.cfg.get_float("delay.mean") > 0 && delta == 0)
         config_error("delay.max", "the geometric model needs a truncation bound delay.max >= 1");
       return make_geometric_delay(c.cfg.get_float("delay.mean"), delta, static_cast<uint64_t>(c.cfg.get_int("seed")));
     },
     versions_up_to_delay_max, /*simulates_schedule=*/false});
}  // namespace

}  // namespace stale
