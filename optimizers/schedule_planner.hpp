#pragma once
// The planner of the schedule methods: config → schedule parameters and cost model → the plan
// (the schedule with its micro-batch count resolved, and its simulation), shared between the
// runs of one process. The executor (schedule_executor.hpp) only runs a plan it is given;
// rpd's schedule replay (delay.name = "schedule", method.time_budget) plans here too.
//
// One plan per run [issue 10]: K is method.updates, or under method.time_budget every update
// of the micro-batches whose timeline fits; a schedule that cannot reach K is a config error
// naming method.microbatches.
#include <memory>
#include <string>
#include <vector>

#include "optimizers/method.hpp"
#include "src/pipeline/cost_model.hpp"
#include "src/pipeline/schedule.hpp"
#include "src/pipeline/simulator.hpp"
#include "src/pipeline/state_costs.hpp"

namespace stale {

// Everything a plan depends on: the schedule and its parameters, how ops are timed, and K.
struct PlanOptions {
  std::string schedule = "pipedream";
  ScheduleParams params;        // stages = devices; microbatches resolved by plan_schedule
  CostModel costs;
  int64_t updates = 0;          // K = method.updates
  double time_budget = 0;       // > 0: run every micro-batch whose timeline fits
  // op durations that depend on the run's state (costs.coupling, costs.coupling_scale): the
  // ops then come from a coupled timeline (src/pipeline/coupled_timeline.hpp) instead of
  // the plan's simulation; `coupled` = true with Coupling::None takes that path with
  // state-independent costs (it equals the precomputed one bit for bit, tested)
  Coupling coupling = Coupling::None;
  double coupling_scale = 1.0;
  bool coupled = false;

  // objective.stages, method.microbatches/accumulation/replicas/local_steps/chunks,
  // method.updates/time_budget and [costs] of a config, for the named schedule
  static PlanOptions from_config(const Config& cfg, const std::string& schedule);
  // every field, so that a field added here is part of the plan cache's key without an edit there
  bool operator==(const PlanOptions&) const = default;
};

// [costs] of a config as a cost model (costs.seed = −1 takes the base seed), and as the
// settings text it is parsed from
CostModel cost_model_from_config(const Config& cfg);
std::vector<std::string> cost_settings(const Config& cfg);

// The schedule with its micro-batch count resolved: the largest M whose makespan fits
// time_budget, else the smallest M whose updates reach K (or params.microbatches if set).
Schedule plan_schedule(const PlanOptions& opt);

// plan_schedule and its simulation, shared: runs of an in-process sweep that differ only in
// γ, the seed of their data or the update rule plan the same schedule once (a small cache of
// the most recent plans; planning an E4 run at S = 128 costs more than running it). Two
// threads planning the same schedule at once keep one plan: the second takes the first's.
struct PlannedSchedule {
  std::shared_ptr<const Schedule> schedule;
  std::shared_ptr<const SimResult> simulation;
};
PlannedSchedule planned_schedule(const PlanOptions& opt, const SimOptions& sim_options);

// The run plan of a schedule method over f's blocks (virtual stages): the shared plan, K and
// the delay bound and mean it implies.
RunPlan plan_schedule_run(const PlanOptions& opt, const Objective& f);

}  // namespace stale
