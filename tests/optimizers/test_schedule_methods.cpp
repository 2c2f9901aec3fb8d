// Schedule-driven methods against the equivalences that pin them down (issue: schedule-driven
// methods): S = 1 collapses PipeDream and PACI to SGD bit for bit; flush schedules are
// mini-batch SGD on the accumulated gradient; PipeDream is RPD replaying PipeDream's own
// delays, stage order and batch order, bit for bit; LocalSGD reduces to SGD and to mini-batch
// SGD; PACI's measured drift obeys ⌈(S − 1 − s)/a⌉; and every method converges on a small
// strongly convex quadratic with a small step.
#include <doctest/doctest.h>

#include <cstring>

#include "objectives/objective_factory.hpp"
#include "optimizers/method.hpp"
#include "optimizers/method_registry.hpp"
#include "optimizers/sampling.hpp"
#include "optimizers/schedule_executor.hpp"
#include "src/pipeline/schedule.hpp"
#include "src/pipeline/simulator.hpp"
#include "src/run/runner.hpp"
#include "tests/support/finite_difference.hpp"
#include "tests/support/observers.hpp"
#include "tests/support/tolerances.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("optimizers");

using namespace stale;

namespace {

using History = test::IterateRecorder;

Config base(const std::string& extra) {
  return Config::from_string(R"(
seed = 1
backend = "cpu"
[objective]
name = "logistic"
generator = "synthetic"
dim = 26
samples = 96
batch_size = 4
stages = 4
l2 = 0.01
[method]
lr = 0.05
updates = 480
[log]
progress = false
)" + extra, "t.toml");
}

struct Outcome {
  History h;
  std::unique_ptr<Objective> f;
  std::unique_ptr<Method> m;
  RunPlan plan;
  RunReport report;
};

Outcome run(const Config& cfg) {
  Outcome o;
  o.f = make_objective(cfg, BackendKind::Cpu);
  o.m = make_method(cfg, *o.f);
  o.plan = o.m->plan(*o.f);
  Vec w = Vec::Zero(o.f->dim());
  o.report = o.m->run(*o.f, o.plan, w, o.h);
  return o;
}

bool bit_equal(const Vec& a, const Vec& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0;
}

using test::rel_err;

// mini-batch SGD on micro-batches read cyclically, m per step (the flush methods' claim)
Vec minibatch_sgd(const Objective& f, int64_t steps, int m, double lr, const std::vector<int>& batch_of) {
  Vec w = Vec::Zero(f.dim()), g, acc;
  int64_t mb = 0;
  for (int64_t t = 0; t < steps; ++t) {
    acc = Vec::Zero(f.dim());
    for (int i = 0; i < m; ++i, ++mb) {
      f.batch_value_grad(w, batch_of[mb], g);
      acc += g;
    }
    w -= lr * (acc / m);
  }
  return w;
}

// the schedule-driven methods of the registry whose schedule is (or is not) a flush schedule,
// LocalSGD's replicated one aside: a new method is covered without an edit here
std::vector<const MethodEntry*> schedule_methods(bool flush) {
  std::vector<const MethodEntry*> out;
  for (const MethodEntry& e : MethodRegistry::entries()) {
    if (e.kind != MethodKind::ScheduleDriven) continue;
    const ScheduleInfo& s = schedule_info(e.schedule);
    if (!s.replicated && s.flush == flush) out.push_back(&e);
  }
  return out;
}

}  // namespace

TEST_CASE("OneStagePipeDreamAndPaciAreSgdBitForBit") {
  const auto methods = schedule_methods(/*flush=*/false);
  CHECK(methods.size() >= 5);  // pipedream, its no-stash and capped variants, pipemare, paci, 2bw
  for (const MethodEntry* m : methods) {
    const std::string name = m->name;
    CAPTURE(name);
    Config a = base("");
    a.apply_override("objective.stages=1");
    a.apply_override("method.name=" + name);
    // one micro-batch per update, as SGD's step (2bw's default accumulates S)
    if (schedule_info(m->schedule).accumulates) a.apply_override("method.accumulation=1");
    Config s = base("");
    s.apply_override("objective.stages=1");
    s.apply_override("method.name=sgd");
    s.apply_override("method.batch_order=cyclic");
    const auto pa = run(a), ps = run(s);
    REQUIRE(pa.h.iterates.size() == ps.h.iterates.size());
    bool same = true;
    for (size_t k = 0; k < pa.h.iterates.size(); ++k) same &= bit_equal(pa.h.iterates[k], ps.h.iterates[k]);
    CHECK(same);
  }
}

