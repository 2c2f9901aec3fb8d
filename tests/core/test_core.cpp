#include <doctest/doctest.h>

#include "src/core/partition.hpp"
#include "src/core/rng.hpp"

TEST_SUITE_BEGIN("core");

using namespace stale;

TEST_CASE("PartitionIsContiguousAndNearEqual") {
  for (Index d : {7, 8, 37, 512}) {
    for (int S : {1, 2, 3, 7}) {
      const BlockPartition P(d, S);
      CHECK(P.dim() == d);
      Index lo = d, hi = 0;
      for (int s = 0; s < S; ++s) lo = std::min(lo, P.size(s)), hi = std::max(hi, P.size(s));
      CHECK(hi - lo <= 1);
      CHECK(P.offset(0) == 0);
    }
  }
}

TEST_CASE("RngStreamsAreReproducibleAndIndependent") {
  Rng a(5, Stream::BatchOrder), b(5, Stream::BatchOrder), c(5, Stream::StageSample);
  int same = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t x = a.next();
    CHECK(x == b.next());
    same += x == c.next();
  }
  CHECK(same == 0);
  // uniform_int is unbiased enough that each of 7 bins gets ~1/7 of 70000 draws
  Rng r(1, Stream::Eval);
  int bins[7] = {};
  for (int i = 0; i < 70000; ++i) bins[r.uniform_int(7)]++;
  for (int v : bins) CHECK(std::abs(v - 10000) < 400);
  // normal: mean 0, variance 1
  double s = 0, s2 = 0;
  for (int i = 0; i < 100000; ++i) {
    const double x = r.normal();
    s += x, s2 += x * x;
  }
  CHECK(std::abs(s / 1e5) < 0.015);
  CHECK(std::abs(s2 / 1e5 - 1) < 0.02);
}

TEST_SUITE_END();
