#include "src/core/block_product.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define STALE_BLOCK_PRODUCT_AVX2 1
#endif

namespace stale {
namespace {

constexpr Index kPanel = 8;

// Where A(i, j) of a tile lies: row r of panel m, column j at base + m·panel_step + j·col_step + r.
// Unpacked: panel_step = 8, col_step = lda. Packed: panel_step = 8k, col_step = 8.
struct Layout {
  Index panel_step, col_step;
  Index chain;  // products per partial sum
};

// a product and a sum rounded separately (no contraction to a fused multiply-add)
[[gnu::noinline]] double unfused_add(double acc, double product) { return acc + product; }

// a vector lane's step: fused where the build has FMA instructions (Eigen's packets fuse too),
// else a product and a sum, as Eigen's SSE2 packets compute it (std::fma would be a slow
// library call there)
inline double lane_madd(double a, double b, double acc) {
#ifdef __FMA__
  return std::fma(a, b, acc);
#else
  return acc + a * b;  // no FMA instructions: nothing to contract to
#endif
}

// rows [0, rows) of a tile of NC columns one element at a time (the rows after the last full
// panel, and every row without AVX2), each in the chain of a vector lane — except, when
// `odd_last`, the tile's last row: Eigen's GEMV takes every row in (half) packets of fused
// multiply-adds but an odd matrix's last row, which it sums unfused
template <int NC>
void scalar_tile(const double* A, Layout L, Index rows, bool odd_last, Index k, const double* D, Index ldd, double* Y,
                 Index ldy) {
  for (Index i = 0; i < rows; ++i) {
    const double* a = A + (i / kPanel) * L.panel_step + i % kPanel;
    const bool fused = !(odd_last && i == rows - 1);
    for (int c = 0; c < NC; ++c)
      for (Index j0 = 0; j0 < k; j0 += L.chain) {
        double acc = 0;
        const Index j1 = std::min(k, j0 + L.chain);
        if (fused)
          for (Index j = j0; j < j1; ++j) acc = lane_madd(a[j * L.col_step], D[j + c * ldd], acc);
        else
          for (Index j = j0; j < j1; ++j) acc = unfused_add(acc, a[j * L.col_step] * D[j + c * ldd]);
        Y[i + c * ldy] += acc;
      }
  }
}

#ifdef STALE_BLOCK_PRODUCT_AVX2
// one partial sum, columns [j0, j1), of MP full panels (8·MP rows) × NC columns of Y: 2·MP·NC
// independent chains (8 keep both FMA pipes busy)
template <int NC, int MP>
inline void vector_chain(const double* A, Layout L, Index j0, Index j1, const double* D, Index ldd, double* Y,
                         Index ldy) {
  __m256d acc[MP][2][NC];
#pragma GCC unroll 16
  for (int m = 0; m < MP; ++m)
    for (int v = 0; v < 2; ++v)
      for (int c = 0; c < NC; ++c) acc[m][v][c] = _mm256_setzero_pd();
  for (Index j = j0; j < j1; ++j) {
    __m256d x[MP][2];
#pragma GCC unroll 16
    for (int m = 0; m < MP; ++m)
      for (int v = 0; v < 2; ++v) {
        x[m][v] = _mm256_loadu_pd(A + m * L.panel_step + j * L.col_step + 4 * v);
        if constexpr (NC > 1) __asm__("" : "+x"(x[m][v]));  // one load, not one per column (load ports were the limit)
      }
#pragma GCC unroll 16
    for (int c = 0; c < NC; ++c) {
      const __m256d b = _mm256_broadcast_sd(D + j + c * ldd);
      for (int m = 0; m < MP; ++m)
        for (int v = 0; v < 2; ++v) acc[m][v][c] = _mm256_fmadd_pd(x[m][v], b, acc[m][v][c]);
    }
  }
#pragma GCC unroll 16
  for (int c = 0; c < NC; ++c)
    for (int m = 0; m < MP; ++m)
      for (int v = 0; v < 2; ++v) {
        double* y = Y + c * ldy + m * kPanel + 4 * v;
        _mm256_storeu_pd(y, _mm256_add_pd(_mm256_loadu_pd(y), acc[m][v][c]));
      }
}
template <int NC, int MP>
inline void vector_tile(const double* A, Layout L, Index k, const double* D, Index ldd, double* Y, Index ldy) {
  for (Index j0 = 0; j0 < k; j0 += L.chain) vector_chain<NC, MP>(A, L, j0, std::min(k, j0 + L.chain), D, ldd, Y, ldy);
}

// G consecutive full panels (8·G rows) against every column of D: the panels' values (G · 4 KiB
// at k = 64) stay in L1 while the column blocks pass over them, so A is streamed from memory
// once whatever P
template <int G>
void panel_group(const double* A, Layout L, Index k, const double* D, Index ldd, double* Y, Index ldy, Index P) {
  Index p = 0;
  // blocks of 4 columns (8 chains); a remainder of 5 or 6 after them as one block of 10 or 12
  // chains rather than a 4 and a thin one
  const Index wide = P >= 5 && (P % 4 == 1 || P % 4 == 2) ? P % 4 + 4 : 0;
  for (; p + 4 <= P - wide; p += 4)
    for (int g = 0; g < G; ++g)
      vector_tile<4, 1>(A + g * L.panel_step, L, k, D + p * ldd, ldd, Y + g * kPanel + p * ldy, ldy);
  if (wide == 5)
    for (int g = 0; g < G; ++g) vector_tile<5, 1>(A + g * L.panel_step, L, k, D + p * ldd, ldd, Y + g * kPanel + p * ldy, ldy);
  if (wide == 6)
    for (int g = 0; g < G; ++g) vector_tile<6, 1>(A + g * L.panel_step, L, k, D + p * ldd, ldd, Y + g * kPanel + p * ldy, ldy);
  if (wide) return;
  const double* Dp = D + p * ldd;
  double* Yp = Y + p * ldy;
  switch (P - p) {
    case 3:
      for (int g = 0; g < G; ++g) vector_tile<3, 1>(A + g * L.panel_step, L, k, Dp, ldd, Yp + g * kPanel, ldy);
      break;
    case 2:
      if constexpr (G % 2 == 0) {
        for (int g = 0; g < G; g += 2) vector_tile<2, 2>(A + g * L.panel_step, L, k, Dp, ldd, Yp + g * kPanel, ldy);
      } else {
        for (int g = 0; g < G; ++g) vector_tile<2, 1>(A + g * L.panel_step, L, k, Dp, ldd, Yp + g * kPanel, ldy);
      }
      break;
    case 1:
      if constexpr (G == 4) {
        vector_tile<1, 4>(A, L, k, Dp, ldd, Yp, ldy);
      } else {
        for (int g = 0; g < G; ++g) vector_tile<1, 1>(A + g * L.panel_step, L, k, Dp, ldd, Yp + g * kPanel, ldy);
      }
      break;
    default: break;
  }
}
#endif

void product(const double* A, Layout L, Index rows, Index k, const double* D, Index ldd, double* Y, Index ldy,
             Index P) {
  Index i = 0;
#ifdef STALE_BLOCK_PRODUCT_AVX2
  for (; i + 4 * kPanel <= rows; i += 4 * kPanel) panel_group<4>(A + (i / kPanel) * L.panel_step, L, k, D, ldd, Y + i, ldy, P);
  for (; i + kPanel <= rows; i += kPanel) panel_group<1>(A + (i / kPanel) * L.panel_step, L, k, D, ldd, Y + i, ldy, P);
#endif
  if (i == rows) return;
  const double* At = A + (i / kPanel) * L.panel_step;
  for (Index p = 0; p < P; ++p) scalar_tile<1>(At, L, rows - i, rows % 2 == 1, k, D + p * ldd, ldd, Y + i + p * ldy, ldy);
}

// the partial sums' length for a k-column A with column stride lda: Eigen 3.4's GEMV
// heuristic (all k columns below 128, else groups of 16, or of 4 for a very long stride)
Index gemv_chain(Index k, Index lda) {
  const Index chain = k < 128 ? k : (lda * static_cast<Index>(sizeof(double)) < 32000 ? 16 : 4);
  return std::max<Index>(1, chain);
}

}  // namespace

void add_block_product(const double* A, Index lda, Index rows, Index k, const double* D, Index ldd, double* Y,
                       Index ldy, Index P) {
  product(A, Layout{kPanel, lda, gemv_chain(k, lda)}, rows, k, D, ldd, Y, ldy, P);
}

std::vector<double> pack_panels(const double* A, Index lda, Index rows, Index k) {
  const Index panels = (rows + kPanel - 1) / kPanel;
  std::vector<double> out(static_cast<size_t>(panels * k * kPanel), 0.0);
  for (Index m = 0; m < panels; ++m)
    for (Index j = 0; j < k; ++j)
      for (Index r = 0; r < kPanel && m * kPanel + r < rows; ++r)
        out[static_cast<size_t>((m * k + j) * kPanel + r)] = A[m * kPanel + r + j * lda];
  return out;
}

void add_packed_block_product(const double* Ap, Index lda, Index rows, Index k, const double* D, Index ldd, double* Y,
                              Index ldy, Index P) {
  product(Ap, Layout{kPanel * k, kPanel, gemv_chain(k, lda)}, rows, k, D, ldd, Y, ldy, P);
}

ColumnBlockProducts::ColumnBlockProducts(const double* A, Index lda, Index rows, std::vector<Index> offsets,
                                         size_t max_packed_bytes)
    : A_(A), lda_(lda), rows_(rows), offsets_(std::move(offsets)) {
  const size_t panels = static_cast<size_t>((rows + kPanel - 1) / kPanel);
  const size_t cols = offsets_.empty() ? 0 : static_cast<size_t>(offsets_.back() - offsets_.front());
  pack_ = panels * kPanel * cols * sizeof(double) <= max_packed_bytes && offsets_.size() > 1;
  if (!pack_) return;
  packed_.resize(offsets_.size() - 1);
  packed_once_.reset(new std::once_flag[offsets_.size() - 1]);
}

void ColumnBlockProducts::add(int s, const double* D, Index ldd, double* Y, Index ldy, Index P) const {
  const Index k = offsets_[s + 1] - offsets_[s];
  if (!pack_) return add_block_product(A_ + offsets_[s] * lda_, lda_, rows_, k, D, ldd, Y, ldy, P);
  auto& block = packed_[static_cast<size_t>(s)];  // written once, before any caller passes call_once
  std::call_once(packed_once_[s], [&] { block = pack_panels(A_ + offsets_[s] * lda_, lda_, rows_, k); });
  add_packed_block_product(block.data(), lda_, rows_, k, D, ldd, Y, ldy, P);
}

}  // namespace stale
