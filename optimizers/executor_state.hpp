#pragma once
// What the schedule executor's loop (schedule_executor.cpp) carries from one op to the next,
// for the P columns of a lockstep ensemble (a lone run is one column), bundled so that a
// checkpoint can save it and a resumed run restore it at an update boundary: replica weights,
// one update rule per block, replica and column, accumulated gradients, PipeMare's velocities,
// the noise stream, the per-block update counts and crossing counts, k, the position in the op
// order, and every micro-batch in flight.
//
// Each column is saved into its own run's checkpoint as that run alone would save itself (its
// weights, rules, accumulators and micro-batch slices; the shared counts and streams alike in
// every column's bag), and an ensemble is restored from its columns' bags.
//
// In-flight activations and stage caches are not saved: they are a deterministic function of
// the micro-batch's batch and of the weights its forwards read (MicroState::Z), so restore()
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

// what one micro-batch carries between its ops, for the columns that were running at its
// first forward (cols); matrices hold one column (or one activation slice) per entry of cols
struct MicroState {
  std::vector<int> cols;
  std::vector<Mat> act;                                         // [block] input activation of F(block)
  std::vector<std::vector<std::unique_ptr<StageCache>>> cache;  // [block][column]
  Mat Z;                                                        // d × |cols|: weights its forwards read
  Mat grad;                                                     // gradient flowing backward
  std::vector<Mat> pending_w;                                   // split backward: G_j waiting for W(j)
  Vec loss;                                                     // per column, from the loss head on
  int gradients_done = 0;                                       // the state goes when all blocks' are
  std::vector<int64_t> updates_at_forward;                      // [block] updates of the block before F
  int forwards = 0, backwards = 0;                              // F ops done (blocks 0..), B ops done (blocks J−1..)
  MicroState(std::vector<int> cols, int J, Index dim, bool split_backward);
  // drop the columns that stopped since its last op
  void drop_stopped(const std::vector<char>& running);
};

struct ExecutorState {
  int columns;
  std::vector<std::vector<Vec>> W;  // [replica][column] replica weights
  std::vector<Vec> w_avg;           // [column] the replica average
  std::vector<std::vector<std::vector<std::unique_ptr<BlockOptimizer>>>> rules;  // [replica][column][block]
  std::vector<std::vector<std::vector<Vec>>> acc;  // [replica][column][block] accumulated gradients
  std::vector<std::vector<int>> acc_n;             // [replica][block], shared by the columns
  std::vector<std::vector<Vec>> velocity;          // PipeMare: [column][block]
  GradientNoise noise;
  std::unordered_map<int64_t, MicroState> live;     // micro-batches in flight
  std::vector<std::vector<int64_t>> block_updates;  // [replica][block]
  std::vector<int64_t> crossed;                     // per block: most updates between F and B
  int64_t k = 0;             // block updates done
  int64_t update_index = 0;  // position in the simulation's update list
  int64_t ops_done = 0;      // ops of the serial order fully executed

  // rules[c]: column c's update rule; w0[c] its initial point
  ExecutorState(const Objective& f, const std::vector<const UpdateRuleParams*>& rules, const MethodParams& p,
                int replicas, const std::vector<Vec>& w0);
  // column c as its run alone would save itself (f: the activation gradients in flight as values)
  void save(StateBag& b, int c, const Objective& f) const;
  // every column from its own bag (one ensemble's checkpoint); `batch_of`: the batch of each
  // micro-batch; `split_backward`: the schedule splits B and W
  void restore(const std::vector<const StateBag*>& bags, const Objective& f, const std::vector<int>& batch_of,
               bool split_backward);
};

}  // namespace stale
