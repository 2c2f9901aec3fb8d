#pragma once
// Op durations that depend on the run's state (issue 16, the referee's objection to RPD:
// stage times that depend on the data, the gradients or the weights make the delays depend
// on the trajectory). An op's duration is the cost model's (cost_model.hpp: t_F, t_B, t_W,
// jitter, stragglers, Pareto stragglers) times a coupling factor of β = costs.coupling_scale:
//
//   none      1
//   data      (c_m / c̄)^β             c_m the data cost of the op's mini-batch (a per-batch
//                                     vector given by the caller, objectives/batch_costs.hpp:
//                                     work per sample), c̄ its mean over the batches
//   gradient  (‖g_j‖ / ‖g_j‖₁)^β        ‖g_j‖ the norm of the latest micro-batch gradient of the
//                                     op's block j, ‖g_j‖₁ that of its first: a gradient op
//                                     (B, or W with split backward) uses the gradient it
//                                     produced, every other op the latest one (factor 1
//                                     before the first)
//   weight    (1 + ‖w_j‖ / √d_j)^β     the RMS of block j as the op finds it
//
// β = 1 makes time proportional to the quantity. The factor is clamped to [1e−9, 1e9] (an
// F or B must take a positive time: the serial order of simulator.hpp relies on it) and a
// non-finite measurement (a diverging run) keeps the block's previous factor. Each factor is
// a function of what the op measured and of the block's history only, so the coupled
// timeline stays a pure function of the trajectory.
#include <cstdint>
#include <string>
#include <vector>

#include "src/core/state_bag.hpp"
#include "src/core/types.hpp"

namespace stale {

enum class Coupling { None, Data, Gradient, Weight };
Coupling parse_coupling(const std::string& name);  // UserError naming costs.coupling
const char* coupling_name(Coupling c);

// What the executor saw while running one op; the coupled cost reads what it needs.
struct OpState {
  int batch = -1;                 // the mini-batch of the op's micro-batch
  const Vec* gradient = nullptr;  // the micro-batch gradient the op produced (gradient ops), else null
  const double* weights = nullptr;  // block j as the op found it
  Index weights_size = 0;
};

class StateCosts {
 public:
  StateCosts() = default;
  // batch_costs: one positive cost per mini-batch (Coupling::Data only)
  StateCosts(Coupling coupling, double scale, int blocks, std::vector<double> batch_costs = {});

  Coupling coupling() const { return coupling_; }
  bool state_independent() const { return coupling_ == Coupling::None; }
  // the factor of an op of block j that measured `state`; gradient ops update block j's latest norm
  double factor(int block, bool gradient_op, const OpState& state);
  // the factor of an op whose state is not measured (ops the run did not reach: the
  // timeline's drain): the block's latest gradient or weight factor, the batch's data factor
  double frozen_factor(int block, int batch) const;
  // what factor() has learnt from the run (first gradient norms, latest factors), for a checkpoint
  void save(StateBag& b) const;
  void restore(const StateBag& b);

 private:
  double clamp(double f) const;
  Coupling coupling_ = Coupling::None;
  double scale_ = 1.0;
  std::vector<double> data_factor_;   // [batch] (c_m / c̄)^β
  std::vector<double> first_norm_;    // [block] ‖g_j‖ of the first gradient (0: none yet)
  std::vector<double> last_factor_;   // [block] the latest gradient or weight factor
};

}  // namespace stale
