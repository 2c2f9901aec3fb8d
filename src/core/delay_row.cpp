#include "src/core/delay_row.hpp"

#include <algorithm>

#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace stale {

namespace {
inline void add_one(int64_t v, double& sum, double* sum_sq, int64_t& max, int64_t& row_max) {
  const double d = static_cast<double>(v);
  sum += d;
  if (sum_sq) *sum_sq += d * d;  // exact: delays are integers far below 2^26
  max = std::max(max, v);
  row_max = std::max(row_max, v);
}
}  // namespace

int64_t add_delay_row_reference(const int64_t* row, size_t n, double* sum, double* sum_sq, int64_t* max,
                                int64_t floor) {
  int64_t row_max = floor;
  for (size_t j = 0; j < n; ++j) add_one(row[j], sum[j], sum_sq ? sum_sq + j : nullptr, max[j], row_max);
  return row_max;
}

int64_t add_delay_row(const int64_t* row, size_t n, double* sum, double* sum_sq, int64_t* max, int64_t floor) {
  size_t j = 0;
  int64_t row_max = floor;
#ifdef __AVX2__
  // int64 → double without AVX-512: for 0 ≤ x < 2^52, the bits of x under the exponent of
  // 2^52, minus 2^52, are x exactly. Four delays outside that range (none in practice) take
  // the plain path.
  const __m256i magic = _mm256_set1_epi64x(0x4330000000000000LL);
  const __m256d magic_d = _mm256_set1_pd(4503599627370496.0);  // 2^52
  const __m256i outside = _mm256_set1_epi64x(static_cast<int64_t>(0xFFF0000000000000ULL));
  __m256i vmax = _mm256_set1_epi64x(floor);
  for (; j + 4 <= n; j += 4) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + j));
    if (!_mm256_testz_si256(x, outside)) {
      for (size_t t = j; t < j + 4; ++t) add_one(row[t], sum[t], sum_sq ? sum_sq + t : nullptr, max[t], row_max);
      continue;
    }
    const __m256d d = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(x, magic)), magic_d);
    _mm256_storeu_pd(sum + j, _mm256_add_pd(_mm256_loadu_pd(sum + j), d));
    if (sum_sq) {
#ifdef __FMA__
      _mm256_storeu_pd(sum_sq + j, _mm256_fmadd_pd(d, d, _mm256_loadu_pd(sum_sq + j)));
#else
      _mm256_storeu_pd(sum_sq + j, _mm256_add_pd(_mm256_loadu_pd(sum_sq + j), _mm256_mul_pd(d, d)));
#endif
    }
    const __m256i m = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(max + j));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(max + j), _mm256_blendv_epi8(m, x, _mm256_cmpgt_epi64(x, m)));
    vmax = _mm256_blendv_epi8(vmax, x, _mm256_cmpgt_epi64(x, vmax));
  }
  alignas(32) int64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), vmax);
  for (int64_t v : lanes) row_max = std::max(row_max, v);
#endif
  for (; j < n; ++j) add_one(row[j], sum[j], sum_sq ? sum_sq + j : nullptr, max[j], row_max);
  return row_max;
}

}  // namespace stale
