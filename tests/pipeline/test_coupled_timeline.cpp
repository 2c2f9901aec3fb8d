// The coupled timeline (src/pipeline/coupled_timeline.hpp) against the precomputed simulation:
// with state-independent costs it takes the same ops in the same order with the same times,
// delay rows and final result, bit for bit (noisy costs included, Pareto stragglers too); a
// hand-made two-stage PipeDream example where data-dependent costs change the delays as
// derived by hand below; the delay moments; the Pareto straggler factor's tail.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "src/pipeline/coupled_timeline.hpp"
#include "src/pipeline/delay_moments.hpp"
#include "src/pipeline/op_source.hpp"
#include "src/pipeline/simulator.hpp"

using namespace stale;

namespace {

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), sizeof(T) * a.size()) == 0);
}

struct Replay {
  std::vector<int64_t> ops;
  std::vector<double> ends;
  std::vector<std::vector<int64_t>> rows;
};

// drives an op source as the executor does, reporting the op's micro-batch as its batch
Replay replay(OpSource& src, const Schedule& s) {
  Replay r;
  for (int64_t i; (i = src.next()) >= 0;) {
    OpState st;
    st.batch = s.ops[i].microbatch;
    const OpTiming& t = src.finish(st);
    r.ops.push_back(i);
    r.ends.push_back(t.end);
    if (t.delays) r.rows.push_back(*t.delays);
  }
  return r;
}

std::vector<int> identity_batches(const Schedule& s) {
  std::vector<int> b(s.microbatches);
  for (int64_t m = 0; m < s.microbatches; ++m) b[m] = static_cast<int>(m);
  return b;
}

}  // namespace

TEST_CASE("with state-independent costs the coupled timeline is the precomputed simulation bit for bit") {
  const std::vector<std::vector<std::string>> cost_settings = {
      {},                                                                  // the slot clock
      {"forward=1,2,1.5,1", "backward=2,1,3,2", "latency=0.25"},           // uneven stages
      {"jitter=0.3", "straggler_prob=0.1", "straggler_slowdown=4", "seed=7"},  // lognormal + stragglers
      {"jitter=0.2", "straggler_prob=0.2", "pareto_alpha=1.5", "seed=3"},      // heavy-tailed stragglers
  };
  for (const std::string name : {"pipedream", "paci", "1f1b-flush", "2bw", "zb-h1"}) {
    for (const auto& settings : cost_settings) {
      CAPTURE(name);
      CAPTURE(settings.size());
      ScheduleParams p;
      p.stages = 4;
      p.microbatches = 24;
      const Schedule s = make_schedule(name, p);
      const CostModel costs = CostModel::parse(settings);
      const SimResult sim = simulate(s, costs);
      auto pre = precomputed_ops(s, sim, 16);
      CoupledTimeline coupled(s, costs, StateCosts(Coupling::None, 1.0, s.blocks()), identity_batches(s), 16);
      const Replay a = replay(*pre, s), b = replay(coupled, s);
      CHECK(a.ops == b.ops);
      CHECK(same_bits(a.ends, b.ends));
      REQUIRE(a.rows.size() == b.rows.size());
      CHECK(static_cast<int64_t>(a.rows.size()) == sim.total_updates);
      for (size_t k = 0; k < a.rows.size(); ++k) CHECK(a.rows[k] == b.rows[k]);
      const auto t = coupled.timeline();
      REQUIRE(t);
      CHECK(same_bits(t->start, sim.start));
      CHECK(same_bits(t->end, sim.end));
      CHECK(same_bits(t->busy, sim.busy));
      CHECK(t->makespan == sim.makespan);
      CHECK(t->bubble_overall == sim.bubble_overall);
      CHECK(same_bits(t->forward_read, sim.forward_read));
      CHECK(same_bits(t->backward_read, sim.backward_read));
      CHECK(same_bits(t->max_crossed, sim.max_crossed));
      CHECK(same_bits(t->delays.update_max, sim.delays.update_max));
      CHECK(same_bits(t->delays.update_sum, sim.delays.update_sum));
      CHECK(same_bits(t->steady_delays.read_sum, sim.steady_delays.read_sum));
      const DelayMoments ma = pre->moments(), mb = coupled.moments();
      CHECK(same_bits(ma.second, mb.second));
      CHECK(same_bits(ma.max, mb.max));
    }
  }
}

