#pragma once
// Checkpoint and resume of a run (issue 12), alone or as a column of a lockstep ensemble. While a run writes RUN.h5.partial, every
// log.flush_seconds (and when SIGINT/SIGTERM stops it) the method hands its whole loop state
// to the metrics observer at an update boundary, which adds its own (running sums, cadence
// counters, the tracker's incremental f and ∇f) and the run log's (rows written, delay
// summary): one StateBag, written into the .partial (RunLog::write_checkpoint).
// `stale run --resume RUN.h5.partial` rebuilds objective, method and plan from the stored
// config, copies the rows up to the checkpoint, restores every state and continues; the
// finished file equals an uninterrupted run's bit for bit but for wall-clock values.
//
// An ensemble's loop checkpoints all its running columns at one update, each into its own
// .partial as that run alone would; run_ensemble_experiment continues them together.
//
// Who saves what: rpd.cpp, sgd.cpp, bcd.cpp (LoopState), executor_state.* (every schedule
// method), update_rule.* (velocity, moments), sampling.hpp and rng.hpp (streams),
// metrics_recorder.* (sums), checkpoint_policy.* (when, and the bag's layout),
// objective.hpp (trackers), run_log.* (rows).
#include <memory>
#include <string>

#include "src/run/runner.hpp"

namespace stale {

// RUN.h5.partial holds a checkpoint of exactly this config (the sweep's test before resuming)
bool has_checkpoint_of(const std::string& run_path, const Config& cfg);

// the sweep's rule for one grid point (and `stale run --continue`): continue from
// RUN.h5.partial when it holds a checkpoint of this config, else run afresh (replacing a
// .partial without a checkpoint; one with a checkpoint of another config is refused unless
// options.overwrite); a finished RUN.h5 is never touched (the sweep skips it before)
RunResult run_or_resume(const Config& cfg, const std::string& run_path, RunOptions options);

}  // namespace stale
