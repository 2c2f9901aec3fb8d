#pragma once
// A method runs K block updates over an objective and reports each update to an observer
// (the runner's metrics / run log / progress). Hyperparameters come from the config at
// construction; per-run state (version store, sampler streams) is built inside run(), so a
// Method object can run twice with identical results.
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "objectives/objective.hpp"
#include "optimizers/update_rule.hpp"

namespace stale {

class Config;
class RunLog;

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
  // a diverged run (NaN/inf) stops early and is recorded as such
  virtual bool should_stop() const = 0;
};

class Method {
 public:
  virtual ~Method() = default;
  virtual std::string name() const = 0;
  // work that depends on the objective but not on the run (planning and simulating a
  // schedule); the runner calls it before asking for delay_bound()
  virtual void prepare(const Objective& f) const {}
  // run from w (updated in place) until K block updates are done or the observer stops it
  virtual void run(const Objective& f, Vec& w, RunObserver& obs) const = 0;
  // δ the bound of theory.md §3 is evaluated with (0 for fresh-read methods)
  virtual int64_t delay_bound() const { return 0; }
  // what the method measured beyond the metrics (schedule, crossing counts) into the run file
  virtual void write_report(RunLog& log) const {}
  // the delay model's name and steady-state mean, for the run file
  virtual std::string delay_name() const { return "zero"; }
  virtual double delay_mean() const { return 0.0; }
};

// hyperparameters every method shares (theory.md §2 notation)
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
};

std::unique_ptr<Method> make_method(const Config& cfg, const Objective& f);

}  // namespace stale
