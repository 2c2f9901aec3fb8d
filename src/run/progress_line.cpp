#include "src/run/progress_line.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <utility>

namespace stale {

ProgressLine::ProgressLine(bool enabled, std::string tag, int64_t updates)
    : enabled_(enabled),
      tty_(isatty(STDERR_FILENO)),
      tag_(std::move(tag)),
      updates_(updates),
      last_print_(std::chrono::steady_clock::now() - std::chrono::hours(1)) {}

void ProgressLine::print(const MetricsRow& r) {
  if (!enabled_) return;
  const int64_t K = updates_;
  const auto now = std::chrono::steady_clock::now();
  if (r.k != K && r.k != 0 && now - last_print_ < std::chrono::milliseconds(tty_ ? 200 : 2000)) return;
  last_print_ = now;
  // f_* unknown (the transformer): show the loss itself
  const bool known = std::isfinite(r.subopt);
  const double rate = r.wall > 0 ? static_cast<double>(r.k) / r.wall : 0.0;
  const double eta = rate > 0 ? static_cast<double>(K - r.k) / rate : 0.0;
  std::fprintf(stderr, "%s[%s] k=%lld/%lld (%3.0f%%)  %s=%.3e  |grad f|^2=%.3e  %.1fs  %.3g updates/s  eta %.0fs%s",
               tty_ ? "\r" : "", tag_.c_str(), static_cast<long long>(r.k), static_cast<long long>(K),
               100.0 * static_cast<double>(r.k) / static_cast<double>(K), known ? "f-f*" : "loss",
               known ? r.subopt : r.loss, r.grad_norm_sq, r.wall, rate, eta, tty_ ? "   " : "\n");
  std::fflush(stderr);
}

void ProgressLine::end() {
  if (enabled_ && tty_) std::fprintf(stderr, "\n");
}

}  // namespace stale
