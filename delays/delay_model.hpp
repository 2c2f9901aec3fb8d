#pragma once
// Delay models (docs/design.md "DelayModel"): for update k and block i, how many block updates
// old the value of block i is that update k reads (docs/theory.md §1: delay = k − j_k^(i)).
//
// Every model is a pure function of (seed, k, i) — a counter-based draw, not a sequential
// stream — so a delay never depends on how often it was asked for, on logging, or on
// threads, and a table can be re-derived for any k. Delays never exceed min(bound(), k).
#include <cstdint>
#include <climits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace stale {

class Config;

class DelayModel {
 public:
  virtual ~DelayModel() = default;
  virtual std::string name() const = 0;
  // the largest delay the model can produce (delay.max): sizes the version store
  virtual int64_t bound() const = 0;
  virtual int64_t delay(int64_t k, int block) const = 0;
  // d[i] = delay(k, i) for every block i < d.size(): one call per update, so that a model can
  // share the work its blocks have in common (uniform: the part of the hash that depends on k)
  virtual void delays(int64_t k, std::vector<int64_t>& d) const {
    for (size_t i = 0; i < d.size(); ++i) d[i] = delay(k, static_cast<int>(i));
  }
  // expected delay once k ≥ bound (steady state), for reports
  virtual double steady_state_mean() const = 0;
  // number of updates the model has delays for (a replayed table ends; draws do not)
  virtual int64_t horizon() const { return INT64_MAX; }
  // what a run of `updates` updates should record about the model beyond its name: integer
  // attributes of the run file's /theory (a replayed table: its rows, whether it repeats, how
  // many of its entries were capped at k). Most models have none.
  virtual std::vector<std::pair<std::string, int64_t>> run_attributes(int64_t /*updates*/) const { return {}; }
  // the largest delay of updates 0..updates−1 over `blocks` blocks: what a run of that length
  // actually reads, the δ of its bound (docs/theory.md §3). ≤ bound(): below it when the run
  // is shorter than the ramp min(δ, k) or its draws never reach δ. Scans from the last update
  // down and stops once min(bound(), k) cannot beat the best found (uniform draws hit δ after
  // about δ + 1 draws; constant and zero stop at once).
  int64_t largest_delay(int64_t updates, int blocks) const;
};

std::unique_ptr<DelayModel> make_zero_delay();
std::unique_ptr<DelayModel> make_constant_delay(int64_t delta);
// i.i.d. uniform on {0, …, min(δ, k)} per (k, block): the RPD authors' rule
std::unique_ptr<DelayModel> make_uniform_delay(int64_t delta, uint64_t seed);
// geometric P(D = j) ∝ (1 − p)^j p with p = 1/(1 + mean), truncated to {0, …, min(δ, k)}
std::unique_ptr<DelayModel> make_geometric_delay(double mean, int64_t delta, uint64_t seed);
// replay a P × S table (CSV rows, or /delays of a run or schedule .h5 file): update k reads
// row k (repeat = false: the table ends after P updates) or row k mod P (repeat = true: a
// periodic pattern), each entry capped at k like the built-in models (min(d, k): an update
// cannot read before w_0)
std::unique_ptr<DelayModel> make_table_delay(const std::string& path, int stages, bool repeat = false);
// a table held in memory, row-major P × S (e.g. a simulated schedule's delays)
std::unique_ptr<DelayModel> make_table_delay(std::vector<int64_t> table, int64_t rows, int cols, const std::string& origin,
                                             bool repeat = false);

// What a delay model's factory may read: the config, the run's blocks and length, and — for
// delay.name = "schedule" — the exact delay table of the schedule rpd replays.
struct DelayContext {
  DelayContext(const Config& c, int s, int64_t k) : cfg(c), stages(s), updates(k) {}
  const Config& cfg;
  int stages = 0;
  int64_t updates = 0;
  const std::vector<int64_t>* schedule_table = nullptr;  // row-major rows × stages
  int64_t schedule_rows = 0;
  std::string schedule_origin;
};

// config → model through the delay registry (delay_registry.hpp); checks delay.* keys
// against the run (stages, updates)
std::unique_ptr<DelayModel> make_delay_model(const DelayContext& context);
std::unique_ptr<DelayModel> make_delay_model(const Config& cfg, int stages, int64_t updates);

// mean of the geometric law truncated to {0..cap} (exact, for tests and reports)
double truncated_geometric_mean(double mean, int64_t cap);

}  // namespace stale
