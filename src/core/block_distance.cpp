#include "src/core/block_distance.hpp"

#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace stale {

// The project's order for a block of four coordinates, spelled out: ((x0² + x2²) + (x1² + x3²)),
// x = z − w, no product fused into a sum. It is the order of Eigen's AVX2 reduction of a
// four-element segment (what the committed runs logged), but owned here, so that it holds on
// any vector width: Eigen on AVX-512 sums such a segment otherwise, and GCC would contract
// x0² + x2² into an FMA on x86-64-v3 but not on generic x86-64.
[[gnu::optimize("fp-contract=off")]] double block_of_four_sq_distance(const double* z, const double* w) {
  const double x0 = z[0] - w[0], x1 = z[1] - w[1], x2 = z[2] - w[2], x3 = z[3] - w[3];
  return (x0 * x0 + x2 * x2) + (x1 * x1 + x3 * x3);
}

namespace {
bool blocks_of_four(const BlockPartition& P) { return P.dim() == 4 * static_cast<Index>(P.stages()) && P.max_size() == 4; }

// sum + the stale blocks from `first` on; z_at(i): where block i of z starts. Blocks of four take
// the order above; other blocks Eigen's squaredNorm, whose order is fixed by the build's
// instruction-set target (CMakeLists.txt)
template <class ZAt>
double add_blocks_from(int first, double sum, const ZAt& z_at, const double* w, const BlockPartition& P,
                       const std::vector<int64_t>& delays) {
  const bool fours = blocks_of_four(P);
  for (int i = first; i < P.stages(); ++i)
    if (delays[static_cast<size_t>(i)] > 0)
      sum += fours ? block_of_four_sq_distance(z_at(i), w + P.offset(i))
                   : (Eigen::Map<const Vec>(z_at(i), P.size(i)) - Eigen::Map<const Vec>(w + P.offset(i), P.size(i)))
                         .squaredNorm();
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
  // block_of_four_sq_distance's order. The per-block horizontal reduction of the plain loop was
  // most of an RPD update's own time at S = 128.
  if (blocks_of_four(P)) {
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
