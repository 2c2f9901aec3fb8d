#pragma once
// A method runs K block updates over an objective and reports each update to an observer
// (the runner's metrics / run log / progress). Hyperparameters come from the config at
// construction; per-run state (version store, sampler streams) is built inside run(), so a
// Method object can run twice with identical results.
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "objectives/objective.hpp"
#include "optimizers/update_rule.hpp"
#include "src/pipeline/delay_moments.hpp"

namespace stale {

class Config;
class StateBag;
struct Schedule;
struct SimResult;

// What a run will do, decided once before it starts (issue "one plan per run"): every
// consumer — the method's loop, the metrics observer, the run file, progress, the size of the
// delay table, the bound — reads K and δ from here, never from method.updates.
struct RunPlan {
  int64_t updates = 0;           // K: block updates the run performs (unless it diverges)
  // δ of docs/theory.md §3: the largest delay any read of the run has, warm-up and drain
  // included (fresh reads 0; a schedule: its simulated table's maximum; rpd: the largest delay
  // its model draws in K updates). 0 when only the run can tell (coupled timelines): then the
  // running maximum measured along it is δ — bound_delay() is the one rule.
  int64_t delay_bound = 0;
  int64_t delay_max_steady = 0;   // the steady-state maximum (schedules: the paper's S² − S/2), reports
  double delay_mean_steady = 0;   // the steady-state mean delay, reports
  std::string delay_name = "zero";
  // what the delay model records beyond its name (DelayModel::run_attributes): /theory attributes
  std::vector<std::pair<std::string, int64_t>> delay_attributes;
  // schedule-driven methods and rpd over a schedule: the planned schedule and its simulation
  std::shared_ptr<const Schedule> schedule;
  std::shared_ptr<const SimResult> simulation;
  std::string note;              // how K was derived when it is not method.updates
  bool executes_schedule = false;  // the method runs the schedule's ops (the run file gets /schedule)
  // its updates carry the simulated time (/metrics/time), which is 0 at k = 0, before any op
  bool clock = false;

  int64_t bound_delay(int64_t measured) const;
};

// δ of the bound (docs/theory.md §3) once the run has read delays up to `measured` (the largest
// so far): the planned δ, or the measured one where the plan could not know it (a coupled
// timeline plans 0). The one rule: the metrics observer's rows and /theory both ask it.
inline int64_t bound_delay(int64_t planned, int64_t measured) { return planned > measured ? planned : measured; }
inline int64_t RunPlan::bound_delay(int64_t measured) const { return stale::bound_delay(delay_bound, measured); }

// What a run measured beyond its metrics; the runner writes it into the run file.
struct RunReport {
  // per block: the most updates of the block one micro-batch saw between its F and its B,
  // counted while executing (schedule-driven methods; compared with the simulator and PACI's bound)
  std::vector<int64_t> measured_crossed;
  // the delay distribution along the run in windows of k (schedule-driven methods with one
  // replica; empty otherwise): /delay_moments
  DelayMoments delay_moments;
  // the timeline the run made as it went (costs.coupling: durations that depend on the
  // run's state); null when the plan's simulation is the timeline
  std::shared_ptr<const SimResult> simulation;
};

struct UpdateEvent {
  int64_t k = 0;            // block updates done, this one included
  int stage = -1;           // updated block; −1 = all blocks at once (a full SGD step)
  int batch = -1;           // mini-batch the gradient was taken on
  double grad_norm = 0;     // ‖gradient used‖ of the updated block(s): feeds the running G
  double stale_dist = 0;    // ‖w_k − z_k‖, distance of the read point from the current iterate
  const std::vector<int64_t>* delays = nullptr;  // per-block delays of this update (stale methods)
  double time = -1;         // simulated time at the update's end (schedule-driven methods)
  double batch_loss = std::numeric_limits<double>::quiet_NaN();  // loss at the last stage's forward
                                                                 // of the update's micro-batch
};

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void on_start(const Vec& w0) = 0;
  // `delta` is the change of block e.stage (size d_s), or of all of w when e.stage = −1;
  // `w` is the iterate after the update
  virtual void on_update(const UpdateEvent& e, ConstVecRef delta, const Vec& w) = 0;
  // a lockstep ensemble announces the change of every column before it reports any
  // (on_update follows with the same event and delta), so that trackers shared between the
  // columns apply all P changes as one product
  virtual void prepare_update(const UpdateEvent& e, ConstVecRef delta) {
    (void)e;
    (void)delta;
  }
  // a diverged run (NaN/inf) stops early and is recorded as such; so does an interrupted one
  virtual bool should_stop() const = 0;
  // whether the details of update k's event (UpdateEvent::stale_dist, an O(d) distance) will be
  // recorded — in a row or in a checkpoint: a method asks before update k and may leave them
  // out (NaN) when not. It must compute them anyway when the update's gradient is not finite
  // (a divergence is recorded at once). The observer counts on the answer: asked, it defers
  // what it would otherwise record at k unannounced (a stop signal, a timed checkpoint) to a
  // later update. Default: always.
  virtual bool records_update(int64_t k) {
    (void)k;
    return true;
  }

