// Flush schedules: the bubbles the papers state, exactly, on the slot clock.
#include <doctest/doctest.h>

#include "src/core/error.hpp"
#include "tests/support/pipeline_test_util.hpp"

TEST_SUITE_BEGIN("pipeline");

using namespace stale;

TEST_CASE("gpipe and 1f1b-flush with unit costs idle exactly (S - 1)/(M + S - 1) for one mini-batch of M") {
  for (const char* name : {"gpipe", "1f1b-flush"})
    for (int S = 1; S <= 12; ++S)
      for (int64_t M = 1; M <= 24; ++M) {
        CAPTURE(name);
        CAPTURE(S);
        CAPTURE(M);
        const SimResult r = simulate(make_schedule(name, {S, M, static_cast<int>(M)}));  // one mini-batch of M
        CHECK(r.makespan == 2.0 * (M + S - 1));
        CHECK(r.bubble_overall == doctest::Approx(double(S - 1) / double(M + S - 1)).epsilon(1e-12));
        for (int d = 0; d < S; ++d) CHECK(r.bubble[d] == doctest::Approx(r.bubble_overall).epsilon(1e-12));
      }
}

TEST_CASE("gpipe and 1f1b-flush flush per mini-batch: every read of a mini-batch sees the version left by the last one") {
  for (const char* name : {"gpipe", "1f1b-flush"}) {
    const int S = 4, m = 6;
    const SimResult r = simulate(make_schedule(name, {S, 5 * m - 2, m}));
    for (int64_t mb = 0; mb < 5 * m - 2; ++mb)
      for (int j = 0; j < S; ++j) {
        CHECK(r.forward_version[mb * S + j] == mb / m);
        CHECK(r.backward_version[mb * S + j] == mb / m);
      }
    CHECK(r.makespan == 4 * 2.0 * (m + S - 1) + 2.0 * (m - 2 + S - 1));
  }
}

TEST_CASE("1f1b-flush holds at most S - s activations on stage s, gpipe all m") {
  const SimResult a = simulate(make_schedule("1f1b-flush", {6, 30, 10}));
  CHECK(a.peak_inflight == std::vector<int64_t>{6, 5, 4, 3, 2, 1});
  const SimResult b = simulate(make_schedule("gpipe", {6, 30, 10}));
  CHECK(b.peak_inflight == std::vector<int64_t>(6, 10));
}

TEST_CASE("interleaved 1F1B with v chunks idles (S - 1)/(v m + S - 1): the bubble shrinks by v") {
  for (int S : {1, 2, 4, 8})
    for (int v : {1, 2, 3, 4})
      for (int k : {1, 2, 3}) {
        CAPTURE(S);
        CAPTURE(v);
        CAPTURE(k);
        const int64_t m = int64_t{S} * k;
        ScheduleParams p{S, m, static_cast<int>(m)};  // one mini-batch of m
        p.chunks = v;
        const SimResult r = simulate(make_schedule("interleaved", p));
        CHECK(r.bubble_overall == doctest::Approx(double(S - 1) / double(v * m + S - 1)).epsilon(1e-12));
      }
}

TEST_CASE("interleaved at M = S caps the warm-up at (v - 1) S + 2(S - d - 1), as PyTorch and Megatron-LM: peak activations "
          "per device fall towards the last device") {
  // the peaks PyTorch's ScheduleInterleaved1F1B holds at v = 2 (issue 50); running every forward
  // first, the rule an earlier Megatron-LM used at M = S, gives 2S on every device
  const std::vector<std::pair<int, std::vector<int64_t>>> want = {{4, {8, 8, 7, 5}}, {8, {16, 16, 16, 16, 15, 13, 11, 9}}};
  for (const auto& [S, peaks] : want) {
    CAPTURE(S);
    ScheduleParams p{S, S, S};
    p.chunks = 2;
    const SimResult r = simulate(make_schedule("interleaved", p));
    CHECK(r.peak_inflight == peaks);
    CHECK(r.makespan == doctest::Approx(2.0 * (S + (S - 1) / 2.0)).epsilon(1e-12));  // (v·M + S − 1) chunk F+B pairs of 1/v
  }
}

TEST_CASE("interleaved accepts the micro-batch counts PyTorch accepts: a whole number of max(1, n / S) rounds") {
  // S = 4: one round of 3, 5 or 6; two rounds of 5; three of 4 or 5
  for (int64_t n : {3, 5, 6, 10, 12, 15}) {
    CAPTURE(n);
    const Schedule s = make_schedule("interleaved", {4, n, static_cast<int>(n)});
    check_schedule(s);
    CHECK_NOTHROW(simulate(s));
  }
  // two rounds of 4.5, three of 13/3: PyTorch refuses both
  for (int64_t n : {9, 13}) {
    CAPTURE(n);
    CHECK_THROWS_AS(make_schedule("interleaved", {4, n, static_cast<int>(n)}), UserError);
  }
}

