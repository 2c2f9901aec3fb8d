// src/core/block_product.hpp: the trackers' products. Exact equalities only: against Eigen's
// GEMV (the single tracker's sums before this kernel), packed against unpacked, and a column of
// a P-column product against the one-column product — for shapes that exercise every tile,
// the row tails (odd and even) and the partial-sum groups of k ≥ 128.
#include <doctest/doctest.h>

#include "src/core/block_product.hpp"
#include "src/core/rng.hpp"

TEST_SUITE_BEGIN("core");

using namespace stale;

namespace {
Mat normal_matrix(Index r, Index c, uint64_t seed) {
  Rng rng(seed, Stream::Eval);
  Mat A(r, c);
  for (Index i = 0; i < A.size(); ++i) A.data()[i] = rng.normal();
  return A;
}
}  // namespace

TEST_CASE("BlockProductEqualsEigensGemvBitForBit") {
  // Eigen takes a one-row product as a dot product, and a tiny one (rows + k + 1 < 20)
  // coefficient by coefficient, with other sums: its GEMV from there on
  for (Index rows : {2, 3, 5, 8, 13, 31, 33, 64, 601, 1024}) {
    for (Index k : {1, 4, 7, 64, 127, 128, 200, 513}) {
      if (rows + k + 1 < 20) continue;
      CAPTURE(rows);
      CAPTURE(k);
      const Index lda = rows + 3;  // a column block of a larger matrix
      const Mat A = normal_matrix(lda, k, 1 + rows * 1000 + k);
      const Mat x = normal_matrix(k, 1, 7 + k);
      const Vec y0 = normal_matrix(rows, 1, 11 + rows);
      Vec eigen = y0, kernel = y0;
      eigen.noalias() += A.topRows(rows) * Vec(x.col(0));
      add_block_product(A.data(), lda, rows, k, x.data(), k, kernel.data(), rows, 1);
      CHECK(eigen == kernel);
    }
  }
}

TEST_CASE("BlockProductColumnsArePackedAndUnpackedAndOneColumnCallsBitForBit") {
  for (Index rows : {3, 8, 37, 512}) {
    for (Index k : {5, 64, 130}) {
      for (Index P : {1, 2, 3, 4, 5, 6, 7, 9, 10}) {
        CAPTURE(rows);
        CAPTURE(k);
        CAPTURE(P);
        const Mat A = normal_matrix(rows, k, 3 + rows + k);
        const Mat D = normal_matrix(k, P, 5 + P);
        const Mat Y0 = normal_matrix(rows, P, 9 + P);
        Mat together = Y0, packed = Y0, alone = Y0;
        add_block_product(A.data(), rows, rows, k, D.data(), k, together.data(), rows, P);
        const std::vector<double> Ap = pack_panels(A.data(), rows, rows, k);
        add_packed_block_product(Ap.data(), rows, rows, k, D.data(), k, packed.data(), rows, P);
        for (Index p = 0; p < P; ++p) add_block_product(A.data(), rows, rows, k, D.col(p).data(), k, alone.col(p).data(), rows, 1);
        CHECK(together == alone);
        CHECK(packed == alone);
        // the result is the product: against a plain double loop, to rounding
        const Mat exact = Y0 + A * D;
        CHECK((together - exact).cwiseAbs().maxCoeff() <= 1e-12 * (1 + exact.cwiseAbs().maxCoeff()));
      }
    }
  }
}

TEST_CASE("ColumnBlockProductsPackOrNotWithTheSameBits") {
  const Index d = 45;
  const Mat H = normal_matrix(d, d, 21);
  const std::vector<Index> offsets = {0, 12, 24, 35, 45};
  const ColumnBlockProducts packed(H.data(), d, d, offsets, size_t{1} << 30), in_place(H.data(), d, d, offsets, 0);
  CHECK(packed.packed());
  CHECK(!in_place.packed());
  for (int s = 0; s < 4; ++s) {
    const Index ds = offsets[s + 1] - offsets[s];
    const Mat D = normal_matrix(ds, 3, 30 + s);
    Mat a = Mat::Zero(d, 3), b = Mat::Zero(d, 3), eigen = Mat::Zero(d, 3);
    packed.add(s, D.data(), ds, a.data(), d, 3);
    in_place.add(s, D.data(), ds, b.data(), d, 3);
    for (Index p = 0; p < 3; ++p) eigen.col(p).noalias() += H.middleCols(offsets[s], ds) * Vec(D.col(p));
    CHECK(a == b);
    CHECK(a == eigen);
  }
}

TEST_SUITE_END();
