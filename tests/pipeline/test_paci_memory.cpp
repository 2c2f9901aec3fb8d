// PACI's memory claim (theory.md §5; issue #15): "same peak memory as 1F1B-flush". In the
// simulator's units (activations of one micro-batch on one stage; one block version):
//  - PACI's stage s holds at most S − s micro-batches between F and B, and reaches it once
//    M ≥ S; it keeps one weight version (no stash);
//  - 1F1B-flush with a micro-batches per step holds min(a, S − s) and one version;
// so the two coincide exactly when a ≥ S, and PACI holds more activations than flush at the
// same global batch when a < S (stage 0: S against a). The in-flight count is a function of
// each device's program alone (only its own F and B change it), so it must not depend on the
// cost model; it is re-derived here from the op stream and checked against the simulator
// under unit, realistic (t_B = 2 t_F, latency) and random costs.
#include <doctest/doctest.h>

#include <algorithm>

#include "tests/support/pipeline_test_util.hpp"

TEST_SUITE_BEGIN("pipeline");

using namespace stale;

namespace {

// the largest F − B count along each device's program (the obvious way, no simulator)
std::vector<int64_t> program_peak_inflight(const Schedule& s) {
  std::vector<int64_t> peak(s.stages, 0);
  for (int d = 0; d < s.stages; ++d) {
    int64_t now = 0;
    for (const Op& op : s.program(d)) {
      if (op.kind == OpKind::Forward) peak[d] = std::max(peak[d], ++now);
      if (op.kind == s.gradient_kind()) --now;
    }
  }
  return peak;
}

std::vector<CostModel> cost_models(int S, uint64_t seed) {
  CostModel unit;
  CostModel realistic = CostModel::parse({"forward=1", "backward=2", "latency=0.1"});
  Rng rng(seed, Stream::StageTime, 99);
  return {unit, realistic, test::random_costs(rng, S)};
}

}  // namespace

TEST_CASE("PaciHoldsSMinusSActivationsOnStageSAndOneWeightVersionUnderAnyCosts") {
  for (int S : {1, 2, 3, 4, 5, 8, 12, 16}) {
    for (int a : {1, 2, 3, 7, 8, 16, 17}) {
      CAPTURE(S);
      CAPTURE(a);
      const int64_t M = 3 * std::max(a, S) + 1;
      const Schedule paci = make_schedule("paci", {S, M, a});
      std::vector<int64_t> expected(S);
      for (int s = 0; s < S; ++s) expected[s] = S - s;
      CHECK(program_peak_inflight(paci) == expected);
      CHECK(paci.inflight_bound == expected);
      for (const CostModel& c : cost_models(S, static_cast<uint64_t>(S * 100 + a))) {
        const SimResult r = simulate(paci, c);
        CHECK(r.peak_inflight == expected);
        CHECK(r.peak_versions == std::vector<int64_t>(S, 1));
      }
    }
  }
}

TEST_CASE("PaciPeakMemoryEqualsOneFOneBFlushAtTheSameGlobalBatchWhenAIsAtLeastS") {
  for (int S : {1, 2, 3, 4, 5, 8, 12, 16}) {
    for (int a : {S, S + 1, 2 * S, 4 * S}) {
      CAPTURE(S);
      CAPTURE(a);
      const int64_t M = 4 * int64_t{a};  // whole mini-batches for the flush schedule
      const Schedule paci = make_schedule("paci", {S, M, a});
      const Schedule flush = make_schedule("1f1b-flush", {S, M, a});
      for (const CostModel& c : cost_models(S, static_cast<uint64_t>(S * 1000 + a))) {
        const SimResult rp = simulate(paci, c), rf = simulate(flush, c);
        CHECK(rp.peak_inflight == rf.peak_inflight);
        CHECK(rp.peak_versions == rf.peak_versions);
        CHECK(rf.peak_versions == std::vector<int64_t>(S, 1));
      }
    }
  }
}

TEST_CASE("BelowASmallerThanSPaciHoldsMoreActivationsThanFlushAtTheSameA") {
  // the paper's memory parity is an a ≥ S statement: flush with a < S micro-batches per step
  // never has more than a in flight, PACI keeps S − s
  for (int S : {3, 4, 8, 16}) {
    for (int a = 1; a < S; ++a) {
      CAPTURE(S);
      CAPTURE(a);
      const int64_t M = 4 * int64_t{S} * a;
      const SimResult rp = simulate(make_schedule("paci", {S, M, a}));
      const SimResult rf = simulate(make_schedule("1f1b-flush", {S, M, a}));
      for (int s = 0; s < S; ++s) {
        CHECK(rp.peak_inflight[s] == S - s);
        CHECK(rf.peak_inflight[s] == std::min<int64_t>(a, S - s));
      }
      CHECK(rp.peak_inflight[0] > rf.peak_inflight[0]);
    }
  }
}

TEST_SUITE_END();
