#pragma once
// One run's records from its config to its end: the header, the MetricsObserver that the
// method reports to (the series, divergence, stops and checkpoints; src/run/metrics_observer.hpp)
// with its progress line, the theory record, the schedule and the status. What a run
// to a file (run_experiment), each column of a lockstep ensemble (run_ensemble_experiment) and
// a run kept in memory (run_in_memory) share, so that all three record the same numbers. The
// caller has checked the config and planned the method; the session writes through a RunLog
// (src/io/run_log.hpp): the run file, created last, after every check, or a log of the caller's.
#include <chrono>
#include <memory>
#include <string>

#include "objectives/objective.hpp"
#include "optimizers/method.hpp"
#include "src/config/config.hpp"
#include "src/config/log_params.hpp"
#include "src/io/run_file.hpp"
#include "src/run/metrics_observer.hpp"
#include "src/run/progress_line.hpp"
#include "src/run/runner.hpp"

namespace stale {

// the .partial a run continues, and whether it continues although something changed since
// its checkpoint (`forced`: what, already found by the runner; the data's checksum is
// compared here, where it is computed)
struct ResumeFrom {
  const PartialRun* partial = nullptr;
  bool force = false;
  std::string forced;
};

class RunSession {
 public:
  // to the run file `path`; `resume`: the .partial this run continues (null: a fresh run)
  RunSession(const Config& cfg, std::string path, bool progress, std::shared_ptr<const Objective> objective,
             const Method& method, const RunPlan& plan, std::chrono::steady_clock::time_point t0, bool overwrite,
             const ResumeFrom* resume = nullptr, int64_t stop_after = 0);
  // to `log` (a run without a file: no path, no data checksum; progress lines when asked)
  RunSession(const Config& cfg, std::unique_ptr<RunLog> log, std::shared_ptr<const Objective> objective,
             const Method& method, const RunPlan& plan, std::chrono::steady_clock::time_point t0,
             bool progress = false);
  RunSession(const RunSession&) = delete;
  RunSession& operator=(const RunSession&) = delete;

  // whether the log keeps /delays as the K × S table (else only /delay_summary)
  static bool keeps_delay_table(const Config& cfg, const Objective& f, const RunPlan& plan);

  MetricsObserver& observer() { return *obs_; }
  // w_0 = 0 for the linear models (the authors' code); the transformer draws GPT-2's init
  Vec initial_point() const { return f_->initial_point(method_params_.seed); }
  // the theory record, the schedule and the status (or, when interrupted, the checkpointed
  // .partial); the result's path is empty for a run without a file
  RunResult finish(const RunReport& report, const Vec& w);
  // removes the run file (a failure after the constructor)
  void abort() { log_->abort(); }

 private:
  RunSession(const Config& cfg, std::string path, bool progress, std::shared_ptr<const Objective> objective,
             const RunPlan& plan, std::chrono::steady_clock::time_point t0);
  // the root attributes and /objective (with the data record when data_sha is not empty)
  void write_header(const std::string& data_sha, uint64_t data_bytes);
  void start_observer(const Method& method, int64_t stop_after);
  TheoryConstants theory(const RunReport& report) const;
  // the result's numbers from the observer
  void take_results(const Vec& w);

  const Config& cfg_;
  const LogParams log_params_;
  const MethodParams method_params_;  // γ, its schedule and the seed, parsed once
  std::shared_ptr<const Objective> f_;
  const RunPlan& plan_;
  std::chrono::steady_clock::time_point t0_;
  bool progress_;
  bool exact_mean_ = true;
  std::unique_ptr<RunLog> log_;
  std::unique_ptr<ProgressLine> progress_line_;
  std::unique_ptr<MetricsObserver> obs_;
  RunResult res_;
};

}  // namespace stale
