#include "src/pipeline/delay_moments.hpp"

#include <algorithm>

#include "src/core/delay_row.hpp"
#include "src/core/error.hpp"

namespace stale {

DelayMoments::DelayMoments(int64_t w, int nblocks) : window(w), blocks(nblocks) {
  STALE_CHECK(w >= 1 && nblocks >= 1, "delay moments need a window >= 1 and a block");
  sum_.assign(nblocks, 0.0);
  sum_sq_.assign(nblocks, 0.0);
  max_.assign(nblocks, -1);
}

void DelayMoments::add(const std::vector<int64_t>& row) {
  STALE_CHECK(static_cast<int>(row.size()) == blocks, "a delay row has one entry per block");
  running_max_ = add_delay_row(row.data(), row.size(), sum_.data(), sum_sq_.data(), max_.data(), running_max_);
  ++k_;
  if (++in_window_ == window) flush();
}

void DelayMoments::close() {
  if (in_window_ > 0) flush();
}

void DelayMoments::flush() {
  const double n = static_cast<double>(in_window_);
  k_end.push_back(k_);
  count.push_back(in_window_);
  running_max.push_back(running_max_);
  for (int j = 0; j < blocks; ++j) {
    mean.push_back(sum_[j] / n);
    second.push_back(sum_sq_[j] / n);
    max.push_back(max_[j]);
  }
  in_window_ = 0;
  std::fill(sum_.begin(), sum_.end(), 0.0);
  std::fill(sum_sq_.begin(), sum_sq_.end(), 0.0);
  std::fill(max_.begin(), max_.end(), int64_t{-1});
}

}  // namespace stale