TEST_CASE("interleaved with one chunk is 1f1b-flush") {
  for (int S : {2, 4, 5}) {
    ScheduleParams p{S, 4 * int64_t{S}, 2 * S};
    p.chunks = 1;
    const Schedule a = make_schedule("interleaved", p);
    p.chunks = 0;
    const Schedule b = make_schedule("1f1b-flush", p);
    const SimResult ra = simulate(a), rb = simulate(b);
    CHECK(ra.makespan == rb.makespan);
    CHECK(ra.peak_inflight == rb.peak_inflight);
  }
}

TEST_CASE("zb-h1 with t_F = t_B = t_W takes 3m + S - 1, against 1f1b-flush's 3m + 3(S - 1), at the same peak memory") {
  CostModel c;
  c.set("weight=1");
  for (int S = 1; S <= 10; ++S)
    for (int64_t m : {int64_t{S}, int64_t{S} + 3, 3 * int64_t{S}}) {
      CAPTURE(S);
      CAPTURE(m);
      const SimResult zb = simulate(make_schedule("zb-h1", {S, m, static_cast<int>(m)}), c);
      const SimResult fl = simulate(make_schedule("1f1b-flush", {S, m, static_cast<int>(m)}), c);
      CHECK(zb.makespan == 3.0 * m + (S - 1));
      CHECK(fl.makespan == 3.0 * m + 3.0 * (S - 1));
      const int64_t zb_peak = *std::max_element(zb.peak_inflight.begin(), zb.peak_inflight.end());
      const int64_t fl_peak = *std::max_element(fl.peak_inflight.begin(), fl.peak_inflight.end());
      CHECK(zb_peak == fl_peak);
    }
}

TEST_CASE("naive runs one op at a time: makespan is the sum of every op") {
  CostModel c = CostModel::parse({"forward=1,2,3", "backward=2,2,1"});
  const SimResult r = simulate(make_schedule("naive", {3, 7}), c);
  CHECK(r.makespan == 7 * (1 + 2 + 3 + 2 + 2 + 1));
}

TEST_SUITE_END();

TEST_CASE("interleaved-zb with one chunk is zb-h1's program, op for op") {
  for (int S : {1, 2, 4, 5})
    for (int64_t n : {int64_t{S}, 2 * int64_t{S}, 3 * int64_t{S}}) {
      CAPTURE(S);
      CAPTURE(n);
      ScheduleParams p{S, 2 * n, static_cast<int>(n)};
      p.chunks = 1;
      const Schedule a = make_schedule("interleaved-zb", p);
      p.chunks = 0;
      const Schedule b = make_schedule("zb-h1", p);
      REQUIRE(a.ops.size() == b.ops.size());
      bool same = a.offsets == b.offsets;
      for (size_t i = 0; i < a.ops.size(); ++i)
        same &= a.ops[i].block == b.ops[i].block && a.ops[i].kind == b.ops[i].kind &&
                a.ops[i].microbatch == b.ops[i].microbatch && a.ops[i].flags == b.ops[i].flags;
      CHECK(same);
    }
}

TEST_CASE("interleaved-zb with t_F = t_B = t_W takes (3vn + S - 1)/v for a mini-batch of n >= 2S: each device idles "
          "S - 1 chunk slots") {
  CostModel c;
  c.set("weight=1");
  for (int S : {1, 2, 3, 4, 8})
    for (int v : {2, 3})
      for (int64_t n : {2 * int64_t{S}, 3 * int64_t{S}, 4 * int64_t{S}}) {
        CAPTURE(S);
        CAPTURE(v);
        CAPTURE(n);
        ScheduleParams p{S, n, static_cast<int>(n)};
        p.chunks = v;
        const SimResult r = simulate(make_schedule("interleaved-zb", p), c);
        CHECK(r.makespan == doctest::Approx(double(3 * v * n + S - 1) / v).epsilon(1e-12));
      }
}

TEST_CASE("looped-bfs with t_F = t_B takes 2(vn + S - 1)/v for a mini-batch of n >= S, holding all vn chunk activations") {
  for (int S : {1, 2, 4, 8})
    for (int v : {1, 2, 3})
      for (int64_t n : {int64_t{S}, int64_t{S} + 1, 3 * int64_t{S}}) {
        CAPTURE(S);
        CAPTURE(v);
        CAPTURE(n);
        ScheduleParams p{S, n, static_cast<int>(n)};
        p.chunks = v;
        const SimResult r = simulate(make_schedule("looped-bfs", p));
        CHECK(r.makespan == doctest::Approx(2.0 * double(v * n + S - 1) / v).epsilon(1e-12));
        CHECK(r.peak_inflight == std::vector<int64_t>(S, v * n));
      }
}
