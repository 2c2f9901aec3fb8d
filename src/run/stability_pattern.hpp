#pragma once
// Periodic delay patterns of stale block methods (issue #16, part 2): which block each update
// of one period changes and which stale version of every block its gradient reads.
//
// On a quadratic with full-batch gradients every method below is a linear recursion on the
// iterates (theory.md §1 notation, k counts block updates):
//
//   w_{k+1}^(a_k) = w_k^(a_k) − γ·scale · (1/|G_k|) Σ_{g ∈ G_k} [A z_{k,g} − b]^(a_k),
//   z_{k,g}^(j)  = w_{k − d_{k,g,j}}^(j),
//
// where a_k is the updated block (or every block at once), G_k the micro-batches whose
// accumulated gradients the step applies (one for PipeDream and RPD, `a` for PACI, m for 2BW)
// and d_{k,g,j} the delay of block j in micro-batch g's read. A pattern stores (a_k, d_{k,·,·})
// for one period; the recursion repeats it.
//
// Schedules. The pattern is read off the simulator's exact read tables (simulator.hpp:
// forward_read c(j, mb), delay k − c(j, mb)) in the steady state, with the smallest period
// P for which the whole steady window repeats; nothing is hand-coded per schedule. Only the
// forward read enters: for the linear models a stage is a ↦ a + X_s w^(s), whose Jacobian in
// a is I and in w^(s) is X_s, neither depending on weights, so the backward pass computes the
// same gradient whichever version it uses (stashing or not, objectives/linear_model_cpu.cpp).
//
// Constant delay δ (RPD under a delay model with a fixed delay): every block read δ updates old, with
//   - cyclic block order a_k = k mod S (period S), or
//   - all blocks at once with scale 1/S: the expected recursion of RPD's uniform stage draws,
//     E w_{k+1} = E w_k − (γ/S)(A E w_{k−δ} − b), since s_k is drawn independently of the past.
#include <cstdint>
#include <string>
#include <vector>

#include "src/config/config.hpp"
#include "src/pipeline/cost_model.hpp"
#include "src/pipeline/schedule.hpp"

namespace stale {

struct PatternUpdate {
  int block = -1;  // updated block; −1 = every block at once
  // one row per accumulated micro-batch: delays[g][j] = d_{k,g,j}
  std::vector<std::vector<int64_t>> delays;
};

struct DelayPattern {
  std::string description;          // one line: where the pattern came from
  int blocks = 0;
  double step_scale = 1.0;          // γ multiplier (1/S for RPD's expected recursion)
  int64_t start = 0;                // serial index k of the period's first update in the
                                    // simulated schedule (the phase; 0 for constant delays)
  int64_t microbatches_per_period = 0;  // schedules: micro-batches one period spans
  std::vector<PatternUpdate> period;

  int64_t length() const { return static_cast<int64_t>(period.size()); }
  int64_t max_delay() const;
  // every update is all-block and every read takes all blocks at one delay: then the
  // recursion commutes with A and splits per eigen-direction (stability.hpp)
  bool uniform_all_block() const;
};

// Constant delay δ with cyclic order (block k mod S) or all blocks at once (scale 1/S: RPD's
// expected recursion; scale 1 with δ = 0 is gradient descent).
DelayPattern constant_delay_pattern(int blocks, int64_t delta, bool all_blocks, double step_scale);

// The steady-state period of a schedule simulated on `costs`: simulates with growing M until
// the steady window (simulator.hpp) holds at least three periods. Throws UserError when the
// schedule has replicas (LocalSGD) or no period shows (random costs: jitter, stragglers).
DelayPattern schedule_pattern(const std::string& schedule, ScheduleParams params, const CostModel& costs);

// What a config's method.* and delay.* keys make of the recursion, read from the registry
// entries' traits:
//   a fresh-read method that steps every block at once (MethodEntry::steps_all_blocks):
//   gradient descent; one that steps a drawn block, or a delay-driven method under a model
//   with one fixed delay δ (DelayEntry::fixed_delay): δ with `order` cyclic or expected (all
//   blocks, γ/S); a delay-driven method under a simulated schedule (simulates_schedule) with
//   delay.follow_order: the schedule's pattern; a schedule method over one model (not
//   replicas; PipeMare without prediction): its schedule's pattern. Anything else (varying
//   delays, replicas, momentum/adamw) is a UserError naming the key and what is valid.
DelayPattern pattern_from_config(const Config& cfg, const std::string& order);

// The predictor's recursion is linear: the objective must have one Hessian
// (ObjectiveEntry::fixed_hessian, objective.nonconvex_reg = 0), else a UserError naming the key. Both front ends
// (stale stability, stale.stability) call it.
void check_stability_objective(const Config& cfg);

}  // namespace stale
