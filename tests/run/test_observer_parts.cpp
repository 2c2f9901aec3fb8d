// The parts MetricsObserver is composed of (src/run/metrics_observer.hpp), each alone: the log
// cadence, the divergence check, the stop policy and the checkpoint policy without a log. The
// whole observer's numbers are pinned by tests/golden, tests/resume and tests/run/test_ensemble.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "src/run/checkpoint_policy.hpp"
#include "src/run/divergence_check.hpp"
#include "src/run/interrupt.hpp"
#include "src/run/log_cadence.hpp"
#include "src/run/stop_policy.hpp"

using namespace stale;

TEST_CASE("LogCadenceRowsFitWhatTheLogReserves") {
  for (int64_t every : {1, 3, 7, 100}) {
    for (int64_t K : {0, 1, 10, 99, 100, 101}) {
      for (int64_t iterates_every : {-1, 0, 1, 5, 300}) {
        CAPTURE(every);
        CAPTURE(K);
        CAPTURE(iterates_every);
        const LogCadence c(every, iterates_every, false, K, 10);
        int64_t rows = 1, iterates = c.iterate_due(0, 0) ? 1 : 0;  // row 0
        for (int64_t k = 1; k <= K; ++k) {
          if (!c.on_cadence(k - 1, k)) continue;
          if (c.iterate_due(rows, k)) ++iterates;
          ++rows;
        }
        if (K > 0) {
          CHECK(c.on_cadence(K - 1, K));  // the last update always has its row
          CHECK(rows <= c.expected_rows());
          CHECK(iterates <= c.expected_iterates());
        }
        if (iterates_every == 0) CHECK(iterates == 0);
      }
    }
  }
}

TEST_CASE("LogCadenceUpdatesReportedTogetherCrossAMultiple") {
  const LogCadence c(10, -1, false, 1000, 10);
  CHECK(c.on_cadence(8, 12));  // 10 crossed by an update that counts several blocks
  CHECK(!c.on_cadence(11, 19));
  CHECK(c.on_cadence(19, 20));
  CHECK(c.evaluates(true));
  CHECK(!c.evaluates(false));
  CHECK(LogCadence(10, -1, true, 1000, 10).evaluates(false));  // the exact mean evaluates every update
}

TEST_CASE("LogCadenceAutoIterateStrideFollowsTheDimension") {
  // auto: every row's iterate up to d = 4096, every 16th above
  const LogCadence small(2, -1, false, 1000, 4096), large(2, -1, false, 1000, 4097);
  CHECK(small.iterate_due(1, 2));
  CHECK(!large.iterate_due(1, 2));
  CHECK(large.iterate_due(16, 32));
  CHECK(large.iterate_due(3, 1000));  // the last row keeps its iterate
}

TEST_CASE("DivergenceCheckSaysWhy") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  SUBCASE("non-finite loss") {
    DivergenceCheck d(1e6, 0.0);
    d.check(1.0, 1.0, 1.0, 1.0, 3);
    CHECK(!d.diverged());
    d.check(nan, 1.0, 1.0, 1.0, 4);
    CHECK(d.diverged());
    CHECK(d.reason() == "the loss or gradient became non-finite at k = 4");
    d.check(inf, 1.0, 1.0, 1.0, 5);  // the first reason stays
    CHECK(d.reason() == "the loss or gradient became non-finite at k = 4");
  }
  SUBCASE("f - f* above the factor times its start") {
    DivergenceCheck d(10.0, 1.0);
    d.check(11.0, 1.0, 1.0, 1.0, 7);  // f − f_* = 10: not above
    CHECK(!d.diverged());
    d.check(12.0, 1.0, 1.0, 1.0, 8);
    CHECK(d.diverged());
    CHECK(d.reason().find("f - f* = 1.100e+01 exceeded log.divergence = 10") == 0);
  }
  SUBCASE("the loss where f* is unknown") {
    DivergenceCheck d(10.0, nan);
    d.check(25.0, 1.0, 1.0, 2.0, 1);
    CHECK(d.diverged());
    CHECK(d.reason().find("the loss = 2.500e+01") == 0);
  }
  SUBCASE("factor 0: only non-finite values") {
    DivergenceCheck d(0.0, 0.0);
    d.check(1e300, 1.0, 1.0, 1.0, 1);
    CHECK(!d.diverged());
    d.check_gradient(inf, 2);
    CHECK(d.diverged());
    CHECK(d.reason() == "the block gradient became non-finite at k = 2");
  }
}

TEST_CASE("StopPolicyLatchesSignalsAndStopAfter") {
  clear_stop_request();
  StopPolicy after(5);
  after.latch(4);
  CHECK(!after.stopping());
  after.latch(5);
  CHECK(after.stopping());

  StopPolicy never(0);
  never.latch(1000000);
  CHECK(!never.stopping());
  request_stop(2);
  never.latch(1000001);
  CHECK(never.stopping());
  clear_stop_request();
  never.latch(1000002);
  CHECK(never.stopping());  // latched: a run that saw the stop stops
}

TEST_CASE("CheckpointPolicyWithoutALogIsNeverDue") {
  CheckpointPolicy p(nullptr);
  p.after_update();
  CHECK(!p.writes());
  CHECK(!p.due(false, true));
  CHECK(!p.due(false, false));
}
