// The RPD authors' delay rule (docs/theory.md §2): each block's delay is drawn i.i.d. uniform on
// {0, …, min(δ, k)}, independently of the stage and batch draws.
#include <algorithm>
#include <vector>

#include "delays/delay_registry.hpp"
#include "src/config/config.hpp"
#include "src/core/rng.hpp"

namespace stale {
namespace {
class UniformDelay final : public DelayModel {
 public:
  UniformDelay(int64_t d, uint64_t seed) : d_(d), seed_(seed) {}
  std::string name() const override { return "uniform"; }
  int64_t bound() const override { return d_; }
  int64_t delay(int64_t k, int block) const override {
    // 53-bit uniform times range: bias ≤ range / 2^53, far below any test's resolution
    const double u = bits_to_unit(hash_bits(seed_, Stream::Delays, static_cast<uint64_t>(k), static_cast<uint64_t>(block)));
    return scale(u, k);
  }
  // the same values with the k part of the hash taken once and the block parts from a table:
  // one splitmix64 step a block instead of six
  void delays(int64_t k, std::vector<int64_t>& d) const override {
    const uint64_t prefix = hash_bits_prefix(seed_, Stream::Delays, static_cast<uint64_t>(k));
    const auto& parts = block_parts();
    for (size_t i = 0; i < d.size(); ++i) {
      const uint64_t part = i < parts.size() ? parts[i] : hash_bits_b_part(i);
      d[i] = scale(bits_to_unit(hash_bits_finish(prefix, part)), k);
    }
  }
  double steady_state_mean() const override { return 0.5 * static_cast<double>(d_); }

 private:
  static const std::vector<uint64_t>& block_parts() {
    static const std::vector<uint64_t> parts = [] {
      std::vector<uint64_t> p(1024);
      for (size_t i = 0; i < p.size(); ++i) p[i] = hash_bits_b_part(i);
      return p;
    }();
    return parts;
  }
  int64_t scale(double u, int64_t k) const {
    const uint64_t range = static_cast<uint64_t>(std::min(d_, k)) + 1;
    return static_cast<int64_t>(u * static_cast<double>(range));
  }
  int64_t d_;
  uint64_t seed_;
};
}  // namespace
std::unique_ptr<DelayModel> make_uniform_delay(int64_t d, uint64_t seed) {
  return std::make_unique<UniformDelay>(d, seed);
}
namespace {
const bool registered = DelayRegistry::add(
    {"uniform", "i.i.d. uniform on {0, ..., min(delta, k)} per update and block: the RPD authors' rule", 2,
     {"delay.max"}, [](const DelayContext& c) {
       return make_uniform_delay(c.cfg.get_int("delay.max"), static_cast<uint64_t>(c.cfg.get_int("seed")));
     },
     versions_up_to_delay_max, /*simulates_schedule=*/false});
}  // namespace
}  // namespace stale
