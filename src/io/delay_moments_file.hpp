#pragma once
// /delay_moments of a run file (src/pipeline/delay_moments.hpp): the delay distribution along
// the run in windows of k. Datasets: k_end [W], count [W], running_max [W] (the measured δ
// up to each window's end), mean, second, max [W, S]; attribute window.
#include "src/io/h5.hpp"
#include "src/pipeline/delay_moments.hpp"

namespace stale {

void write_delay_moments_group(hid_t file, const DelayMoments& m);

}  // namespace stale