  // ---- checkpoint and resume (src/run/checkpoint.hpp). A method that can resume calls
  // checkpoint_due() at each update boundary, after on_update, and when it says so hands its
  // whole loop state to checkpoint(). resume_state() is the state a resumed run continues
  // from (null: start afresh with on_start); a resumed method restores it and skips on_start.
  virtual bool checkpoint_due() const { return false; }
  // the bag is handed over (moved, not copied: a large model's state is gigabytes)
  virtual void checkpoint(StateBag&& /*method_state*/) {}
  virtual const StateBag* resume_state() const { return nullptr; }

  // the end of a method's update: report it, then hand over a checkpoint if one is due
  // (`save` fills the bag with the loop's whole state)
  template <class Save>
  void update_done(const UpdateEvent& e, ConstVecRef delta, const Vec& w, Save&& save) {
    on_update(e, delta, w);
    if (checkpoint_due()) {
      StateBag b;
      save(b);
      checkpoint(std::move(b));
    }
  }
};

class Method {
 public:
  virtual ~Method() = default;
  virtual std::string name() const = 0;
  // work that depends on the objective but not on the run (planning and simulating a
  // schedule): the plan every consumer reads. Config errors (a schedule that cannot reach K)
  // surface here, before any file exists.
  virtual RunPlan plan(const Objective& f) const = 0;
  // run from w (updated in place) until plan.updates block updates are done or the observer
  // stops it; `plan` is this method's plan for f
  virtual RunReport run(const Objective& f, const RunPlan& plan, Vec& w, RunObserver& obs) const = 0;
  // plan and run in one call (tests, benchmarks)
  RunReport run(const Objective& f, Vec& w, RunObserver& obs) const { return run(f, plan(f), w, obs); }
  // δ of the plan for f (tests)
  int64_t delay_bound(const Objective& f) const { return plan(f).delay_bound; }

  // ---- lockstep ensembles (docs/design.md "Ensembles"): P runs of this method that differ
  // only in their step size advance together, so that each objective call is one product
  // over P columns instead of P. columns[p] is run p's method (this one is columns[0]; every
  // column has this method's type and plan), w[p] its iterate (updated in place), obs[p] its
  // observer. A column whose observer stops (a diverged run) is frozen where its separate run
  // would stop; the others go on. Column p ends as its separate run would, to rounding (the
  // products sum in another order); with P = 1 bit for bit.
  virtual bool runs_ensembles() const { return false; }
  virtual std::vector<RunReport> run_ensemble(const Objective& f, const RunPlan& plan,
                                              const std::vector<const Method*>& columns, std::vector<Vec>& w,
                                              const std::vector<RunObserver*>& obs) const;
};

// hyperparameters every method shares (docs/theory.md §2 notation)
struct MethodParams {
  double lr = 0.01;           // γ
  int64_t updates = 0;        // K, in block updates
  uint64_t seed = 0;
  double grad_noise_std = 0;  // additive Gaussian noise on every block gradient
  bool cyclic_batches = false;
  UpdateRuleParams rule;      // sgd | momentum | adamw, per block
  LrSchedule lr_schedule;     // γ_k over block updates
  static MethodParams from_config(const Config& cfg);
};

// RPD tied to a schedule: update k updates block stages[k] on batch batches[k] (empty: RPD's
// uniform draws) and ends at simulated time times[k] (empty: no simulated clock)
struct RpdOrder {
  std::vector<int> stages, batches;
  std::vector<double> times;
  std::shared_ptr<const Schedule> schedule;  // the schedule replayed or timed (for the plan)
  std::shared_ptr<const SimResult> simulation;
};

std::unique_ptr<Method> make_method(const Config& cfg, const Objective& f);

class DelayModel;
// RPD over a given delay model and (optionally) a given stage, batch and time order: the
// replay of an external trajectory (tests/reference's golden files)
std::unique_ptr<Method> make_rpd(const MethodParams& p, std::shared_ptr<const DelayModel> delays, RpdOrder order);

}  // namespace stale
