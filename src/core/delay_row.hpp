#pragma once
// One update's delays (a row of one delay per block) added into per-block statistics: the
// run file's delay summary and /delay_moments both take every row of a run, S values an update
// (E4 at S = 128: 187,264 rows, once per column of an ensemble). Each block's sum is its own
// chain in update order whatever the vector width, so the results are those of the plain loop
// bit for bit (tests/core/test_delay_row.cpp).
#include <cstddef>
#include <cstdint>

namespace stale {

// sum[j] += d_j, sum_sq[j] += d_j² (when sum_sq is given), max[j] = max(max[j], d_j) for
// j < n; returns the row's largest delay (at least `floor`)
int64_t add_delay_row(const int64_t* row, size_t n, double* sum, double* sum_sq, int64_t* max, int64_t floor);
// the plain loop: the reference
int64_t add_delay_row_reference(const int64_t* row, size_t n, double* sum, double* sum_sq, int64_t* max,
                                int64_t floor);

}  // namespace stale
