#pragma once
// The linear stages' forward product, shared by the single-point code (linear_model_cpu.cpp) and
// the ensembles' column loop (linear_model_cpu_ensemble.cpp), so that both sum alike.
#include <vector>

#include "src/core/types.hpp"

namespace stale {

// A.col(p) += X Z.col(p) for X of at most 16 rows (column stride ld; Z and A column-major with
// leading dimensions ldz and lda), the rows' accumulators held in registers across all
// columns: the same fused multiply-adds in the same order as add_products_in_column_order_loop
// below, without its load and store of A per pass of four columns (a mini-batch of 10 rows at
// d = 512 is 128 such passes, each a dependent chain through memory); a few of the P columns at
// a time, so that their chains overlap, each summed exactly as alone. False, and nothing done,
// where the shape or the build (no AVX2/FMA) does not fit.
bool add_products_few_rows(const double* X, Index ld, Index rows, Index cols, const double* Z, Index ldz, double* A,
                           Index lda, Index P);
// a += X z, one column, with z given block by block: z's columns [offsets[i], offsets[i + 1])
// start at blocks[i] (a mixed point read in place from the version store, without gathering it)
bool add_product_few_rows_blocks(const double* X, Index ld, Index rows, const std::vector<Index>& offsets,
                                 const std::vector<const double*>& blocks, double* a);

// the loop behind add_products_in_column_order, for any shape (and the reference its fast path
// is tested against bit for bit)
template <class Block>
void add_products_in_column_order_loop(const Block& X, const double* Z, Index ldz, double* __restrict A, Index lda,
                                       Index P) {
  const Index rows = X.rows(), cols = X.cols(), ld = X.outerStride();
  const double* x = X.data();
  Index j = 0;
  for (; j + 4 <= cols; j += 4) {
    const double* __restrict c0 = x + j * ld;
    const double* __restrict c1 = c0 + ld;
    const double* __restrict c2 = c1 + ld;
    const double* __restrict c3 = c2 + ld;
    for (Index p = 0; p < P; ++p) {
      const double* z = Z + p * ldz;
      double* __restrict a = A + p * lda;
      const double z0 = z[j], z1 = z[j + 1], z2 = z[j + 2], z3 = z[j + 3];
      for (Index i = 0; i < rows; ++i) a[i] = a[i] + c0[i] * z0 + c1[i] * z1 + c2[i] * z2 + c3[i] * z3;
    }
  }
  for (; j < cols; ++j) {
    const double* __restrict c = x + j * ld;
    for (Index p = 0; p < P; ++p) {
      double* __restrict a = A + p * lda;
      const double zj = Z[p * ldz + j];
      for (Index i = 0; i < rows; ++i) a[i] = a[i] + c[i] * zj;
    }
  }
}

// A.col(p) += X Z.col(p) for P columns (Z and A column-major with leading dimensions ldz and
// lda), every row of every column summed in ascending column order,
// a(i) + X(i,0) z(0) + X(i,1) z(1) + … (the loop above, four columns a pass; at most 16 rows
// go through add_products_few_rows, the same bits). The mixed point's activation
// (staged_activation) and the pipeline's stage forward (stage_forward) both go through it, so
// they agree bit for bit however the columns are cut into stages; an ensemble's columns go
// through it together and each is summed exactly as its run alone.
// Eigen's general GEMV paid its set-up once per stage: at S = 128 stages of four columns that
// was a third of an RPD update. Taking the columns in turn inside each pass of four makes
// their dependent chains overlap: one column's 512-long chain per row (E4 at S = 128) left the
// core waiting on each multiply-add, a quarter of an RPD ensemble's time when the columns went
// one after another.
template <class Block>
void add_products_in_column_order(const Block& X, const double* Z, Index ldz, double* __restrict A, Index lda,
                                  Index P) {
  if (add_products_few_rows(X.data(), X.outerStride(), X.rows(), X.cols(), Z, ldz, A, lda, P)) return;
  add_products_in_column_order_loop(X, Z, ldz, A, lda, P);
}

// one column: a += X z
template <class Block>
void add_product_in_column_order(const Block& X, const double* z, double* a) {
  add_products_in_column_order(X, z, X.cols(), a, X.rows(), 1);
}

}  // namespace stale
