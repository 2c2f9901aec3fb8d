#pragma once
// Where the schedule executor (optimizers/schedule_executor.cpp) takes its ops from, one at a
// time in the serial order of simulator.hpp, and what it learns back about each op: the
// simulated time at its end and, for a block update, the update's delay row.
//
//  - precomputed_ops: the order of a simulation run before the run (costs that do not depend
//    on the run's state; today's path);
//  - the coupled timeline (coupled_timeline.hpp): the simulator advanced op by op as the run
//    proceeds, each op's duration computed from what the executor measured while running it.
//
// Both keep the delay moments (delay_moments.hpp) of the rows they hand out, i.e. of the
// updates the run performed.
#include <cstdint>
#include <memory>
#include <vector>

#include "src/pipeline/delay_moments.hpp"
#include "src/pipeline/schedule.hpp"
#include "src/pipeline/simulator.hpp"
#include "src/pipeline/state_costs.hpp"

namespace stale {

struct OpTiming {
  double end = 0;                                // simulated time at the op's end
  const std::vector<int64_t>* delays = nullptr;  // delay row of the op's block update (one-replica schedules), else null
};

class OpSource {
 public:
  virtual ~OpSource() = default;
  // the op that runs next (an index into schedule.ops); −1 when none is left
  virtual int64_t next() = 0;
  // the op next() returned has run and measured `state`
  virtual const OpTiming& finish(const OpState& state) = 0;
  // after the run: the delay moments of the updates it performed
  virtual DelayMoments moments() = 0;
  // after the run: the timeline made along it (null for a precomputed order: the plan's
  // simulation is the timeline)
  virtual std::shared_ptr<const SimResult> timeline() = 0;
  // what a checkpoint must hold of the source itself beyond the order of the ops done (a coupled
  // timeline: the durations it gave, which followed the run's state); restore() comes before the
  // done ops are handed out again, which then replay those durations. A precomputed order holds
  // nothing
  virtual void save(StateBag&) const {}
  virtual void restore(const StateBag&) {}
};

// the serial order (start, device, position in the device's program) of a finished
// simulation `sim` of `schedule` (SimOptions: timeline, reads and updates)
std::unique_ptr<OpSource> precomputed_ops(const Schedule& schedule, const SimResult& sim, int64_t moment_window);

}  // namespace stale
