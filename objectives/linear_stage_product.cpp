#include "objectives/linear_stage_product.hpp"

#include <utility>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace stale {

#if defined(__AVX2__) && defined(__FMA__)
namespace {
// R rows: R / 4 full vectors, then a pair and a single row as the loop's vectorised remainder
// takes them. Every lane is its own chain a ← fma(X(i, j), z(j), a) in ascending j, which is
// what the loop's a + X(i,j) z(j) + X(i,j+1) z(j+1) + … contracts to; the lanes never mix, so
// the vector width does not change a bit.
template <int R>
void few_rows(const double* X, Index ld, Index segments, const Index* bounds, const double* const* zs, double* a) {
  constexpr int V = R / 4, pair = (R % 4) / 2, single = R % 2;
  __m256d acc[V > 0 ? V : 1];
  __m128d acc2 = _mm_setzero_pd();
  double acc1 = 0;
  for (int v = 0; v < V; ++v) acc[v] = _mm256_loadu_pd(a + 4 * v);
  if constexpr (pair) acc2 = _mm_loadu_pd(a + 4 * V);
  if constexpr (single) acc1 = a[R - 1];
  for (Index seg = 0; seg < segments; ++seg) {
    const double* z = zs[seg] - bounds[seg];  // z[j] for j in [bounds[seg], bounds[seg + 1])
    for (Index j = bounds[seg]; j < bounds[seg + 1]; ++j) {
      const double* c = X + j * ld;
      const __m256d zj = _mm256_broadcast_sd(z + j);
      for (int v = 0; v < V; ++v) acc[v] = _mm256_fmadd_pd(_mm256_loadu_pd(c + 4 * v), zj, acc[v]);
      if constexpr (pair) acc2 = _mm_fmadd_pd(_mm_loadu_pd(c + 4 * V), _mm256_castpd256_pd128(zj), acc2);
      if constexpr (single) acc1 = __builtin_fma(c[R - 1], z[j], acc1);
    }
  }
  for (int v = 0; v < V; ++v) _mm256_storeu_pd(a + 4 * v, acc[v]);
  if constexpr (pair) _mm_storeu_pd(a + 4 * V, acc2);
  if constexpr (single) a[R - 1] = acc1;
}

// C columns of Z at once (Z, A column-major with leading dimensions ldz, lda): C × R chains in
// registers, each column's exactly as few_rows sums it alone; X is read once per C columns.
template <int R, int C>
void few_rows_columns(const double* X, Index ld, Index cols, const double* Z, Index ldz, double* A, Index lda) {
  constexpr int V = R / 4, pair = (R % 4) / 2, single = R % 2;
  __m256d acc[C][V > 0 ? V : 1];
  __m128d acc2[C];
  double acc1[C];
  for (int c = 0; c < C; ++c) {
    for (int v = 0; v < V; ++v) acc[c][v] = _mm256_loadu_pd(A + c * lda + 4 * v);
    acc2[c] = pair ? _mm_loadu_pd(A + c * lda + 4 * V) : _mm_setzero_pd();
    acc1[c] = single ? A[c * lda + R - 1] : 0.0;
  }
  for (Index j = 0; j < cols; ++j) {
    const double* x = X + j * ld;
    for (int c = 0; c < C; ++c) {
      const __m256d zj = _mm256_broadcast_sd(Z + c * ldz + j);
      for (int v = 0; v < V; ++v) acc[c][v] = _mm256_fmadd_pd(_mm256_loadu_pd(x + 4 * v), zj, acc[c][v]);
      if constexpr (pair) acc2[c] = _mm_fmadd_pd(_mm_loadu_pd(x + 4 * V), _mm256_castpd256_pd128(zj), acc2[c]);
      if constexpr (single) acc1[c] = __builtin_fma(x[R - 1], Z[c * ldz + j], acc1[c]);
    }
  }
  for (int c = 0; c < C; ++c) {
    for (int v = 0; v < V; ++v) _mm256_storeu_pd(A + c * lda + 4 * v, acc[c][v]);
    if constexpr (pair) _mm_storeu_pd(A + c * lda + 4 * V, acc2[c]);
    if constexpr (single) A[c * lda + R - 1] = acc1[c];
  }
}

// P columns in groups of up to three (at 10 rows, 9 accumulators: the dependent chains of
// three columns overlap, and the registers still hold them with their broadcasts)
template <int R>
void few_rows_many(const double* X, Index ld, Index cols, const double* Z, Index ldz, double* A, Index lda, Index P) {
  constexpr int per_column = R / 4 + (R % 4) / 2 + R % 2;
  constexpr int C = per_column <= 3 ? 3 : per_column <= 5 ? 2 : 1;
  Index p = 0;
  for (; p + C <= P; p += C) few_rows_columns<R, C>(X, ld, cols, Z + p * ldz, ldz, A + p * lda, lda);
  for (; p < P; ++p) few_rows_columns<R, 1>(X, ld, cols, Z + p * ldz, ldz, A + p * lda, lda);
}

template <int... R>
bool dispatch_many(Index rows, const double* X, Index ld, Index cols, const double* Z, Index ldz, double* A, Index lda,
                   Index P, std::integer_sequence<int, R...>) {
  if (rows < 1 || rows > 16) return false;
  ((rows == R + 1 ? (few_rows_many<R + 1>(X, ld, cols, Z, ldz, A, lda, P), true) : false) || ...);
  return true;
}

template <int... R>
bool dispatch(Index rows, const double* X, Index ld, Index segments, const Index* bounds, const double* const* zs,
              double* a, std::integer_sequence<int, R...>) {
  if (rows < 1 || rows > 16) return false;
  ((rows == R + 1 ? (few_rows<R + 1>(X, ld, segments, bounds, zs, a), true) : false) || ...);
  return true;
}
}  // namespace

bool add_product_few_rows(const double* X, Index ld, Index rows, Index cols, const double* z, double* a) {
  const Index bounds[2] = {0, cols};
  return dispatch(rows, X, ld, 1, bounds, &z, a, std::make_integer_sequence<int, 16>{});
}

bool add_products_few_rows(const double* X, Index ld, Index rows, Index cols, const double* Z, Index ldz, double* A,
                           Index lda, Index P) {
  return dispatch_many(rows, X, ld, cols, Z, ldz, A, lda, P, std::make_integer_sequence<int, 16>{});
}

bool add_product_few_rows_blocks(const double* X, Index ld, Index rows, const std::vector<Index>& offsets,
                                 const std::vector<const double*>& blocks, double* a) {
  return dispatch(rows, X, ld, static_cast<Index>(blocks.size()), offsets.data(), blocks.data(), a,
                  std::make_integer_sequence<int, 16>{});
}
#else
bool add_product_few_rows(const double*, Index, Index, Index, const double*, double*) { return false; }
bool add_products_few_rows(const double*, Index, Index, Index, const double*, Index, double*, Index, Index) {
  return false;
}
bool add_product_few_rows_blocks(const double*, Index, Index, const std::vector<Index>&,
                                 const std::vector<const double*>&, double*) {
  return false;
}
#endif

}  // namespace stale
