#include "objectives/linear/linear_stage_product.hpp"

#include <type_traits>
#include <utility>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace stale {

#if defined(__AVX2__) && defined(__FMA__)
namespace {
// C columns of A += X Z with R rows, every accumulator in registers. R rows are R / 4 full
// vectors, then a pair and a single row as the loop's vectorised remainder takes them. Every
// lane is its own chain a ← fma(X(i, j), z(j), a) in ascending j, which is what the loop's
// a + X(i,j) z(j) + X(i,j+1) z(j+1) + … contracts to; the lanes never mix, so the vector width
// and the number of columns taken together do not change a bit. Column c's z is given in
// segments: its values j ∈ [bounds[t], bounds[t + 1]) start at zs[c · segments + t] (one
// segment for a contiguous column, one per block for a point read in place).
template <int R, int C>
void few_rows(const double* X, Index ld, Index segments, const Index* bounds, const double* const* zs, double* A,
              Index lda) {
  constexpr int V = R / 4, pair = (R % 4) / 2, single = R % 2;
  __m256d acc[C][V > 0 ? V : 1];
  __m128d acc2[C];
  double acc1[C];
  for (int c = 0; c < C; ++c) {
    for (int v = 0; v < V; ++v) acc[c][v] = _mm256_loadu_pd(A + c * lda + 4 * v);
    acc2[c] = pair ? _mm_loadu_pd(A + c * lda + 4 * V) : _mm_setzero_pd();
    acc1[c] = single ? A[c * lda + R - 1] : 0.0;
  }
  for (Index t = 0; t < segments; ++t) {
    const double* z[C];
    for (int c = 0; c < C; ++c) z[c] = zs[c * segments + t] - bounds[t];  // z[c][j] for j in the segment
    for (Index j = bounds[t]; j < bounds[t + 1]; ++j) {
      const double* x = X + j * ld;
      for (int c = 0; c < C; ++c) {
        const __m256d zj = _mm256_broadcast_sd(z[c] + j);
        for (int v = 0; v < V; ++v) acc[c][v] = _mm256_fmadd_pd(_mm256_loadu_pd(x + 4 * v), zj, acc[c][v]);
        if constexpr (pair) acc2[c] = _mm_fmadd_pd(_mm_loadu_pd(x + 4 * V), _mm256_castpd256_pd128(zj), acc2[c]);
        if constexpr (single) acc1[c] = __builtin_fma(x[R - 1], z[c][j], acc1[c]);
      }
    }
  }
  for (int c = 0; c < C; ++c) {
    for (int v = 0; v < V; ++v) _mm256_storeu_pd(A + c * lda + 4 * v, acc[c][v]);
    if constexpr (pair) _mm_storeu_pd(A + c * lda + 4 * V, acc2[c]);
    if constexpr (single) A[c * lda + R - 1] = acc1[c];
  }
}

// f(std::integral_constant<int, rows>{}) for 1 ≤ rows ≤ 16; false for any other row count
template <class F, int... R>
bool with_rows(Index rows, F&& f, std::integer_sequence<int, R...>) {
  if (rows < 1 || rows > 16) return false;
  ((rows == R + 1 ? (f(std::integral_constant<int, R + 1>{}), true) : false) || ...);
  return true;
}
template <class F>
bool with_rows(Index rows, F&& f) {
  return with_rows(rows, std::forward<F>(f), std::make_integer_sequence<int, 16>{});
}
}  // namespace

// P columns in groups of up to three (at 10 rows, 9 accumulators: the dependent chains of
// three columns overlap, and the registers still hold them with their broadcasts)
bool add_products_few_rows(const double* X, Index ld, Index rows, Index cols, const double* Z, Index ldz, double* A,
                           Index lda, Index P) {
  const Index bounds[2] = {0, cols};
  return with_rows(rows, [&](auto r) {
    constexpr int R = decltype(r)::value;
    constexpr int per_column = R / 4 + (R % 4) / 2 + R % 2;
    constexpr int C = per_column <= 3 ? 3 : per_column <= 5 ? 2 : 1;
    Index p = 0;
    for (; p + C <= P; p += C) {
      const double* zs[C];
      for (int c = 0; c < C; ++c) zs[c] = Z + (p + c) * ldz;
      few_rows<R, C>(X, ld, 1, bounds, zs, A + p * lda, lda);
    }
    for (; p < P; ++p) {
      const double* z = Z + p * ldz;
      few_rows<R, 1>(X, ld, 1, bounds, &z, A + p * lda, lda);
    }
  });
}

bool add_product_few_rows_blocks(const double* X, Index ld, Index rows, const std::vector<Index>& offsets,
                                 const std::vector<const double*>& blocks, double* a) {
  return with_rows(rows, [&](auto r) {
    few_rows<decltype(r)::value, 1>(X, ld, static_cast<Index>(blocks.size()), offsets.data(), blocks.data(), a, rows);
  });
}
#else
bool add_products_few_rows(const double*, Index, Index, Index, const double*, Index, double*, Index, Index) {
  return false;
}
bool add_product_few_rows_blocks(const double*, Index, Index, const std::vector<Index>&,
                                 const std::vector<const double*>&, double*) {
  return false;
}
#endif

}  // namespace stale