TEST_CASE("FlushSchedulesAreMiniBatchSgdOnTheAccumulatedGradient") {
  const auto methods = schedule_methods(/*flush=*/true);
  CHECK(methods.size() >= 4);  // gpipe, 1f1b-flush, zb-h1, interleaved
  for (const MethodEntry* m : methods) {
    const std::string name = m->name;
    CAPTURE(name);
    Config c = base("");
    c.apply_override("method.name=" + name);
    c.apply_override("method.accumulation=4");
    const auto o = run(c);
    const int64_t steps = static_cast<int64_t>(o.h.events.size()) / o.f->stages();
    REQUIRE(steps * o.f->stages() == static_cast<int64_t>(o.h.events.size()));
    const auto batch_of = microbatch_batches(steps * 4, o.f->num_batches(), true, 1);
    const Vec ref = minibatch_sgd(*o.f, steps, 4, 0.05, batch_of);
    CHECK(rel_err(o.h.iterates.back(), ref) <= test::tol::kReordered);
  }
}

TEST_CASE("PipeDreamIsRpdReplayingItsDelayTableStageOrderAndBatchOrderBitForBit") {
  for (int S : {2, 4}) {
    CAPTURE(S);
    Config pd = base("");
    pd.apply_override("objective.stages=" + std::to_string(S));
    pd.apply_override("method.name=pipedream");
    Config rpd = base("[delay]\nname = \"schedule\"\nschedule = \"pipedream\"\nfollow_order = true\n");
    rpd.apply_override("objective.stages=" + std::to_string(S));
    rpd.apply_override("method.name=rpd");
    const auto a = run(pd), b = run(rpd);
    REQUIRE(a.h.iterates.size() == b.h.iterates.size());
    bool same = true;
    for (size_t k = 0; k < a.h.iterates.size(); ++k) same &= bit_equal(a.h.iterates[k], b.h.iterates[k]);
    CHECK(same);
    // and the replay really is stale: the table reaches S² − S/2 (+ warm-up)
    CHECK(b.plan.delay_bound >= S * S - S / 2);
    CHECK(a.plan.delay_bound == b.plan.delay_bound);
  }
}

TEST_CASE("PaciWithOneMicroBatchPerStepIsPipeDreamWithoutStashingOnThePaciSchedule") {
  Config paci = base("");
  paci.apply_override("method.name=paci");
  paci.apply_override("method.accumulation=1");
  const auto a = run(paci);
  // pipedream-nostash's rule (current weights in B) executed on PACI's schedule
  ExecutorOptions o = ExecutorOptions::from_config(paci, "paci");
  o.stash = false;
  ScheduleMethod nostash("pipedream-nostash", o);
  auto f = make_objective(paci, BackendKind::Cpu);
  History h;
  Vec w = Vec::Zero(f->dim());
  nostash.run(*f, w, h);
  CHECK(bit_equal(w, a.h.iterates.back()));
  // PACI's schedule is not PipeDream's: the in-flight limits differ, so do the iterates
  Config nostash_pd = base("");
  nostash_pd.apply_override("method.name=pipedream-nostash");
  CHECK_FALSE(bit_equal(run(nostash_pd).h.iterates.back(), a.h.iterates.back()));
}

