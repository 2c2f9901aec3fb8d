// The linear stages' forward product for P columns at once sums every element exactly as the
// one-column product does (an ensemble column ≡ its run relies on it), for row counts around
// the vector width and column counts around the pass of four, on a block with a leading
// dimension larger than its rows.
#include <doctest/doctest.h>

#include <cstring>

#include "objectives/linear_stage_product.hpp"
#include "src/core/rng.hpp"

TEST_SUITE_BEGIN("objectives");

using namespace stale;

TEST_CASE("StageProductOfPColumnsEqualsEachColumnAloneBitForBit") {
  Rng rng(11, Stream::Eval);
  for (Index rows : {1, 3, 4, 7, 10, 17}) {
    for (Index cols : {1, 3, 4, 5, 8, 13, 64}) {
      for (Index P : {1, 2, 5, 9}) {
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
        Mat A = A0;
        add_products_in_column_order(X, Z.data(), Z.rows(), A.data(), A.rows(), P);
        for (Index p = 0; p < P; ++p) {
          Vec a = A0.col(p);
          add_product_in_column_order(X, Z.col(p).data(), a.data());
          CHECK(std::memcmp(a.data(), A.col(p).data(), sizeof(double) * static_cast<size_t>(rows)) == 0);
          // and it is X z up to rounding (the kernel computes the product at all)
          const Vec exact = A0.col(p) + X * Z.col(p);
          CHECK((a - exact).norm() <= 1e-12 * (1.0 + exact.norm()));
        }
      }
    }
  }
}

TEST_SUITE_END();
