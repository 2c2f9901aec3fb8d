#pragma once
// Discrete-event replay of a schedule on a cost model (docs/design.md "Simulator").
//
// Each device runs its program in order; an op starts when the device is free and its
// dependencies (schedule.hpp) have finished, plus the cost model's latency for a dependency on
// another device. With unit costs and no latency this is the papers' slot clock exactly: an
// op starts at an integer slot, after every dependency ended (end <= start).
//
// The serial order. Ops are numbered by (start time, device, position in the device's
// program): slot by slot, in increasing stage order inside a slot, which is docs/theory.md §4's
// convention for unit costs and its natural extension to real-valued costs (an update
// counts as before every op that starts no earlier than it, on a lower-or-equal device when
// they start together; the device's own order breaks the remaining ties, which zero-cost W
// ops can create). The simulator processes ops in exactly this order, so every count below
// is read off as the op runs.
//
// Updates and reads. An op flagged Update is a block update. Updates are numbered
// k = 0, 1, … in the serial order, per replica (one replica except LocalSGD, whose copies
// are numbered separately so that another replica's steps never count as staleness).
//   forward_read  c(j, mb): updates before F(j, mb) in the serial order (docs/theory.md §4);
//   forward_version(j, mb): updates of block j before F(j, mb), i.e. the block's version
//       (for LocalSGD also counting replica averages);
//   backward_version(j, mb): the version B(j, mb) used: the forward one with stashing,
//       else the block's version when B starts;
//   backward_read(j, mb): an index whose block j is that version: c(j, mb) when the version
//       is the forward one, else the updates before B(j, mb).
// The delay of block j in update k of block a for micro-batch mb is k − c(j, mb); when a
// step applies the accumulated gradient of several micro-batches, the row uses the oldest of
// them (F runs in micro-batch order, so that is the largest delay, the one the bound needs).
// The backward row differs for no-stash schedules: for j >= a it is k − backward_read(j, mb)
// (the backward pass ran through block j at that version); for j < a only the forward read
// entered the gradient, so it equals the forward row.
//
// Steady state: the updates whose oldest micro-batch is >= margin and whose own micro-batch
// is < M − margin (margin 2 · blocks by default). The papers' delay facts are steady-state
// facts: in PipeDream's warm-up a few updates see more (S = 8: 72 at micro-batch 7, 60 after).
#include <cstdint>
#include <memory>
#include <vector>

#include "src/pipeline/cost_model.hpp"
#include "src/pipeline/schedule.hpp"

namespace stale {

struct SimOptions {
  bool timeline = true;         // start and end of every op (16 bytes per op)
  bool reads = true;            // the per (micro-batch, block) read tables
  bool updates = true;          // the serialised update list
  bool delay_table = false;     // the full K × blocks delay tables (K·blocks·8 bytes each)
  bool delay_stats = true;      // DelayStats by updating block and by read block: O(1) per
                                // update plus O(blocks) per micro-batch
  bool delay_pairs = false;     // DelayStats by (updating block, read block): O(blocks) per update
  int64_t steady_margin = -1;   // micro-batches left out at each end for the steady-state
                                // statistics; −1: 2 · blocks
  bool operator==(const SimOptions&) const = default;
};

struct Update {
  int64_t index = 0;       // k within its replica's serial order (the global k with one replica)
  int32_t block = 0;
  int32_t replica = 0;
  int32_t microbatch = 0;  // micro-batch of the gradient op that carries the step
  int32_t oldest = 0;      // oldest micro-batch whose gradient the step applies
  double start = 0, end = 0;  // of that op; the block changes at `end`
};

// Summary of the delays d[k][j] = k − c(j, mb_k) over a set of updates k.
//  - by updating block a: over the updates of block a and every read block j. Cheap because
//    c(j, mb) grows with j (F(j, mb) comes after F(j − 1, mb)): the row's largest delay is its
//    block-0 entry, and its sum is blocks · k − Σ_j c(j, mb);
//  - by read block j: over every update; gathered per micro-batch (largest k, count, Σ k of
//    the updates reading it) and turned into delays once at the end;
//  - by pair (a, j), only with SimOptions::delay_pairs.
struct DelayStats {
  int blocks = 0;
  std::vector<int64_t> count;       // [a]: updates of block a counted
  std::vector<int64_t> update_max;  // [a]: largest delay of any block in an update of block a (−1: none)
  std::vector<int64_t> update_sum;  // [a]: sum of the delays of every block over those updates
  std::vector<int64_t> read_max;    // [j]: largest delay of block j over all updates (−1: none)
  std::vector<int64_t> read_sum;    // [j]
  std::vector<int64_t> pair_max;    // [a·blocks + j] (SimOptions::delay_pairs; else empty)
  std::vector<int64_t> pair_sum;    // [a·blocks + j]

