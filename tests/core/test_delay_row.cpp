// src/core/delay_row.hpp: a row of delays added into per-block sums, squares and maxima. Exact
// equalities only: the vector path against the plain loop over many rows of every length
// around the vector width, with delays of every size the path takes, and rows with a negative
// or a 2^52-sized delay (which take the plain loop) among them.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "src/core/delay_row.hpp"
#include "src/core/rng.hpp"

TEST_SUITE_BEGIN("core");

using namespace stale;

TEST_CASE("DelayRowStatisticsEqualThePlainLoopBitForBit") {
  Rng rng(21, Stream::Eval);
  for (size_t n : {1, 3, 4, 5, 8, 13, 128}) {
    for (bool squares : {true, false}) {
      CAPTURE(n);
      CAPTURE(squares);
      std::vector<double> sum(n, 0.0), sq(n, 0.0), sum_ref(n, 0.0), sq_ref(n, 0.0);
      std::vector<int64_t> mx(n, -1), mx_ref(n, -1);
      int64_t row_max = -1, row_max_ref = -1;
      for (int k = 0; k < 300; ++k) {
        std::vector<int64_t> row(n);
        for (auto& d : row) {
          const uint64_t kind = rng.uniform_int(20);
          d = kind == 0   ? int64_t{1} << 52                                    // past the fast path
              : kind == 1 ? -static_cast<int64_t>(rng.uniform_int(5)) - 1       // a negative value
              : kind < 5  ? static_cast<int64_t>(rng.uniform_int(uint64_t{1} << 40))
                          : static_cast<int64_t>(rng.uniform_int(20000));
        }
        row_max = add_delay_row(row.data(), n, sum.data(), squares ? sq.data() : nullptr, mx.data(), row_max);
        row_max_ref =
            add_delay_row_reference(row.data(), n, sum_ref.data(), squares ? sq_ref.data() : nullptr, mx_ref.data(), row_max_ref);
        REQUIRE(row_max == row_max_ref);
      }
      CHECK(std::memcmp(sum.data(), sum_ref.data(), n * sizeof(double)) == 0);
      CHECK(std::memcmp(sq.data(), sq_ref.data(), n * sizeof(double)) == 0);
      CHECK(mx == mx_ref);
    }
  }
}

TEST_SUITE_END();
