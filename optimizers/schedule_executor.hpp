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
// The plan comes from the planner (schedule_planner.hpp); the executor keeps no state between
// runs: a run's state lives in its ExecutorState (executor_state.hpp). There is one loop, over
// the P columns of a lockstep ensemble (docs/design.md "Ensembles"): a lone run is one column.
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
#include "optimizers/schedule_planner.hpp"
#include "optimizers/update_rule.hpp"

namespace stale {

// What a run of a plan reads beside the plan: the update rule and the stashing and prediction
// of the method. The plan's own options come first (schedule_planner.hpp), so that one
// config translation yields both.
struct ExecutorOptions : PlanOptions {
  bool stash = true;            // override the schedule's stashing (pipedream-nostash: false)
  bool predict = false;         // PipeMare weight prediction
  double predict_decay = 0.9;   // EMA of a block's per-update change (PipeMare's velocity)
  MethodParams method;          // lr, its schedule, update rule, seed, noise, batch order (K is the plan's)
  int64_t moment_window = 0;    // log.delay_window: updates per window of /delay_moments (0: K/50)

  // PlanOptions::from_config with the method.* the method factory already parsed
  static ExecutorOptions from_config(const Config& cfg, const std::string& schedule, MethodParams method);
  // the same, parsing method.* here (callers outside the method registry)
  static ExecutorOptions from_config(const Config& cfg, const std::string& schedule);
};

// What the loop sets up before its first op.
int64_t delay_moment_window(const ExecutorOptions& opt, const RunPlan& plan);  // updates per window
LrSchedule executor_lr_schedule(const ExecutorOptions& opt, const RunPlan& plan);  // over the plan's K

class ScheduleMethod final : public Method {
 public:
  ScheduleMethod(std::string name, ExecutorOptions opt) : name_(std::move(name)), opt_(std::move(opt)) {}
  std::string name() const override { return name_; }
  // the planner's run plan (plan_schedule_run)
  RunPlan plan(const Objective& f) const override;
  // a lone run: the loop below with one column
  RunReport run(const Objective& f, const RunPlan& plan, Vec& w, RunObserver& obs) const override;
  using Method::run;
  // the one loop, over P columns (a coupled timeline runs one column: each column's timeline
  // would follow its own state)
  bool runs_ensembles() const override { return !opt_.coupled; }
  std::vector<RunReport> run_ensemble(const Objective& f, const RunPlan& plan, const std::vector<const Method*>& columns,
                                      std::vector<Vec>& w, const std::vector<RunObserver*>& obs) const override;
  const ExecutorOptions& options() const { return opt_; }

 private:
  std::string name_;
  ExecutorOptions opt_;
};

}  // namespace stale
