#pragma once
// Long runs of Gaussian draws, kept on disk (cache_records.hpp). A generated data set is
// mostly Box–Muller draws: E1's 600 × 512 X is 307k normals, 8 ms of libm log and sincos, a
// fifth of a one-update run's whole process. A process-per-run sweep draws the same X in every
// run; with the draws on disk it reads them back (≈ 1 ms) instead.
//
// The record is keyed by the generator's exact state, the count and a fingerprint of the
// normal algorithm (a few draws from a fixed state, taken at start-up): a changed Rng::normal
// or seeding misses the old records instead of reading them. The values are bit for bit what
// rng.normal() returns, and rng is left where those draws would have left it.
#include <cstddef>

#include "src/core/rng.hpp"

namespace stale {

// runs shorter than this are drawn (the cache would cost more than it saves), longer ones
// than kMaxCachedNormals are drawn too (a record is at most 32 MB)
constexpr size_t kMinCachedNormals = size_t{1} << 16;
constexpr size_t kMaxCachedNormals = size_t{1} << 22;

// out[0 .. count) = the next `count` values of rng.normal()
void draw_normals(Rng& rng, double* out, size_t count);

}  // namespace stale
