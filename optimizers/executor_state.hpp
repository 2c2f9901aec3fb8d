#pragma once
// What the schedule executor's loop (schedule_executor.cpp) carries from one op to the next,
// bundled so that a checkpoint can save it and a resumed run restore it at an update
// boundary: replica weights, one update rule per block and replica, accumulated gradients,
// PipeMare's velocities, the noise stream, the per-block update counts and crossing counts,
// k, the position in the op order, and every micro-batch in flight.
//
// In-flight activations and stage caches are not saved: they are a deterministic function of
// the micro-batch's batch and of the weights its forwards read (MicroState::z), so restore()
// recomputes them by re-running those forwards. What the backward pass has produced so far
// (the gradient flowing backward, the loss, split-backward weight gradients) is saved.
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "objectives/objective.hpp"
#include "optimizers/sampling.hpp"
#include "optimizers/update_rule.hpp"
#include "src/core/state_bag.hpp"

namespace stale {

// what one micro-batch carries between its ops
struct MicroState {
  std::vector<Mat> act;                              // [block] input activation of F(block)
  std::vector<std::unique_ptr<StageCache>> cache;    // [block]
  Vec z;                                             // weights its forwards read (the mixed point)
  Mat grad;                                          // gradient flowing backward
  std::vector<Vec> pending_w;                        // split backward: g_j waiting for W(j)
  double loss = std::nan("");
  int gradients_done = 0;                            // the state goes when all blocks' are
  std::vector<int64_t> updates_at_forward;           // [block] updates of the block before F
  int forwards = 0, backwards = 0;                   // F ops done (blocks 0..), B ops done (blocks J−1..)
  MicroState(int J, Index dim, bool split_backward);
};

struct ExecutorState {
  std::vector<Vec> W;  // replica weights
  Vec w_avg;
  std::vector<std::vector<std::unique_ptr<BlockOptimizer>>> rules;  // [replica][block]
  std::vector<std::vector<Vec>> acc;                                // accumulated gradients
  std::vector<std::vector<int>> acc_n;
  std::vector<Vec> velocity;  // PipeMare: per block
  GradientNoise noise;
  std::unordered_map<int64_t, MicroState> live;      // micro-batches in flight
  std::vector<std::vector<int64_t>> block_updates;   // [replica][block]
  std::vector<int64_t> crossed;                      // per block: most updates between F and B
  int64_t k = 0;             // block updates done
  int64_t update_index = 0;  // position in the simulation's update list
  int64_t ops_done = 0;      // ops of the serial order fully executed

  ExecutorState(const Objective& f, const UpdateRuleParams& rule, const MethodParams& p, int replicas, const Vec& w0);
  void save(StateBag& b) const;
  // `batch_of`: the batch of each micro-batch; `split_backward`: the schedule splits B and W
  void restore(const StateBag& b, const Objective& f, const std::vector<int>& batch_of, bool split_backward);
};

}  // namespace stale
