// LocalSGD rounds (docs/theory.md §6): no stale reads, drains between rounds, and R = H = 1 is naive.
#include <doctest/doctest.h>

#include "tests/support/pipeline_test_util.hpp"

TEST_SUITE_BEGIN("pipeline");

using namespace stale;

TEST_CASE("localsgd: every F reads its replica's newest block, and B the same version (no staleness)") {
  for (int S : {1, 2, 4, 6})
    for (int R : {1, 2, S, S + 3})
      for (int H : {1, 2, 5}) {
        CAPTURE(S);
        CAPTURE(R);
        CAPTURE(H);
        ScheduleParams p{S, int64_t{R} * H * 3 + 2};  // three full rounds and a short one
        p.replicas = R;
        p.local_steps = H;
        const Schedule s = make_schedule("localsgd", p);
        const SimResult r = simulate(s);
        const int64_t round = int64_t{R} * H;
        for (int64_t mb = 0; mb < s.microbatches; ++mb) {
          // replica mb mod R has, before mb, taken i steps in this round and q rounds of H steps + an average
          const int64_t q = mb / round, i = (mb - q * round) / R;
          for (int j = 0; j < S; ++j) {
            const size_t cell = static_cast<size_t>(mb) * S + j;
            REQUIRE(r.forward_version[cell] == q * (H + 1) + i);
            REQUIRE(r.backward_version[cell] == r.forward_version[cell]);
          }
        }
        CHECK_FALSE(r.backward_differs);
        for (int b = 0; b < S; ++b) CHECK(r.max_crossed[b] == 0);
      }
}

TEST_CASE("localsgd rounds drain: no op of round q + 1 starts before every op of round q has ended") {
  for (int S : {2, 5})
    for (int H : {1, 3}) {
      ScheduleParams p{S, 4 * int64_t{S} * H};
      p.local_steps = H;
      const Schedule s = make_schedule("localsgd", p);
      const SimResult r = simulate(s);
      const int64_t round = int64_t{S} * H, rounds = s.microbatches / round;
      std::vector<double> first_start(rounds, 1e300), last_end(rounds, 0);
      for (int64_t i = 0; i < s.size(); ++i) {
        const int64_t q = s.ops[i].microbatch / round;
        first_start[q] = std::min(first_start[q], r.start[i]);
        last_end[q] = std::max(last_end[q], r.end[i]);
      }
      for (int64_t q = 0; q + 1 < rounds; ++q) CHECK(first_start[q + 1] >= last_end[q]);
      // each round ends with an average of every block, on that block's last B of the round
      int64_t averages = 0;
      for (const Op& op : s.ops) averages += op.averages();
      CHECK(averages == rounds * S);
    }
}

TEST_CASE("localsgd with R = 1 and H = 1 is the naive synchronous pipeline: same ops, times and delays") {
  for (int S : {1, 3, 8}) {
    ScheduleParams p{S, 17};
    p.replicas = 1;
    p.local_steps = 1;
    const Schedule local = make_schedule("localsgd", p);
    const Schedule naive = make_schedule("naive", {S, 17});
    REQUIRE(local.size() == naive.size());
    for (int64_t i = 0; i < local.size(); ++i) {
      REQUIRE(local.ops[i].kind == naive.ops[i].kind);
      REQUIRE(local.ops[i].block == naive.ops[i].block);
      REQUIRE(local.ops[i].microbatch == naive.ops[i].microbatch);
      REQUIRE(local.ops[i].updates() == naive.ops[i].updates());
    }
    const SimOptions opt{.delay_table = true};
    const SimResult a = simulate(local, {}, opt), b = simulate(naive, {}, opt);
    CHECK(a.start == b.start);
    CHECK(a.end == b.end);
    CHECK(a.delay_table == b.delay_table);
    CHECK(a.makespan == 2.0 * S * 17);
  }
}

TEST_SUITE_END();
