#pragma once
// When a run's log flushes and a checkpoint is written (src/run/checkpoint.hpp): at the update
// boundary after the log says a flush is due (every log.flush_seconds, or sooner when its
// buffers fill), and once when the run stops. A checkpoint is the method's loop state beside
// the metrics' ("method", "metrics"), written with the log's own into the .partial; the flush
// goes with it. A flush the method did not take as a checkpoint (a method that cannot resume)
// happens at the next update. Without a log (nothing to write to) none is ever due.
#include <cstdint>

#include "src/core/state_bag.hpp"
#include "src/io/run_log.hpp"

namespace stale {

class CheckpointPolicy {
 public:
  explicit CheckpointPolicy(RunLog* log) : log_(log) {}

  // after each update: the flush the last boundary left pending now, and whether one is due at
  // this one. A checkpoint stores the update's event: one due during an update without its
  // details (`details` false: MetricsObserver::records_update) waits for the next update
  void after_update(bool details = true) {
    if (!log_) return;
    if (flush_pending_) log_->flush_now();
    flush_pending_ = details && log_->flush_due();
  }
  // the log asks for a flush (a checkpoint would be due at the next boundary)
  bool flush_due() const { return log_ && log_->flush_due(); }
  // at an update boundary: a flush is due, or the run is stopping and has not checkpointed since
  // (a diverged run has nothing to continue)
  bool due(bool diverged, bool stopping) const {
    return log_ && !diverged && (flush_pending_ || (stopping && !stop_checkpointed_));
  }
  bool writes() const { return log_ != nullptr; }
  // the checkpoint at update k: the method's state and the metrics' (MetricsRecorder::save)
  void write(StateBag&& method_state, StateBag&& metrics_state, int64_t k, bool stopping);

 private:
  RunLog* log_;
  bool flush_pending_ = false;  // a flush is due; the method's checkpoint (or the next update) does it
  bool stop_checkpointed_ = false;
};

}  // namespace stale