TEST_CASE("LocalSgdWithOneReplicaIsSgdAndWithOneLocalStepIsMiniBatchSgd") {
  Config l1 = base("");
  l1.apply_override("method.name=localsgd");
  l1.apply_override("method.replicas=1");
  l1.apply_override("method.local_steps=3");
  Config s = base("");
  s.apply_override("method.name=sgd");
  s.apply_override("method.batch_order=cyclic");
  const auto a = run(l1), b = run(s);
  CHECK(rel_err(a.h.iterates.back(), b.h.iterates.back()) <= test::tol::kReordered);

  Config lr = base("");
  lr.apply_override("method.name=localsgd");
  lr.apply_override("method.replicas=4");
  lr.apply_override("method.local_steps=1");
  const auto c = run(lr);
  const int64_t rounds = static_cast<int64_t>(c.h.events.size()) / (4 * c.f->stages());
  const auto batch_of = microbatch_batches(rounds * 4, c.f->num_batches(), true, 1);
  CHECK(rel_err(c.h.iterates.back(), minibatch_sgd(*c.f, rounds, 4, 0.05, batch_of)) <= test::tol::kReordered);
}

TEST_CASE("PaciMeasuredCrossingsObeyTheBoundAndMatchTheSimulator") {
  for (int S : {4, 8}) {
    for (int a : {1, 2, 3, 8}) {
      CAPTURE(S);
      CAPTURE(a);
      Config c = base("");
      c.apply_override("objective.dim=" + std::to_string(4 * S));
      c.apply_override("objective.stages=" + std::to_string(S));
      c.apply_override("method.name=paci");
      c.apply_override("method.accumulation=" + std::to_string(a));
      c.apply_override("method.updates=" + std::to_string(40 * S * a));
      const auto o = run(c);
      for (int s = 0; s < S; ++s) {
        const int64_t bound = (S - 1 - s + a - 1) / a;
        CHECK(o.report.measured_crossed[s] <= bound);
        CHECK(o.report.measured_crossed[s] == o.plan.simulation->max_crossed[s]);
      }
      CHECK(o.report.measured_crossed[0] == (S - 1 + a - 1) / a);  // attained
    }
  }
}

TEST_CASE("WeightStashingMakesPipeDreamsBackwardUseItsForwardVersion") {
  // with stashing the gradient of block a is taken at one point (the forwards' versions):
  // on a model whose backward depends on the weights (λ > 0) dropping stashing changes it
  Config pd = base("");
  pd.apply_override("method.name=pipedream");
  Config ns = base("");
  ns.apply_override("method.name=pipedream-nostash");
  const auto a = run(pd), b = run(ns);
  CHECK_FALSE(bit_equal(a.h.iterates.back(), b.h.iterates.back()));
  const Outcome& o = a;
  CHECK(o.plan.simulation->backward_differs == false);
  // PipeDream limits only stage 0, so intermediate stages can see more updates in flight
  // than S − 1 − s (docs/theory.md §4); the executed count is the simulator's
  for (int s = 0; s < 4; ++s) CHECK(o.report.measured_crossed[s] == o.plan.simulation->max_crossed[s]);
  CHECK(o.report.measured_crossed[0] == 3);
  CHECK(o.report.measured_crossed[3] == 0);
}

TEST_CASE("EveryMethodConvergesOnASmallStronglyConvexQuadratic") {
  for (const MethodEntry& m : MethodRegistry::entries()) {
    const std::string name = m.name;
    CAPTURE(name);
    Config c = Config::from_string(R"(
seed = 2
[objective]
name = "quadratic"
generator = "spectrum"
dim = 12
samples = 24
batch_size = 2
stages = 4
mu = 0.5
L = 1.0
[method]
lr = 0.05
updates = 40000
[delay]
name = "zero"
[log]
progress = false
)", "conv.toml");
    c.apply_override("method.name=" + name);
    if (m.kind == MethodKind::DelayDriven) {  // stale reads from its delay model
      c.apply_override("delay.name=uniform");
      c.apply_override("delay.max=14");
    }
    const auto o = run(c);
    CHECK((o.h.iterates.back() - *o.f->constants().w_star).norm() <= 1e-6);
  }
}

