#include "src/run/divergence_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace stale {

void DivergenceCheck::check(double loss, double grad_norm_sq, double grad_norm, double start_value, int64_t k) {
  if (diverged_) return;
  if (!std::isfinite(loss) || !std::isfinite(grad_norm_sq) || !std::isfinite(grad_norm)) {
    diverged_ = true;
    reason_ = "the loss or gradient became non-finite at k = " + std::to_string(k);
    return;
  }
  if (factor_ <= 0) return;
  const bool known = std::isfinite(f_star_);
  const double now = known ? loss - f_star_ : loss;
  const double limit = factor_ * std::max(1.0, std::abs(start_value));
  if (now > limit) {
    diverged_ = true;
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s = %.3e exceeded log.divergence = %g times its start value %.3e at k = %lld",
                  known ? "f - f*" : "the loss", now, factor_, start_value, static_cast<long long>(k));
    reason_ = buf;
  }
}

void DivergenceCheck::check_gradient(double grad_norm, int64_t k) {
  if (std::isfinite(grad_norm)) return;
  diverged_ = true;
  reason_ = "the block gradient became non-finite at k = " + std::to_string(k);
}

}  // namespace stale
