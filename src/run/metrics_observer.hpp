#pragma once
// The one RunObserver a method sees, composed of one part per concern:
//
//   MetricsRecorder   the series, the running mean, G, the bound (metrics_recorder.hpp), on
//                     the LogCadence (log_cadence.hpp: log.every, iterates, exact mean)
//   DivergenceCheck   non-finite values, f − f_* far above its start (divergence_check.hpp)
//   StopPolicy        signals and stop_after (stop_policy.hpp)
//   CheckpointPolicy  log flushes and checkpoints at update boundaries (checkpoint_policy.hpp)
//   progress          a callback on every recorded row (RunSession's ProgressLine)
//
// The parts do not know each other; this class holds the order they are asked in, which is
// part of what the run file records: at each update the recorder advances (sums, tracker,
// evaluation on the cadence), the divergence check reads what it evaluated, a row is recorded
// on the cadence or at a divergence, then the log's flush and the stop are decided for the
// boundary the method checkpoints at.
#include <functional>
#include <memory>
#include <string>

#include "optimizers/method.hpp"
#include "src/io/run_log.hpp"
#include "src/run/checkpoint_policy.hpp"
#include "src/run/divergence_check.hpp"
#include "src/run/metrics_options.hpp"
#include "src/run/metrics_recorder.hpp"
#include "src/run/stop_policy.hpp"

namespace stale {

class MetricsObserver final : public RunObserver {
 public:
  // log may be null (metrics computed, nothing written, no checkpoints)
  MetricsObserver(const Objective& f, RunLog* log, MetricsOptions opt,
                  std::function<void(const MetricsRow&)> progress = {});

  // track f and ∇f with `t` instead of the objective's own tracker (an ensemble column's
  // view of the ensemble's tracker); call before on_start, or after restore (a resumed
  // column: `t` then takes the checkpoint's tracker state)
  void use_tracker(std::unique_ptr<IterateTracker> t) { metrics_.use_tracker(std::move(t)); }
  void on_start(const Vec& w0) override;
  void on_update(const UpdateEvent& e, ConstVecRef delta, const Vec& w) override;
  void prepare_update(const UpdateEvent& e, ConstVecRef delta) override { metrics_.prepare(e, delta); }
  // diverged, or interrupted: a SIGINT/SIGTERM (src/run/interrupt.hpp) seen at the last update
  bool should_stop() const override { return divergence_.diverged() || stop_.stopping(); }
  // update k's row or checkpoint holds its event: on the cadence, at every update with the
  // exact mean (its divergence check), at stop_after or a stop already requested, and when a
  // timed checkpoint is due. A stop or a checkpoint that arrives during an update the method
  // was told is not recorded waits for the next update (on_update), so that no row or
  // checkpoint ever holds a stale_dist the method left out.
  bool records_update(int64_t k) override;
  bool interrupted() const { return stop_.stopping() && !divergence_.diverged(); }
  // checkpoints (src/run/checkpoint.hpp): due every log.flush_seconds and when interrupted
  bool checkpoint_due() const override { return checkpoints_.due(divergence_.diverged(), stop_.stopping()); }
  void checkpoint(StateBag&& method_state) override;
  const StateBag* resume_state() const override { return resumed_ ? &resume_method_ : nullptr; }
  // continue from a checkpoint (method/, metrics/, log/): this observer's state now, the
  // method's through resume_state()
  void restore(const StateBag& checkpoint);
  // log the final state if the last update was not on the cadence
  void finish(const Vec& w);

  // the series and the numbers of the run so far
  const MetricsRecorder& metrics() const { return metrics_; }
  const MetricsRow& last() const { return metrics_.last(); }
  bool diverged() const { return divergence_.diverged(); }
  // why the run was declared diverged (empty when it was not)
  const std::string& divergence_reason() const { return divergence_.reason(); }
  bool resumed() const { return resumed_; }

 private:
  void report(const MetricsRow& row) {
    if (progress_) progress_(row);
  }

  MetricsRecorder metrics_;
  DivergenceCheck divergence_;
  StopPolicy stop_;
  CheckpointPolicy checkpoints_;
  std::function<void(const MetricsRow&)> progress_;
  bool resumed_ = false;
  StateBag resume_method_;
  int64_t asked_k_ = -1;       // the update records_update last answered for,
  bool asked_records_ = true;  // and its answer
};

}  // namespace stale