TEST_CASE("TimeBudgetRunsTheLargestNumberOfMicroBatchesThatFits") {
  Config c = base("");
  c.apply_override("method.name=pipedream");
  c.apply_override("method.time_budget=123.5");
  const auto o = run(c);
  const auto& sm = dynamic_cast<const ScheduleMethod&>(*o.m);
  CHECK(o.plan.simulation->makespan <= 123.5);
  ExecutorOptions more = sm.options();
  more.params.stages = 4;
  more.time_budget = 0;
  more.params.microbatches = o.plan.schedule->microbatches + 1;
  CHECK(simulate(plan_schedule(more)).makespan > 123.5);
  // the whole timeline ran: every update, simulated time on every event
  CHECK(static_cast<int64_t>(o.h.events.size()) == o.plan.simulation->total_updates);
  CHECK(o.h.events.back().time == doctest::Approx(o.plan.simulation->makespan));
}

TEST_CASE("AdamWMomentumAndCosineScheduleRunAndConverge") {
  for (const char* opt : {"momentum", "adamw"}) {
    CAPTURE(opt);
    Config c = base("");
    c.apply_override("method.name=paci");
    c.apply_override(std::string("method.optimizer=") + opt);
    c.apply_override("method.lr=0.01");
    c.apply_override("method.lr_schedule=cosine");
    c.apply_override("method.warmup=40");
    c.apply_override("method.updates=4000");
    const auto o = run(c);
    Vec g;
    const double f0 = o.f->value(Vec::Zero(o.f->dim()));
    CHECK(o.f->value_grad(o.h.iterates.back(), g) < 0.7 * f0);
  }
}

// RunObserver::records_update: an observer that records only every 7th update's details gets
// ‖z − w‖ there (the value a recording observer gets) and NaN elsewhere, and nothing else of
// the run changes — the iterates, gradient norms and batch losses bit for bit.
class SparseDetails final : public RunObserver {
 public:
  History h;
  void on_start(const Vec& w0) override { h.on_start(w0); }
  void on_update(const UpdateEvent& e, ConstVecRef delta, const Vec& w) override { h.on_update(e, delta, w); }
  bool should_stop() const override { return false; }
  bool records_update(int64_t k) override { return k % 7 == 0; }
};

TEST_CASE("ScheduleExecutorComputesTheStaleDistanceOnlyWhereRecorded") {
  for (const char* overrides : {"method.name=pipedream", "method.name=1f1b-flush method.accumulation=1",
                                "method.name=gpipe", "method.name=pipemare", "method.name=zb-h1",
                                "method.name=pipedream method.optimizer=momentum objective.grad_noise_std=0.1", "method.name=localsgd"}) {
    CAPTURE(overrides);
    Config cfg = base("");
    std::string rest = overrides;
    for (size_t at; !rest.empty(); rest = at == std::string::npos ? "" : rest.substr(at + 1)) {
      at = rest.find(' ');
      cfg.apply_override(rest.substr(0, at));
    }
    auto f = make_objective(cfg, BackendKind::Cpu);
    auto m = make_method(cfg, *f);
    History all_h;
    SparseDetails sparse;
    Vec w_all = Vec::Zero(f->dim()), w = w_all;
    m->run(*f, m->plan(*f), w_all, all_h);
    m->run(*f, m->plan(*f), w, sparse);
    REQUIRE(sparse.h.events.size() == all_h.events.size());
    CHECK(bit_equal(w, w_all));
    for (size_t i = 0; i < all_h.events.size(); ++i) {
      const UpdateEvent &a = all_h.events[i], &b = sparse.h.events[i];
      CHECK(bit_equal(sparse.h.iterates[i + 1], all_h.iterates[i + 1]));
      CHECK(std::memcmp(&a.grad_norm, &b.grad_norm, sizeof(double)) == 0);
      CHECK(((std::isnan(a.batch_loss) && std::isnan(b.batch_loss)) || a.batch_loss == b.batch_loss));
      if (b.k % 7 == 0) CHECK(std::memcmp(&a.stale_dist, &b.stale_dist, sizeof(double)) == 0);
      else CHECK(std::isnan(b.stale_dist));
    }
  }
}

TEST_SUITE_END();
