// V-shaped schedules (two chunks per device, device d holding blocks d and 2S − 1 − d): the
// unit-cost makespans and peak memories their papers state, exactly.
#include <doctest/doctest.h>

#include "src/core/error.hpp"
#include "tests/support/pipeline_test_util.hpp"

TEST_SUITE_BEGIN("pipeline");

using namespace stale;

namespace {
CostModel unit_costs() {  // t_F = t_B = t_W = 1 per stage: 1/2 per chunk op
  CostModel c;
  c.set("weight=1");
  return c;
}
}  // namespace

TEST_CASE("zb-v places chunk d and chunk 2S - 1 - d on device d: the turn at device S - 1 crosses no link") {
  const Schedule s = make_schedule("zb-v", {4, 8});
  CHECK(s.chunks == 2);
  CHECK(s.blocks() == 8);
  const std::vector<int> want = {0, 1, 2, 3, 3, 2, 1, 0};
  for (int b = 0; b < 8; ++b) CHECK(s.device_of(b) == want[b]);
  for (int d = 0; d < 4; ++d)
    for (const Op& op : s.program(d)) REQUIRE((op.block == d || op.block == 7 - d));
  // a latency on every link delays a V less than a loop of the same blocks: the turn is free
  CostModel c = unit_costs();
  c.set("latency=0.25");
  const SimResult r = simulate(s, c);
  CHECK(r.makespan > simulate(s, unit_costs()).makespan);
}

TEST_CASE("zb-v with t_F = t_B = t_W takes 6n + S - 1 chunk slots for a mini-batch of n >= 2S (Qi et al. 2024), "
          "against zb-h1's 2(3n + S - 1)") {
  const CostModel c = unit_costs();
  for (int S = 1; S <= 10; ++S)
    for (int64_t n : {2 * int64_t{S}, 2 * int64_t{S} + 1, 3 * int64_t{S}, 4 * int64_t{S} + 3}) {
      CAPTURE(S);
      CAPTURE(n);
      const SimResult r = simulate(make_schedule("zb-v", {S, n, static_cast<int>(n)}), c);
      CHECK(r.makespan == doctest::Approx(0.5 * double(6 * n + S - 1)).epsilon(1e-12));
      // every device is busy 6n chunk slots: the idle time is S - 1 slots, on every device
      for (int d = 0; d < S; ++d) CHECK(r.busy[d] == doctest::Approx(0.5 * double(6 * n)).epsilon(1e-12));
    }
}

TEST_CASE("zb-v holds at most 2S chunk activations on every device, reached once n >= 2S: S stage activations, the peak "
          "of 1F1B's first stage") {
  for (int S = 1; S <= 10; ++S)
    for (int64_t n : {int64_t{1}, int64_t{S}, 2 * int64_t{S} - 1, 2 * int64_t{S}, 3 * int64_t{S} + 1}) {
      CAPTURE(S);
      CAPTURE(n);
      const Schedule s = make_schedule("zb-v", {S, 2 * n, static_cast<int>(n)});  // two mini-batches
      const SimResult r = simulate(s, unit_costs());
      const SimResult f = simulate(make_schedule("1f1b-flush", {S, 2 * n, static_cast<int>(n)}), unit_costs());
      for (int d = 0; d < S; ++d) {
        CHECK(r.peak_inflight[d] <= 2 * S);
        CHECK(r.peak_inflight[d] <= s.inflight_bound[d]);
        if (n >= 2 * S) CHECK(r.peak_inflight[d] == 2 * S);
      }
      if (n >= 2 * S) CHECK(r.peak_inflight[0] == 2 * f.peak_inflight[0]);  // chunk activations are half a stage's
    }
}

TEST_CASE("zb-v takes chunks = 2 only") {
  ScheduleParams p{4, 8};
  p.chunks = 3;
  CHECK_THROWS_WITH_AS(make_schedule("zb-v", p), doctest::Contains("chunks is 2 for a V-shaped schedule"), UserError);
  p.chunks = 2;
  CHECK(make_schedule("zb-v", p).chunks == 2);
}