// PipeDream, S = 2, M = 4. Device programs (the schedule's data):
//   device 0: F0 F1 B0 F2 B1 F3 B2 B3        device 1: F0 B0 F1 B1 F2 B2 F3 B3
// Unit costs (slot clock): updates in serial order k = 0..7 are B(1,0) B(0,0) B(1,1) B(0,1)
// B(1,2) B(0,2) B(1,3) B(0,3); the forward reads c(j, mb) (updates before F(j, mb), lower
// devices first within a slot) are mb0 (0, 0), mb1 (0, 2), mb2 (2, 4), mb3 (4, 6), so the rows
// k − c(j, mb) are (0,0) (1,1) (2,0) (3,1) (2,0) (3,1) (2,0) (3,1).
// Data costs {1, 5, 1, 1} (mean 2): micro-batch 1's ops take 2.5, the others 0.5. By hand:
//   dev0 F0 [0, .5]  F1 [.5, 3]  B0 [3, 3.5]  F2 [3.5, 4]  B1 [8, 10.5]  F3 [10.5, 11]  B2 [11, 11.5]  B3 [12, 12.5]
//   dev1 F0 [.5, 1]  B0 [1, 1.5] F1 [3, 5.5]  B1 [5.5, 8] F2 [8, 8.5]    B2 [8.5, 9]    F3 [11, 11.5]  B3 [11.5, 12]
// The updates keep their order, but the slow micro-batch 1 holds device 0 until 10.5, so
// F(0, 3) now starts after B(1, 2) (k = 4) as well: c(0, 3) = 5 instead of 4, and the last
// two rows become (1, 0) and (2, 1). Every other read is unchanged.
TEST_CASE("data-dependent costs change a two-stage PipeDream's delays exactly as derived by hand") {
  ScheduleParams p;
  p.stages = 2;
  p.microbatches = 4;
  const Schedule s = make_schedule("pipedream", p);
  const std::vector<std::vector<int64_t>> unit_rows = {{0, 0}, {1, 1}, {2, 0}, {3, 1}, {2, 0}, {3, 1}, {2, 0}, {3, 1}};
  {
    CoupledTimeline unit(s, CostModel{}, StateCosts(Coupling::None, 1.0, 2), identity_batches(s), 4);
    CHECK(replay(unit, s).rows == unit_rows);
  }
  CoupledTimeline data(s, CostModel{}, StateCosts(Coupling::Data, 1.0, 2, {1, 5, 1, 1}), identity_batches(s), 4);
  const Replay r = replay(data, s);
  const std::vector<std::vector<int64_t>> rows = {{0, 0}, {1, 1}, {2, 0}, {3, 1}, {2, 0}, {3, 1}, {1, 0}, {2, 1}};
  CHECK(r.rows == rows);
  const auto t = data.timeline();
  CHECK(t->makespan == 12.5);
  // update ends in serial order (dyadic durations: exact)
  std::vector<double> ends;
  for (const Update& u : t->updates) ends.push_back(u.end);
  CHECK(ends == std::vector<double>{1.5, 3.5, 8.0, 10.5, 9.0, 11.5, 12.0, 12.5});
  CHECK(t->read_index(3, 0) == 5);
  CHECK(t->read_index(3, 1) == 6);
  // β = 0 switches the coupling off: the unit rows again
  CoupledTimeline flat(s, CostModel{}, StateCosts(Coupling::Data, 0.0, 2, {1, 5, 1, 1}), identity_batches(s), 4);
  CHECK(replay(flat, s).rows == unit_rows);
}

TEST_CASE("gradient coupling times a block's ops by its latest gradient norm relative to its first") {
  StateCosts c(Coupling::Gradient, 2.0, 2);
  Vec g1 = Vec::Constant(4, 1.0), g2 = Vec::Constant(4, 3.0);  // norms 2 and 6
  OpState none, first, later;
  first.gradient = &g1;
  later.gradient = &g2;
  CHECK(c.factor(0, false, none) == 1.0);   // before any gradient
  CHECK(c.factor(0, true, first) == 1.0);   // the reference itself
  CHECK(c.factor(0, true, later) == doctest::Approx(9.0).epsilon(1e-15));  // (6/2)^2
  CHECK(c.factor(0, false, none) == doctest::Approx(9.0).epsilon(1e-15));  // F keeps the latest
  CHECK(c.factor(1, false, none) == 1.0);   // per block
  Vec bad = Vec::Constant(4, std::nan(""));
  OpState diverged;
  diverged.gradient = &bad;
  CHECK(c.factor(0, true, diverged) == doctest::Approx(9.0).epsilon(1e-15));  // non-finite: kept
  CHECK(c.frozen_factor(0, 0) == doctest::Approx(9.0).epsilon(1e-15));

  StateCosts w(Coupling::Weight, 1.0, 1);
  const double block[4] = {2, 2, 2, 2};  // RMS 2
  OpState ws;
  ws.weights = block;
  ws.weights_size = 4;
  CHECK(w.factor(0, false, ws) == 3.0);
}

