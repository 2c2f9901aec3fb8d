#pragma once
// Whether a run diverged (status "diverged", the reason in the run file): a non-finite loss,
// gradient or block gradient, or f − f_* (the loss where f_* is unknown) above
// log.divergence × max(its start value, 1). Once diverged, a run stops at its next update.
#include <cstdint>
#include <string>

namespace stale {

class DivergenceCheck {
 public:
  // factor: log.divergence (0: only non-finite values diverge); f_star: the objective's f_*
  // (NaN when unknown: the loss itself is compared)
  DivergenceCheck(double factor, double f_star) : factor_(factor), f_star_(f_star) {}

  // at an update whose f and ∇f were evaluated: loss f(w_k), grad_norm_sq ‖∇f(w_k)‖²,
  // grad_norm the block gradient's norm, start_value f − f_* (or the loss) at w_0
  void check(double loss, double grad_norm_sq, double grad_norm, double start_value, int64_t k);
  // at an update off the evaluation cadence: only the block gradient is known
  void check_gradient(double grad_norm, int64_t k);

  bool diverged() const { return diverged_; }
  // why (empty when it did not diverge)
  const std::string& reason() const { return reason_; }

 private:
  double factor_, f_star_;
  bool diverged_ = false;
  std::string reason_;
};

}  // namespace stale
