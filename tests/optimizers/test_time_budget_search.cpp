// method.time_budget: the planner's search (extrapolate, gallop, bisect) finds the largest
// micro-batch count whose makespan fits the budget — the value a plain scan over every count
// finds — for asynchronous and flushing schedules, with and without stage-cost jitter — and
// the shared plan's simulation is the plan's.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "optimizers/schedule_planner.hpp"

TEST_SUITE_BEGIN("optimizers");

using namespace stale;

namespace {
double makespan_of(PlanOptions opt, int64_t microbatches) {
  opt.time_budget = 0;
  opt.params.microbatches = static_cast<int>(microbatches);
  return simulate(plan_schedule(opt), opt.costs, SimOptions{}).makespan;
}
}  // namespace

TEST_CASE("TimeBudgetSearchFindsTheLargestFittingMicrobatchCount") {
  struct Case {
    const char* schedule;
    int stages;
    double budget;
    double jitter;
  };
  for (const Case& c : {Case{"pipedream", 4, 57, 0}, Case{"pipedream", 8, 333, 0}, Case{"pipedream", 8, 333, 0.3},
                        Case{"paci", 4, 120, 0}, Case{"gpipe", 4, 140, 0}, Case{"1f1b-flush", 8, 250, 0.2},
                        Case{"zb-h1", 4, 90, 0}, Case{"2bw", 4, 75, 0}}) {
    CAPTURE(c.schedule);
    CAPTURE(c.stages);
    PlanOptions opt;
    opt.schedule = c.schedule;
    opt.params.stages = c.stages;
    if (c.jitter > 0) opt.costs.set("jitter", std::to_string(c.jitter));
    opt.time_budget = c.budget;
    const Schedule planned = plan_schedule(opt);
    // flushing schedules grow by whole mini-batches of `accumulation` micro-batches
    const int64_t unit = schedule_info(c.schedule).flush ? planned.accumulation : 1;
    int64_t best = unit;
    while (makespan_of(opt, best + unit) <= c.budget) best += unit;
    CHECK(planned.microbatches == best);
    CHECK(makespan_of(opt, best) <= c.budget);
    // the plan runs share: the same schedule, and a simulation (the search's own of its first
    // guess when that was the answer) equal to simulating the plan afresh with the same options
    SimOptions so;
    so.delay_table = true;
    const PlannedSchedule shared = planned_schedule(opt, so);
    CHECK(shared.schedule->microbatches == best);
    const SimResult fresh = simulate(*shared.schedule, opt.costs, so);
    CHECK(shared.simulation->makespan == fresh.makespan);
    CHECK(shared.simulation->start == fresh.start);
    CHECK(shared.simulation->end == fresh.end);
    CHECK(shared.simulation->busy == fresh.busy);
    CHECK(shared.simulation->forward_read == fresh.forward_read);
    CHECK(shared.simulation->delay_table == fresh.delay_table);
    CHECK(shared.simulation->updates.size() == fresh.updates.size());
    CHECK(shared.simulation->peak_versions == fresh.peak_versions);
  }
}

// The plan cache's key is the typed options (defaulted ==): equal options share one plan,
// and any field that differs — each of the schedule parameters, the costs, K, the budget, the
// simulation options — gets its own
TEST_CASE("ThePlanCacheSharesEqualOptionsAndTellsEveryFieldApart") {
  PlanOptions opt;
  opt.schedule = "pipedream";
  opt.params.stages = 4;
  opt.updates = 64;
  SimOptions so;
  const PlannedSchedule a = planned_schedule(opt, so);
  CHECK(planned_schedule(opt, so).schedule == a.schedule);  // the same object: shared
  std::vector<std::pair<std::string, std::function<void(PlanOptions&, SimOptions&)>>> changes = {
      {"stages", [](PlanOptions& o, SimOptions&) { o.params.stages = 2; }},
      {"updates", [](PlanOptions& o, SimOptions&) { o.updates = 96; }},
      {"costs", [](PlanOptions& o, SimOptions&) { o.costs.set("forward", "2"); }},
      {"latency", [](PlanOptions& o, SimOptions&) { o.costs.set("latency", "0.5"); }},
      {"steady_margin", [](PlanOptions&, SimOptions& s) { s.steady_margin = 1; }},
      {"delay_table", [](PlanOptions&, SimOptions& s) { s.delay_table = true; }},
  };
  for (auto& [what, change] : changes) {
    CAPTURE(what);
    PlanOptions o = opt;
    SimOptions s = so;
    change(o, s);
    const bool same = o == opt && s == so;
    CHECK_FALSE(same);
    const PlannedSchedule b = planned_schedule(o, s);
    CHECK(b.simulation != a.simulation);
  }
}

TEST_SUITE_END();