TEST_CASE("dualpipev with t_F = t_B = t_W and no overlap takes 6n + S - 1 chunk slots for a mini-batch of n >= 2S "
          "(PyTorch's ScheduleDualPipeV, whose program it is), holding 2S + 1 chunk activations per device") {
  const CostModel c = unit_costs();
  for (int S = 1; S <= 10; ++S)
    for (int64_t n : {2 * int64_t{S}, 2 * int64_t{S} + 1, 3 * int64_t{S}, 4 * int64_t{S} + 3}) {
      CAPTURE(S);
      CAPTURE(n);
      const SimResult r = simulate(make_schedule("dualpipev", {S, n, static_cast<int>(n)}), c);
      CHECK(r.makespan == doctest::Approx(0.5 * double(6 * n + S - 1)).epsilon(1e-12));
      for (int d = 0; d < S; ++d) {
        CHECK(r.busy[d] == doctest::Approx(0.5 * double(6 * n)).epsilon(1e-12));
        CHECK(r.peak_inflight[d] == 2 * S + 1);  // one chunk activation above zb-v's 2S
      }
    }
}

TEST_CASE("dualpipev's F&B pairs: the cost model's overlap hides overlap x min(t_F, t_B + t_W) per pair, and only there") {
  for (int S : {2, 4, 8}) {
    CAPTURE(S);
    const Schedule s = make_schedule("dualpipev", {S, 3 * int64_t{S}, 3 * S});
    std::vector<int64_t> pairs(S, 0);
    for (int d = 0; d < S; ++d) {
      const auto prog = s.program(d);
      for (size_t i = 0; i < prog.size(); ++i)
        if (prog[i].overlapped()) {
          ++pairs[d];
          // a pair is F of one chunk, then the whole backward (B, W) of the other, back to back
          REQUIRE(prog[i].kind == OpKind::Forward);
          REQUIRE(i + 2 < prog.size());
          CHECK(prog[i + 1].kind == OpKind::Backward);
          CHECK(prog[i + 2].kind == OpKind::Weight);
          CHECK(prog[i + 1].block != prog[i].block);
          CHECK(prog[i + 2].microbatch == prog[i + 1].microbatch);
        }
      CHECK(pairs[d] > 0);
    }
    CostModel none = unit_costs(), half = unit_costs(), full = unit_costs();
    half.set("overlap=0.5");
    full.set("overlap=1");
    const SimResult r0 = simulate(s, none), rh = simulate(s, half), r1 = simulate(s, full);
    for (int d = 0; d < S; ++d) {
      // per chunk t_F = 1/2, t_B + t_W = 1: a pair hides overlap / 2
      CHECK(rh.busy[d] == doctest::Approx(r0.busy[d] - 0.25 * double(pairs[d])).epsilon(1e-12));
      CHECK(r1.busy[d] == doctest::Approx(r0.busy[d] - 0.5 * double(pairs[d])).epsilon(1e-12));
    }
    CHECK(r1.makespan < rh.makespan);
    CHECK(rh.makespan < r0.makespan);
    // zb-v has no pairs: overlap changes nothing there
    const Schedule z = make_schedule("zb-v", {S, 3 * int64_t{S}, 3 * S});
    CHECK(simulate(z, full).makespan == simulate(z, none).makespan);
  }
}

TEST_CASE("dualpipev needs at least 2S micro-batches in every mini-batch, as PyTorch") {
  CHECK_THROWS_WITH_AS(make_schedule("dualpipev", {4, 7, 7}), doctest::Contains("at least 8 micro-batches"), UserError);
  CHECK_THROWS_WITH_AS(make_schedule("dualpipev", {4, 20, 8}), doctest::Contains("at least 8 micro-batches"), UserError);  // last: 4
  CHECK(make_schedule("dualpipev", {4, 16}).accumulation == 8);  // the default: 2S
  CHECK_THROWS_WITH_AS(CostModel::parse({"overlap=1.5"}), doctest::Contains("fraction in [0, 1]"), UserError);
}
