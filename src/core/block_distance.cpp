#include "src/core/block_distance.hpp"

#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace stale {

namespace {
// sum + the stale blocks from `first` on, each block's squared norm by Eigen; z_at(i): where
// block i of z starts
template <class ZAt>
double add_blocks_from(int first, double sum, const ZAt& z_at, const double* w, const BlockPartition& P,
                       const std::vector<int64_t>& delays) {
  for (int i = first; i < P.stages(); ++i)
    if (delays[static_cast<size_t>(i)] > 0)
      sum += (Eigen::Map<const Vec>(z_at(i), P.size(i)) - Eigen::Map<const Vec>(w + P.offset(i), P.size(i))).squaredNorm();
  return sum;
}

template <class ZAt>
double distance(const ZAt& z_at, const double* w, const BlockPartition& P, const std::vector<int64_t>& delays) {
  int i = 0;
  double sum = 0;
#ifdef __AVX2__
  const int S = P.stages();
  // Four blocks of four: squares A, B, C, D (a block each); the 128-bit halves added pairwise
  // give (x0² + x2², x1² + x3²) per block, and one horizontal add finishes all four blocks —
  // the order of Eigen's packet reduction of a four-element segment. The per-block
  // horizontal reduction of the plain loop was most of an RPD update's own time at S = 128.
  if (P.dim() == 4 * static_cast<Index>(S) && P.max_size() == 4) {  // every block of four
    auto square = [&](int b) {
      const __m256d x = _mm256_sub_pd(_mm256_loadu_pd(z_at(b)), _mm256_loadu_pd(w + 4 * b));
      return _mm256_mul_pd(x, x);
    };
    for (; i + 4 <= S; i += 4) {
      const __m256d A = square(i), B = square(i + 1), C = square(i + 2), D = square(i + 3);
      const __m256d ac = _mm256_add_pd(_mm256_permute2f128_pd(A, C, 0x20), _mm256_permute2f128_pd(A, C, 0x31));
      const __m256d bd = _mm256_add_pd(_mm256_permute2f128_pd(B, D, 0x20), _mm256_permute2f128_pd(B, D, 0x31));
      alignas(32) double r[4];
      _mm256_store_pd(r, _mm256_hadd_pd(ac, bd));  // blocks i, i + 1, i + 2, i + 3
      for (int j = 0; j < 4; ++j)
        if (delays[static_cast<size_t>(i + j)] > 0) sum += r[j];
    }
  }
#endif
  return add_blocks_from(i, sum, z_at, w, P, delays);
}
}  // namespace

double stale_sq_distance_reference(const double* z, const double* w, const BlockPartition& P,
                                   const std::vector<int64_t>& delays) {
  return add_blocks_from(0, 0.0, [&](int i) { return z + P.offset(i); }, w, P, delays);
}

double stale_sq_distance(const double* z, const double* w, const BlockPartition& P, const std::vector<int64_t>& delays) {
  return distance([&](int i) { return z + P.offset(i); }, w, P, delays);
}

double stale_sq_distance(const std::vector<const double*>& blocks, const double* w, const BlockPartition& P,
                         const std::vector<int64_t>& delays) {
  return distance([&](int i) { return blocks[static_cast<size_t>(i)]; }, w, P, delays);
}

}  // namespace stale
