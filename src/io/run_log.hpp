#pragma once
// What a run records, and where it goes: the RunLog interface that MetricsObserver and
// RunSession (src/run/run_session.hpp) write through. Two implementations: the HDF5 run file
// (RunFile, src/io/run_file.hpp) and memory (the Python package's runs without a file,
// src/run/run_in_memory.cpp). A run computes the same records whichever it writes to, so the
// in-memory results equal the file's bit for bit (tests/python/test_package.py).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "src/core/delay_row.hpp"
#include "src/core/state_bag.hpp"
#include "src/core/types.hpp"
#include "src/io/metrics_schema.hpp"
#include "src/pipeline/delay_moments.hpp"
#include "src/pipeline/schedule.hpp"
#include "src/pipeline/simulator.hpp"

namespace stale {

struct TheoryConstants {
  // L: the L the bound used — the objective's certified L, or where it has none the estimate
  // along the run (L_source says which)
  double L = 0, mu = 0, f_star = 0, delta = 0, G = 0, lr = 0, delta0 = 0;
  int64_t stages = 0, updates = 0;
  bool L_exact = false;
  // "certified" (the objective's L: exact, or an upper bound when L_exact is false), "estimated
  // (<L_estimate_method>)" (src/theory/smoothness_estimator.hpp: a LOWER estimate, so the bound with
  // it is an estimate, not a certificate), or "none" (no L: the bound is NaN)
  std::string L_source = "certified";
  // the estimate, also beside a certified L when log.L_estimate = true (empty method: not estimated)
  std::string L_estimate_method;
  double L_estimate = NAN, L_estimate_secant = NAN, L_estimate_power = NAN;
  int64_t L_estimate_pairs = 0, L_estimate_hvps = 0;
  double L_estimate_seconds = 0;  // wall seconds the estimate took (its cost against the run's wall_seconds)
  bool L_estimated() const { return L_source.rfind("estimated", 0) == 0; }
  bool exact_mean = true;  // the left side (1/K)Σ‖∇f(w_k)‖² is exact, not sampled at logged steps
  bool f_star_is_lower_bound = false;  // f_star is f_low (a nonconvex objective); Δ₀ = f(w₀) − f_low
  double f_low = NAN;  // f_* unknown (NaN): Δ₀ = f(w₀) − f_low (the transformer's 0); NaN when not used
  std::string f_star_method, delay_model;
  std::vector<std::pair<std::string, int64_t>> delay_attributes;  // the delay model's own record (a table's capping)
  // δ (above) is the whole run's largest delay, the bound's; these are the steady state's
  double delta_steady = 0, delay_mean_steady = 0;
  int64_t updates_planned = 0;   // K of the run's plan (updates = what it did: fewer if it diverged)
  std::string updates_note;      // how K was derived when it is not method.updates
  std::string lr_note = "constant";  // which γ the bound uses
  // the bound's step-size condition γ ≤ 1/L (docs/theory.md §3): /theory/lr_within_1_over_L, the index column
  bool lr_within_1_over_L() const { return lr <= 1.0 / L; }
};

// /delay_summary: the largest and the summed delay of each block over the updates so far
struct DelaySummary {
  std::vector<int64_t> max;
  std::vector<double> sum;
  int64_t updates = 0;
  explicit DelaySummary(int64_t stages = 0) : max(static_cast<size_t>(stages), 0), sum(static_cast<size_t>(stages), 0.0) {}
  void add(const std::vector<int64_t>& delays) {  // one per block
    add_delay_row(delays.data(), max.size(), sum.data(), nullptr, max.data(), 0);
    ++updates;
  }
  std::vector<double> mean() const {
    std::vector<double> m(sum.size());
    for (size_t s = 0; s < sum.size(); ++s) m[s] = sum[s] / static_cast<double>(updates);
    return m;
  }
};

class RunLog {
 public:
  virtual ~RunLog() = default;
  // K·S above which /delays holds summary statistics instead of the table
  static constexpr int64_t kMaxDelayEntries = 10'000'000;

  // the header: root attributes and /objective
  virtual void write_root(const std::string& config_toml, int64_t seed, const std::string& backend,
                          const std::string& device, const std::string& precision) = 0;
  // f_star_is_lower_bound: f_star is a certified lower bound, not the minimum (nonconvex)
  virtual void write_objective(const std::string& name, int64_t n, int64_t d, const std::vector<int64_t>& block_sizes,
                               double L, double mu, double f_star, bool f_star_is_lower_bound, int64_t batches,
                               const std::string& description) = 0;
  // the data file the objective read: resolved path, size and SHA-256 (attributes of /objective)
  virtual void write_data_record(const std::string& path, int64_t bytes, const std::string& sha256) = 0;

  // the series, as the run goes
  // at most how many rows each series will get (before append_*): a log that buffers sizes its
  // buffers once instead of growing them (a growing iterate buffer was a third of an E1
  // ensemble's page faults, its copies included)
  virtual void expect_rows(int64_t /*metric_rows*/, int64_t /*iterate_rows*/, int64_t /*delay_rows*/) {}
  virtual void append_metrics(const MetricsRow& row) = 0;
  virtual void append_iterate(int64_t k, const Vec& w) = 0;
  // delays of one update (one per block); kept as a K × S table, or summarised when too big
  virtual void append_delays(const std::vector<int64_t>& delays) = 0;

  // durability (a file; memory has nothing to flush): log.flush_seconds have passed since the
  // last timed flush or checkpoint
  virtual bool flush_due() const = 0;
  // a timed flush without a checkpoint (a method that cannot checkpoint)
  virtual void flush_now() = 0;
  // flush, then `state` (plus the log's own counters under log/) as the checkpoint at k
  virtual void write_checkpoint(StateBag&& state, int64_t k) = 0;

  // the end: /theory, /schedule, /delay_moments, then the status
  virtual void write_theory(const TheoryConstants& t) = 0;
  // schedule-driven methods: the schedule, its simulation and the crossing counts the run
  // measured per block (PACI's drift)
  virtual void write_schedule(const Schedule& s, const SimResult& sim, const std::vector<int64_t>& measured_crossed) = 0;
  virtual void write_delay_moments(const DelayMoments& m) = 0;
  virtual void finish(const std::string& status, double wall_seconds, const std::string& message = "") = 0;
  // stopped by a signal (after its checkpoint): a file stays resumable, with status "interrupted"
  virtual void interrupt(double wall_seconds, const std::string& message) = 0;
  // the run failed: nothing of it stays
  virtual void abort() = 0;
};

}  // namespace stale
