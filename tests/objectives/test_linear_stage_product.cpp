// The linear stages' forward product for P columns at once sums every column exactly as the
// product of that column alone (an ensemble column ≡ its run relies on it), for row counts
// around the vector width and column counts around the pass of four, on a block with a leading
// dimension larger than its rows; and it is X z: a plain loop in the same order agrees to
// rounding (not bit for bit: the compiler may fuse a multiply-add in one loop and not in the
// other, which is why every caller goes through this one kernel).
#include <doctest/doctest.h>

#include <cstring>

#include "objectives/linear/linear_stage_product.hpp"
#include "src/core/rng.hpp"

TEST_SUITE_BEGIN("objectives");

using namespace stale;

TEST_CASE("StageProductOfPColumnsEqualsEachColumnAloneBitForBit") {
  Rng rng(11, Stream::Eval);
  for (Index rows : {1, 2, 3, 4, 5, 7, 10, 13, 16, 17}) {
    for (Index cols : {1, 3, 4, 5, 8, 13, 64}) {
      for (Index P : {1, 2, 3, 4, 5, 9}) {
        CAPTURE(rows);
        CAPTURE(cols);
        CAPTURE(P);
        Mat storage(rows + 3, cols);
        for (Index i = 0; i < storage.size(); ++i) storage.data()[i] = rng.normal();
        const Eigen::Map<const Mat, 0, Eigen::OuterStride<>> X(storage.data(), rows, cols,
                                                                Eigen::OuterStride<>(rows + 3));
        Mat Z(cols, P), A0(rows, P);
        for (Index i = 0; i < Z.size(); ++i) Z.data()[i] = rng.normal();
        for (Index i = 0; i < A0.size(); ++i) A0.data()[i] = rng.normal();
        Mat A = A0, L = A0;
        add_products_in_column_order(X, Z.data(), Z.rows(), A.data(), A.rows(), P);
        // the few-rows kernels (rows ≤ 16 with AVX2/FMA) against the general loop
        add_products_in_column_order_loop(X, Z.data(), Z.rows(), L.data(), L.rows(), P);
        CHECK(std::memcmp(A.data(), L.data(), sizeof(double) * static_cast<size_t>(A.size())) == 0);
        for (Index p = 0; p < P; ++p) {
          const double* z = Z.col(p).data();
          Vec alone = A0.col(p);
          add_product_in_column_order(X, z, alone.data());
          CHECK(std::memcmp(alone.data(), A.col(p).data(), sizeof(double) * static_cast<size_t>(rows)) == 0);
          // the reference: row by row, a(i) + X(i,j) z(j) + … + X(i,j+3) z(j+3), pass by pass
          Vec ref = A0.col(p);
          for (Index i = 0; i < rows; ++i) {
            Index j = 0;
            for (; j + 4 <= cols; j += 4)
              ref(i) = ref(i) + X(i, j) * z[j] + X(i, j + 1) * z[j + 1] + X(i, j + 2) * z[j + 2] + X(i, j + 3) * z[j + 3];
            for (; j < cols; ++j) ref(i) = ref(i) + X(i, j) * z[j];
          }
          const Vec exact = A0.col(p) + X * Z.col(p);
          CHECK((alone - ref).norm() <= 1e-13 * (1.0 + exact.norm()));
          CHECK((alone - exact).norm() <= 1e-12 * (1.0 + exact.norm()));
        }
      }
    }
  }
}

// A one-column product of at most 16 rows keeps its rows in registers (add_products_few_rows);
// it must give the bits of the general loop for every row count, column count and stride. On a
// build without AVX2/FMA the fast path declines and the check is the loop against itself.
TEST_CASE("FewRowsProductEqualsTheGeneralLoopBitForBit") {
  Rng rng(12, Stream::Eval);
  for (Index rows = 1; rows <= 17; ++rows) {
    for (Index cols : {1, 2, 3, 4, 5, 7, 8, 64, 513}) {
      for (Index pad : {0, 1, 6}) {
        CAPTURE(rows);
        CAPTURE(cols);
        CAPTURE(pad);
        Mat storage(rows + pad, cols);
        for (Index i = 0; i < storage.size(); ++i) storage.data()[i] = rng.normal();
        const Eigen::Map<const Mat, 0, Eigen::OuterStride<>> X(storage.data(), rows, cols,
                                                                Eigen::OuterStride<>(rows + pad));
        Vec z(cols), a0(rows);
        for (Index i = 0; i < cols; ++i) z(i) = rng.normal();
        for (Index i = 0; i < rows; ++i) a0(i) = rng.normal();
        Vec fast = a0, loop = a0;
        add_product_in_column_order(X, z.data(), fast.data());
        add_products_in_column_order_loop(X, z.data(), cols, loop.data(), rows, 1);
        CHECK(std::memcmp(fast.data(), loop.data(), sizeof(double) * static_cast<size_t>(rows)) == 0);
        const Vec exact = a0 + X * z;
        CHECK((fast - exact).norm() <= 1e-12 * (1.0 + exact.norm()) * static_cast<double>(cols));
      }
    }
  }
}

TEST_SUITE_END();
