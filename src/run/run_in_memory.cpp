#include "src/run/run_in_memory.hpp"

#include <chrono>

#include "objectives/objective_factory.hpp"
#include "optimizers/method.hpp"
#include "src/checks/resource_estimate.hpp"
#include "src/run/run_session.hpp"
#include "src/run/runner.hpp"

namespace stale {

namespace {

// The RunLog of a run without a file: what RunFile (src/io/run_file.cpp) writes, kept in
// InMemoryRun's fields. The session and its MetricsObserver decide what is written and when,
// exactly as for a file; only the wall times differ.
class MemoryLog final : public RunLog {
 public:
  MemoryLog(InMemoryRun& out, int64_t stages, bool keep_delay_table)
      : out_(out), stages_(stages), keep_table_(keep_delay_table), delays_(stages) {}

  void write_root(const std::string& config_toml, int64_t, const std::string&, const std::string&,
                  const std::string&) override {
    out_.config_toml = config_toml;
  }
  void write_objective(const std::string& name, int64_t n, int64_t d, const std::vector<int64_t>& block_sizes, double L,
                       double mu, double f_star, bool f_star_is_lower_bound, int64_t batches,
                       const std::string& description) override {
    auto& o = out_.objective;
    o.name = name;
    o.description = description;
    o.n = n;
    o.d = d;
    o.S = static_cast<int64_t>(block_sizes.size());
    o.batches = batches;
    o.block_sizes = block_sizes;
    o.L = L;
    o.mu = mu;
    o.f_star = f_star;
    o.f_star_is_lower_bound = f_star_is_lower_bound;
  }
  void write_data_record(const std::string&, int64_t, const std::string&) override {}
  void append_metrics(const MetricsRow& row) override { out_.metrics.push_back(row); }
  void append_iterate(int64_t k, const Vec& w) override {
    out_.iterates_k.push_back(k);
    out_.iterates.insert(out_.iterates.end(), w.data(), w.data() + w.size());
  }
  void append_delays(const std::vector<int64_t>& d) override {
    delays_.add(d);
    if (keep_table_) out_.delays.insert(out_.delays.end(), d.begin(), d.begin() + stages_);
  }
  // nothing to flush, and nothing a checkpoint could be resumed from
  bool flush_due() const override { return false; }
  void flush_now() override {}
  void write_checkpoint(StateBag&&, int64_t) override {}
  void write_theory(const TheoryConstants& t) override { out_.theory = t; }
  void write_schedule(const Schedule&, const SimResult& sim, const std::vector<int64_t>& measured_crossed) override {
    auto& s = out_.schedule;
    s.present = true;
    s.makespan = sim.makespan;
    s.bubble_fraction = sim.bubble_overall;
    s.bubble = sim.bubble;
    s.busy = sim.busy;
    s.peak_inflight = sim.peak_inflight;
    s.peak_versions = sim.peak_versions;
    s.measured_crossed = measured_crossed;
  }
  void write_delay_moments(const DelayMoments& m) override { out_.delay_moments = m; }
  void finish(const std::string&, double, const std::string&) override { finish_delays(); }
  void interrupt(double, const std::string&) override { finish_delays(); }
  void abort() override {}

 private:
  // /delay_summary and whether /delays stays (RunFile::finish)
  void finish_delays() {
    out_.delay_rows = delays_.updates;
    out_.delay_table_kept = keep_table_ && delays_.updates > 0;
    if (delays_.updates == 0) return;
    out_.delay_max = delays_.max;
    out_.delay_mean = delays_.mean();
  }

  InMemoryRun& out_;
  int64_t stages_;
  bool keep_table_;
  DelaySummary delays_;
};

}  // namespace

InMemoryRun run_in_memory(const Config& cfg, std::shared_ptr<const Objective> objective, bool progress) {
  const auto t0 = std::chrono::steady_clock::now();
  check_run_config(cfg, "");  // the runner's checks (no run file: memory only)
  std::shared_ptr<const Objective> f =
      objective ? std::move(objective) : make_objective(cfg);
  check_resources_of(cfg, "", f->dim());  // a model whose size only it knows (Python)
  auto method = make_method(cfg, *f);
  const RunPlan plan = method->plan(*f);
  InMemoryRun out;
  RunSession session(cfg, std::make_unique<MemoryLog>(out, f->stages(), RunSession::keeps_delay_table(cfg, *f, plan)), f,
                     *method, plan, t0, progress);
  Vec w = session.initial_point();
  const RunReport report = method->run(*f, plan, w, session.observer());
  out.result = session.finish(report, w);
  return out;
}

}  // namespace stale
