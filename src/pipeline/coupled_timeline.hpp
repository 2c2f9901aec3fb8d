#pragma once
// The coupled timeline (issue 16): the simulator and the executor run interleaved, so that
// op durations may depend on the run's state and the delays are whatever this timeline
// produces. The schedule's device programs, dependency rules and serial order are the
// simulator's own (simulator.hpp, advanced one op at a time by Simulator): next() asks it
// which op starts next; the executor runs that op and reports what it measured (OpState);
// finish() turns that into the op's duration,
//
//     duration = nominal (cost model: t_F/t_B/t_W, jitter, stragglers) × coupling factor
//                (state_costs.hpp),
//
// completes the op in the simulator and, for a block update, hands back its delay row
// (docs/theory.md §4's convention, read off the simulator's read tables). An op's start never
// depends on its own duration, so choosing the duration once the op has run is causal.
// With Coupling::None every factor is 1 and every duration is the simulator's own, bit for
// bit: the coupled path then reproduces the precomputed one exactly (tests/pipeline,
// tests/optimizers).
//
// Ops the run does not reach (it stopped at K, or diverged) are completed by timeline() with
// the state frozen (StateCosts::frozen_factor), so that the timeline, its makespan and
// bubbles cover the whole schedule as a precomputed simulation does.
#include <memory>
#include <vector>

#include "src/pipeline/cost_model.hpp"
#include "src/pipeline/op_source.hpp"
#include "src/pipeline/state_costs.hpp"

namespace stale {

class CoupledTimeline final : public OpSource {
 public:
  // batch_of: the mini-batch of every micro-batch (for the drain's data factors)
  CoupledTimeline(const Schedule& schedule, const CostModel& costs, StateCosts state_costs,
                  std::vector<int> batch_of, int64_t moment_window, const SimOptions& options = {});

  int64_t next() override;
  const OpTiming& finish(const OpState& state) override;
  DelayMoments moments() override;
  std::shared_ptr<const SimResult> timeline() override;
  // the factor of every op finished so far and what the state costs learnt; restored, the first
  // finishes replay those factors instead of measuring (a resumed run's done ops measure nothing)
  void save(StateBag& b) const override;
  void restore(const StateBag& b) override;

 private:
  const Schedule& s_;
  Simulator sim_;
  StateCosts state_;
  std::vector<int> batch_of_;
  int64_t current_ = -1;
  std::vector<int64_t> row_;
  OpTiming timing_;
  DelayMoments moments_;
  std::shared_ptr<const SimResult> result_;
  // [op finished, in order] the coupling factor it got: 8 bytes per op in memory and in every
  // checkpoint (3 ops per block update at most; counted by the resource estimate)
  std::vector<double> factors_;
  std::vector<double> replay_;   // a checkpoint's factors, handed out first
  size_t replayed_ = 0;
};

}  // namespace stale
