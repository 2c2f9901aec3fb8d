// PipeDream, PACI and 2BW: the exact facts of docs/theory.md §4–§5 on the slot clock.
#include <doctest/doctest.h>

#include <limits>

#include "tests/support/pipeline_test_util.hpp"

TEST_SUITE_BEGIN("pipeline");

using namespace stale;

namespace {

// The rules of docs/theory.md §4/§5 played slot by slot with explicit slot stamps, written
// separately from the generator: the op a stage runs in slot t is chosen among those whose
// dependencies carry a stamp < t. Returns the slot of every (kind, stage, micro-batch).
std::map<std::tuple<int, int, int64_t>, int64_t> reference_slots(int S, int64_t M, const std::vector<int64_t>& limit,
                                                                  bool alternate) {
  std::vector<std::vector<int64_t>> slotF(S, std::vector<int64_t>(M, -1)), slotB = slotF;
  std::vector<int64_t> nf(S, 0), nb(S, 0);
  std::vector<int> last(S, -1);
  std::map<std::tuple<int, int, int64_t>, int64_t> out;
  auto done = [](int64_t stamp, int64_t t) { return stamp >= 0 && stamp < t; };
  for (int64_t t = 0; static_cast<int64_t>(out.size()) < 2 * S * M; ++t) {
    REQUIRE(t < 4 * S * M + 4 * S);
    std::vector<std::pair<int, int>> run;  // (stage, 0 F / 1 B)
    for (int s = 0; s < S; ++s) {
      const bool f = nf[s] < M && nf[s] - nb[s] < limit[s] && (s == 0 || done(slotF[s - 1][nf[s]], t));
      const bool b = nb[s] < nf[s] && done(slotF[s][nb[s]], t) && (s == S - 1 || done(slotB[s + 1][nb[s]], t));
      if (!f && !b) continue;
      int kind = b ? 1 : 0;
      if (f && b && alternate && nb[s] > 0) kind = last[s] == 0 ? 1 : 0;
      run.emplace_back(s, kind);
    }
    for (auto [s, kind] : run) {
      if (kind == 0) {
        slotF[s][nf[s]] = t;
        out[{0, s, nf[s]++}] = t;
      } else {
        slotB[s][nb[s]] = t;
        out[{1, s, nb[s]++}] = t;
      }
      last[s] = kind;
    }
  }
  return out;
}

void check_matches_reference(const Schedule& s, const std::vector<int64_t>& limit, bool alternate) {
  const SimResult r = simulate(s);
  const auto ref = reference_slots(s.stages, s.microbatches, limit, alternate);
  for (int64_t i = 0; i < s.size(); ++i) {
    const Op& op = s.ops[i];
    REQUIRE(r.start[i] == static_cast<double>(ref.at({static_cast<int>(op.kind), op.block, op.microbatch})));
  }
}

}  // namespace

TEST_CASE("pipedream replayed with unit costs is the slot clock of docs/theory.md 4 (reference played separately)") {
  for (int S : {1, 2, 3, 5, 8, 13}) {
    for (int64_t M : {int64_t{1}, int64_t{S}, int64_t{3 * S + 2}}) {
      CAPTURE(S);
      CAPTURE(M);
      std::vector<int64_t> limit(S, std::numeric_limits<int64_t>::max());
      limit[0] = S;
      check_matches_reference(make_schedule("pipedream", {S, M}), limit, true);
    }
  }
}

TEST_CASE("pipedream's worst steady-state delay is S^2 - S/2 for even S and S^2 - S/2 - 1/2 for odd S, S = 2..64") {
  for (int S = 2; S <= 64; ++S) {
    CAPTURE(S);
    const SimResult r =
        simulate(make_schedule("pipedream", {S, 6 * int64_t{S}}), {}, {.timeline = false, .delay_pairs = true});
    const int64_t want = S % 2 == 0 ? int64_t{S} * S - S / 2 : int64_t{S} * S - (S + 1) / 2;
    CHECK(r.steady_delays.max_overall() == want);
    // attained when stage 0 (the paper's stage 1) reads its own block
    CHECK(r.steady_delays.pair_max[0] == want);
  }
}

