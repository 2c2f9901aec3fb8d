#pragma once
// One run without a run file: what `stale run` would write, kept in memory (the Python
// package's `stale.run(config)` without `out=`; python/stale_module.cpp). It is the runner's
// RunSession (src/run/run_session.hpp) writing to a log in memory instead of a RunFile: the
// same checks, objective, method, plan, MetricsObserver, theory record and schedule record, so
// every series equals the run file's bit for bit (tests/python/test_package.py checks it against
// the CLI); only the wall times differ. Bad input throws the same UserError, before anything runs.
#include <memory>
#include <string>
#include <vector>

#include "objectives/objective.hpp"
#include "src/config/config.hpp"
#include "src/io/run_log.hpp"
#include "src/run/runner.hpp"

namespace stale {

struct ObjectiveSummary {  // the run file's /objective attributes
  std::string name, description;
  int64_t n = 0, d = 0, S = 0, batches = 0;
  std::vector<int64_t> block_sizes;
  double L = 0, mu = 0, f_star = 0;
  bool f_star_is_lower_bound = false;
};

struct ScheduleSummary {  // a schedule method's /schedule attributes
  bool present = false;
  double makespan = 0, bubble_fraction = 0;
  std::vector<double> bubble, busy;
  std::vector<int64_t> peak_inflight, peak_versions, measured_crossed;
};

struct InMemoryRun {
  RunResult result;          // status, message, last row, running mean, G, updates, final w (path empty)
  std::string config_toml;   // the resolved config, every key (the run file's root attribute)
  std::vector<MetricsRow> metrics;     // /metrics/*, one row per logged update
  std::vector<int64_t> iterates_k;     // /iterates_k
  std::vector<double> iterates;        // /iterates, row-major [iterates_k.size() × d]
  bool delay_table_kept = false;
  std::vector<int64_t> delays;         // /delays, row-major [delay_rows × S] (when kept)
  int64_t delay_rows = 0;
  std::vector<int64_t> delay_max;      // /delay_summary (when delay_rows > 0)
  std::vector<double> delay_mean;
  TheoryConstants theory;              // /theory
  DelayMoments delay_moments;          // /delay_moments (schedule methods with one replica)
  ObjectiveSummary objective;
  ScheduleSummary schedule;
};

// `objective`: as for run_experiment (null = build it from the config)
// progress: the progress lines of `stale run` on stderr
InMemoryRun run_in_memory(const Config& cfg, std::shared_ptr<const Objective> objective = nullptr,
                          bool progress = false);

}  // namespace stale
