#pragma once
// One run: config → objective, method, run file. Everything that can be wrong with the
// input is checked before the run file is created, so a bad config leaves no file.
#include <cmath>
#include <string>

#include <memory>
#include <vector>

#include "objectives/objective.hpp"
#include "src/config/config.hpp"
#include "src/core/types.hpp"
#include "src/io/run_log.hpp"

namespace stale {

struct RunResult {
  std::string path;
  std::string status;  // ok | diverged | interrupted (the .partial stays, resumable)
  std::string message;  // why it diverged
  MetricsRow last;
  double grad_norm_sq_mean = 0;
  double G = 0;
  double wall_seconds = 0;
  int64_t updates = 0;
  int64_t delta = 0;  // δ of the bound: /theory/delta (docs/theory.md §3)
  bool lr_within_1_over_L = false;  // γ ≤ 1/L, the bound's step-size condition: /theory/lr_within_1_over_L
  double L = NAN;                   // the L the bound used (/theory/L)
  bool L_estimated = false;         // that L is the estimate along the run, not certified (/theory/L_source)
  Vec final_w;  // the last iterate (equal, bit for bit, to the file's last /iterates row)
  std::vector<SuboptLow> subopt_lows;  // the logged rows' new lows of f − f_* (MetricsObserver)
  bool resumed = false;                // continued from a checkpoint: subopt_lows start there
};

// out_path empty → log.out, else runs/<config stem>.h5
// "PATH: status=ok k=… f-f*=… mean|grad f|^2=… bound=… delta=… wall=…s": what `stale run` prints and
// a sweep's log holds for a finished run; "bound=… (estimated L=…)" when the bound's L is the
// estimate along the run (a lower estimate of L: the bound is not certified)
std::string run_summary_line(const RunResult& r);

// log.out, else runs/<config file's stem>[_<override>…].h5 (overrides as given on the command
// line, each key=value with characters outside [A-Za-z0-9.=-] as '-'; a 12-digit hash of them
// when that would pass 96 characters)
std::string default_run_path(const Config& cfg, const std::vector<std::string>& overrides = {});
// Refuses a run path that names a folder (an existing one, or one ending in '/'), before any
// computing; `source` says where it came from ("--out", "log.out") for the one-line error.
void check_run_path(const std::string& path, const std::string& source);
// The checks of a run's config before anything is built, allocated or created, in this order:
// the unread-key rule (not for a resumed run: its config passed them when it started), the
// rules between keys, memory and disk (disk when `path` names the run file). Every way a run
// starts calls this one function — a run file, an ensemble's column, a run kept in memory —
// so that no way of starting a run skips a check.
void check_run_config(const Config& cfg, const std::string& path, bool resumed = false);
// RUN.h5 for RUN.h5.partial (and for RUN.h5 itself)
std::string partial_target(const std::string& partial_path);
// `objective`: the objective the config describes, when the caller already built it (an
// in-process sweep shares one between runs that read the same data); null = build it here
// `overwrite`: replace a finished run file at the same path (otherwise that is an error)
RunResult run_experiment(const Config& cfg, const std::string& out_path, bool progress,
                         std::shared_ptr<const Objective> objective = nullptr, bool overwrite = false);

struct RunOptions {
  bool progress = false;
  std::shared_ptr<const Objective> objective;  // see run_experiment
  // a fresh run: replace a finished run file, or discard a resumable .partial (else either is
  // refused); a resume: continue although the stale version, the run file schema, the stored
  // config or the data changed since the checkpoint (recorded in the file as resume_forced)
  bool overwrite = false;
  // continue from the checkpoint of this .partial (src/run/checkpoint.hpp); its config is the
  // run's (cfg is ignored), the run file is the .partial's
  std::string resume_from;
  // the sweep's rule (run_or_resume): continue from OUT.partial when it holds a checkpoint of
  // this very config, else run afresh
  bool continue_checkpoint = false;
  int64_t stop_after = 0;  // tests: stop as if interrupted once k ≥ stop_after
  // the command line's overrides, which name the run file when there is no --out or log.out
  // (default_run_path)
  std::vector<std::string> overrides;
};
// run_experiment with every option; a run stopped by SIGINT/SIGTERM (or stop_after) returns
// status "interrupted" and leaves its .partial with a checkpoint. The run holds OUT.lock
// (src/io/write_lock.hpp) from before its first check to its end: a second writer of the same
// path is refused. A failure never removes a .partial that holds a checkpoint; a full disk is
// one line naming the file and the space it needs.
RunResult run_experiment(const Config& cfg, const std::string& out_path, const RunOptions& options);
// A lockstep ensemble (docs/design.md "Ensembles"): runs whose configs differ only in
// method.lr advance together, each writing its own run file, equal to its separate run's to
// rounding. A column whose config fails its checks gets `error` and no file; the others run.
struct EnsembleColumn {
  Config config;
  std::string path;
};
struct EnsembleColumnResult {
  RunResult result;
  std::string error;  // non-empty: the column did not run (its one-line message)
};
// `objective`: built from the first column's config when null
std::vector<EnsembleColumnResult> run_ensemble_experiment(const std::vector<EnsembleColumn>& columns,
                                                          std::shared_ptr<const Objective> objective = nullptr,
                                                          bool overwrite = false);

}  // namespace stale