TEST_CASE("pipedream's mean steady-state delay at S = 8 is 31.5, over (updating stage, read block) pairs") {
  const SimResult r = simulate(make_schedule("pipedream", {8, 200}));
  CHECK(r.steady_delays.mean_overall() == doctest::Approx(31.5).epsilon(1e-12));
  CHECK(r.steady_delays.max_overall() == 60);
}

TEST_CASE("pipedream's stages hold 8, 8, 8, 8, 7, 5, 3, 1 micro-batches at S = 8 (only stage 0 is limited)") {
  const SimResult r = simulate(make_schedule("pipedream", {8, 64}));
  CHECK(r.peak_inflight == std::vector<int64_t>{8, 8, 8, 8, 7, 5, 3, 1});
}

TEST_CASE("pipedream stashes weights: every B uses the version its F read") {
  for (int S : {2, 4, 7}) {
    const SimResult r = simulate(make_schedule("pipedream", {S, 10 * int64_t{S}}), {}, {.delay_table = true});
    CHECK_FALSE(r.backward_differs);
    CHECK(r.backward_version == r.forward_version);
    CHECK(r.backward_read == r.forward_read);
    CHECK(r.delay_table_backward.empty());
    // and without stashing the same order would cross updates: stashing is what hides them
    CHECK(r.max_crossed[0] == S - 1);
  }
}

TEST_CASE("paci replayed with unit costs is backward-first async 1F1B with S - s in flight (reference played separately)") {
  for (int S : {1, 2, 4, 7}) {
    for (int64_t M : {int64_t{1}, int64_t{S}, int64_t{4 * S + 1}}) {
      std::vector<int64_t> limit(S);
      for (int s = 0; s < S; ++s) limit[s] = S - s;
      check_matches_reference(make_schedule("paci", {S, M}), limit, false);
    }
  }
}

TEST_CASE("paci: a micro-batch crosses at most ceil((S-1-s)/a) updates of stage s between F and B, and attains it") {
  for (int S = 2; S <= 16; ++S)
    for (int a = 1; a <= 16; ++a) {
      CAPTURE(S);
      CAPTURE(a);
      const ScheduleParams p{S, 2 * int64_t{S} * a + 4 * int64_t{S}, a};
      const SimResult r = simulate(make_schedule("paci", p), {}, {.timeline = false, .delay_stats = false});
      for (int s = 0; s < S; ++s) {
        CAPTURE(s);
        CHECK(r.max_crossed[s] == (S - 1 - s + a - 1) / a);
        if (a == 1) CHECK(r.max_crossed[s] == S - 1 - s);
      }
    }
}

TEST_CASE("paci does not stash: B reads the block current at B time, so backward reads differ from forward reads") {
  const SimResult r = simulate(make_schedule("paci", {4, 40, 1}), {}, {.delay_table = true});
  CHECK(r.backward_differs);
  CHECK_FALSE(r.delay_table_backward.empty());
  // where B used another version than F the backward entry is fresher, and for the updating
  // block itself (a = 1) it is the current iterate: delay 0; where versions agree the rows agree
  for (size_t k = 0; k < r.updates.size(); ++k) {
    const Update& u = r.updates[k];
    for (int j = 0; j < 4; ++j) {
      const size_t cell = static_cast<size_t>(u.oldest) * 4 + j, e = k * 4 + j;
      if (j < u.block || r.backward_version[cell] == r.forward_version[cell]) {
        CHECK(r.delay_table_backward[e] == r.delay_table[e]);
      } else {
        CHECK(r.delay_table_backward[e] < r.delay_table[e]);
        if (j == u.block) CHECK(r.delay_table_backward[e] == 0);
      }
    }
  }
}

TEST_CASE("2bw keeps at most two versions of a block when it steps every a >= S micro-batches, and stashes") {
  for (int S : {2, 3, 4, 8})
    for (int a : {S, S + 1, 2 * S}) {
      const SimResult r = simulate(make_schedule("2bw", {S, 6 * int64_t{S} * a, a}));
      for (int s = 0; s < S; ++s) CHECK(r.peak_versions[s] <= 2);
      CHECK(r.peak_versions[0] == 2);
      CHECK(r.backward_version == r.forward_version);
      // forward reads the newest version: the step one behind is the most F can have missed
      for (int s = 0; s < S; ++s) CHECK(r.max_crossed[s] <= 1);
    }
}

TEST_SUITE_END();