TEST_CASE("delay moments: windows of k with mean, second moment, max per block and the running max") {
  DelayMoments m(2, 2);
  m.add({1, 0});
  m.add({3, 2});
  m.add({5, 1});
  m.close();
  REQUIRE(m.windows() == 2);
  CHECK(m.k_end == std::vector<int64_t>{2, 3});
  CHECK(m.count == std::vector<int64_t>{2, 1});
  CHECK(m.mean == std::vector<double>{2.0, 1.0, 5.0, 1.0});
  CHECK(m.second == std::vector<double>{5.0, 2.0, 25.0, 1.0});
  CHECK(m.max == std::vector<int64_t>{3, 2, 5, 1});
  CHECK(m.running_max == std::vector<int64_t>{3, 5});
  CHECK(m.max_overall() == 5);
}

TEST_CASE("Pareto stragglers: factors >= 1 with the tail P(factor > x) = p x^-alpha, no other draw moved") {
  CostModel c = CostModel::parse({"straggler_prob=0.5", "pareto_alpha=2", "seed=11"});
  CostModel::Noise noise(c, 0);
  const int n = 200000;
  int above2 = 0, above4 = 0, slowed = 0;
  for (int i = 0; i < n; ++i) {
    const double f = noise.next();
    REQUIRE(f >= 1.0);
    REQUIRE(std::isfinite(f));
    slowed += f > 1.0;
    above2 += f > 2.0;
    above4 += f > 4.0;
  }
  // binomial standard errors: about 0.0011, 0.0009 and 0.0005
  CHECK(static_cast<double>(slowed) / n == doctest::Approx(0.5).epsilon(0.01));
  CHECK(static_cast<double>(above2) / n == doctest::Approx(0.125).epsilon(0.04));
  CHECK(static_cast<double>(above4) / n == doctest::Approx(0.03125).epsilon(0.08));
  // the fixed slowdown and the Pareto tail straggle on exactly the same ops
  CostModel fixed = CostModel::parse({"straggler_prob=0.5", "straggler_slowdown=3", "seed=11"});
  CostModel::Noise a(c, 2), b(fixed, 2);
  for (int i = 0; i < 1000; ++i) CHECK((a.next() > 1.0) == (b.next() > 1.0));
  CHECK(CostModel::parse({"pareto_alpha=1.5"}).describe().find("pareto_alpha=1.5") != std::string::npos);
  CHECK(CostModel{}.describe().find("pareto") == std::string::npos);
}

// docs/theory.md §9 (ours): stage 0 holds at most S micro-batches and the device programs are
// fixed, so F(0, mb + S) follows B(0, mb) and every update of micro-batch mb − S precedes
// F(0, mb); the updates between a read F(j, mb) and the update B(a, mb) belong to micro-batches
// mb − S + 1 … mb + S − 1, at most S each. Hence d ≤ (2S − 1)·S under any op durations.
TEST_CASE("PipeDream's and PACI's delays stay below (2S - 1) S under any op durations") {
  for (const std::string name : {"pipedream", "paci"}) {
    for (int S : {2, 3, 4, 8}) {
      for (int seed = 0; seed < 4; ++seed) {
        CAPTURE(name);
        CAPTURE(S);
        CAPTURE(seed);
        ScheduleParams p;
        p.stages = S;
        p.microbatches = 12 * S;
        const Schedule s = make_schedule(name, p);
        // wild costs: lognormal σ = 1.5 on every op, and half the ops slowed by a Pareto(0.7)
        // factor (infinite mean); uneven nominal stages on top
        std::string fwd = "forward=", bwd = "backward=";
        for (int d = 0; d < S; ++d) {
          fwd += (d ? "," : "") + std::to_string(1 + (d * 7 + seed) % 5);
          bwd += (d ? "," : "") + std::to_string(1 + (d * 3 + 2 * seed) % 4);
        }
        const CostModel costs = CostModel::parse(
            {fwd, bwd, "jitter=1.5", "straggler_prob=0.5", "pareto_alpha=0.7", "seed=" + std::to_string(seed)});
        const SimResult sim = simulate(s, costs);
        CHECK(sim.delays.max_overall() <= int64_t{2 * S - 1} * S);
        CHECK(sim.delays.max_overall() >= 0);
      }
    }
  }
}
