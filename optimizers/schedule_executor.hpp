#pragma once
// Executes a pipeline schedule's op stream over an objective's stage-wise forward/backward
// (docs/design.md "The one idea": every method is a schedule plus an update rule over per-block
// weight versions). The schedule says which op runs when; the simulator gives the serial
// order and the simulated clock; this executor does the arithmetic:
//
//   F(j, mb):  a_{j+1} = stage_forward_j(a_j, w^(j)_read)       w^(j)_read = block j now
//                                                               (PipeMare: extrapolated)
//   B(j, mb):  (g_j, δ_j) = stage_backward_j(δ_{j+1}, w^(j)_used, cache)
//              w^(j)_used = w^(j)_read with weight stashing (PipeDream, 2BW), else block j
//              now (PipeDream without stashing, PACI, PipeMare)
//   update:    on the op flagged Update, block j steps its own optimizer with the mean of
//              the gradients accumulated since its last step (+ optional Gaussian noise)
//   average:   on the op flagged Average (LocalSGD), block j is averaged over the replicas
//
// The ops come from an OpSource (src/pipeline/op_source.hpp): the serial order of the plan's
// simulation, or — when durations depend on the run's state (costs.coupling) — a coupled
// timeline that decides which op starts next as the run proceeds and times each op from
// what the executor measured while running it.
//
// Which version an op reads is a device-local fact (only block j's device updates block j),
// so executing ops in the simulator's serial order is exact. Block updates are numbered
// k = 0, 1, … in that order; metrics see the model after each update (the replica average
// for LocalSGD) and the simulated time at the update's end.
#include <memory>
#include <string>
#include <vector>

#include "optimizers/method.hpp"
#include "optimizers/update_rule.hpp"
#include "src/pipeline/cost_model.hpp"
#include "src/pipeline/schedule.hpp"
#include "src/pipeline/simulator.hpp"
#include "src/pipeline/state_costs.hpp"

namespace stale {

struct ExecutorOptions {
  std::string schedule = "pipedream";
  ScheduleParams params;        // stages = devices; microbatches resolved by plan_microbatches
  CostModel costs;
  bool stash = true;            // override the schedule's stashing (pipedream-nostash: false)
  bool predict = false;         // PipeMare weight prediction
  double predict_decay = 0.9;   // EMA of a block's per-update change (PipeMare's velocity)
  MethodParams method;          // lr, updates (K), seed, noise, batch order
  UpdateRuleParams rule;
  std::string lr_schedule = "constant";
  double lr_min = 0;
  int64_t warmup = 0;
  double time_budget = 0;       // > 0: run every micro-batch whose timeline fits
  std::string costs_key;        // the [costs] settings as text: identifies `costs` in a plan cache
  // op durations that depend on the run's state (costs.coupling, costs.coupling_scale): the
  // ops then come from a coupled timeline (src/pipeline/coupled_timeline.hpp) instead of
  // the plan's simulation; `coupled` = true with Coupling::None takes that path with
  // state-independent costs (it equals the precomputed one bit for bit, tested)
  Coupling coupling = Coupling::None;
  double coupling_scale = 1.0;
  bool coupled = false;
  int64_t moment_window = 0;    // log.delay_window: updates per window of /delay_moments (0: K/50)

  // method.*, [costs] and objective.stages of a config, for the named schedule
  static ExecutorOptions from_config(const Config& cfg, const std::string& schedule);
};

// [costs] of a config as a cost model (costs.seed = −1 takes the base seed), and as the
// settings text it is parsed from
CostModel cost_model_from_config(const Config& cfg);
std::vector<std::string> cost_settings(const Config& cfg);

// The schedule with its micro-batch count resolved: the largest M whose makespan fits
// time_budget, else the smallest M whose updates reach K (or params.microbatches if set).
Schedule plan_schedule(const ExecutorOptions& opt);

// plan_schedule and its simulation, shared: runs of an in-process sweep that differ only in
// γ, the seed of their data or the update rule plan the same schedule once (a small cache of
// the most recent plans; planning an E4 run at S = 128 costs more than running it)
struct PlannedSchedule {
  std::shared_ptr<const Schedule> schedule;
  std::shared_ptr<const SimResult> simulation;
};
PlannedSchedule planned_schedule(const ExecutorOptions& opt, const SimOptions& sim_options);

class ScheduleMethod final : public Method {
 public:
  ScheduleMethod(std::string name, ExecutorOptions opt) : name_(std::move(name)), opt_(std::move(opt)) {}
  std::string name() const override { return name_; }
  // plans the schedule for f's blocks (virtual stages) and simulates it; K is every update
  // the schedule performs under a time budget, else method.updates — and a schedule that
  // cannot reach it (method.microbatches too small) is a config error
  RunPlan plan(const Objective& f) const override;
  RunReport run(const Objective& f, const RunPlan& plan, Vec& w, RunObserver& obs) const override;
  using Method::run;
  // the loop of run() over P columns (schedule_ensemble.cpp)
  // (not under costs.coupling: each column's timeline would follow its own state)
  bool runs_ensembles() const override { return !opt_.coupled; }
  std::vector<RunReport> run_ensemble(const Objective& f, const RunPlan& plan, const std::vector<const Method*>& columns,
                                      std::vector<Vec>& w, const std::vector<RunObserver*>& obs) const override;
  const ExecutorOptions& options() const { return opt_; }

 private:
  std::string name_;
  ExecutorOptions opt_;
};

}  // namespace stale