  void reset(int nblocks, bool pairs);
  int64_t updates() const;
  int64_t max_overall() const;
  double mean_overall() const;  // over (update, read block) pairs
  int64_t max_by_update_block(int a) const { return update_max[a]; }
  double mean_by_update_block(int a) const;
  int64_t max_by_read_block(int j) const { return read_max[j]; }
  double mean_by_read_block(int j) const;
};

struct SimResult {
  int stages = 0, blocks = 0;
  int64_t microbatches = 0;
  bool stash = false;

  // timeline, aligned with Schedule::ops (device programs in order)
  std::vector<double> start, end;
  double makespan = 0;
  std::vector<double> busy;             // per device
  std::vector<double> bubble;           // per device: 1 − busy / makespan
  double bubble_overall = 0;            // 1 − Σ busy / (stages · makespan)
  std::vector<int64_t> peak_inflight;   // per device: activations (micro-batch × chunk) held
  std::vector<int64_t> peak_versions;   // per device: block versions stored (current + stashed)
  std::vector<int64_t> max_crossed;     // per block: most updates of the block between one
                                        // micro-batch's F and B on it (PACI's count)
  std::vector<int64_t> updates_per_block;
  int64_t total_updates = 0;

  // read tables, [mb · blocks + j] (SimOptions::reads)
  std::vector<int64_t> forward_read, backward_read;
  std::vector<int32_t> forward_version, backward_version;
  bool backward_differs = false;  // some B used another version than its F

  std::vector<Update> updates;            // serial order (SimOptions::updates)
  DelayStats delays;                      // every update
  DelayStats steady_delays;               // updates whose micro-batches lie in [margin, M − margin)
  int64_t steady_margin = 0;
  std::vector<int64_t> delay_table;           // [row · blocks + j], rows in serial order (SimOptions::delay_table)
  std::vector<int64_t> delay_table_backward;  // only when backward_differs

  int64_t read_index(int64_t mb, int j) const { return forward_read[mb * blocks + j]; }
  // one update's delay row computed from the read tables (needs reads and updates)
  std::vector<int64_t> delay_row(const Update& u, bool backward = false) const;
};

// Throws UserError when the cost model does not fit the schedule, InternalError on deadlock
// (a schedule whose programs wait on each other; never for a registered schedule).
SimResult simulate(const Schedule& schedule, const CostModel& costs = {}, const SimOptions& options = {});

// The event loop of simulate(), one op at a time, for a caller that decides an op's duration
// only once the op has started (the coupled timeline, coupled_timeline.hpp: durations that
// depend on the run's state). An op's start never depends on its own duration, and every
// op taken later starts no earlier (the serial order above), so deciding the duration
// between next() and finish() changes nothing about the rules. simulate() is exactly
//
//   Simulator sim(schedule, costs, options);
//   while (sim.next() >= 0) sim.finish(sim.nominal_duration());
//   SimResult r = sim.result();
class Simulation;
class Simulator {
 public:
  Simulator(const Schedule& schedule, const CostModel& costs, const SimOptions& options);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // index into schedule.ops of the op that starts next in the serial order; −1 when no op
  // can start (all done, or a deadlock that result() reports)
  int64_t next();
  double next_start() const;
  // the cost model's duration of that op (t_F, t_B, t_W with the noise); draws the op's
  // noise, so call it at most once per op, as simulate() does
  double nominal_duration();
  // runs that op with `duration` (finite, >= 0); returns the block update it performed
  // (valid until the next finish), or null
  const Update* finish(double duration);
  // the result so far: read tables of the ops run (delay_row of a returned update works)
  const SimResult& partial() const;
  // after next() returned −1: the whole result; InternalError on deadlock
  SimResult result();

 private:
  std::unique_ptr<Simulation> impl_;
  int device_ = -1;
};

}  // namespace stale
