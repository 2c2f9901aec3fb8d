#pragma once
// An objective that forwards every call to a real one: the base of the suites' wrappers that
// record or check what a method hands its objective (a subclass overrides the calls it watches).
#include <memory>
#include <string>

#include "objectives/objective.hpp"

namespace stale::test {

class ForwardingObjective : public Objective {
 public:
  explicit ForwardingObjective(std::unique_ptr<Objective> inner) : inner_(std::move(inner)) {
    blocks_ = inner_->blocks();
    constants_ = inner_->constants();
  }

  std::string name() const override { return inner_->name(); }
  int num_batches() const override { return inner_->num_batches(); }
  Index num_samples() const override { return inner_->num_samples(); }
  Index activation_width() const override { return inner_->activation_width(); }
  Index batch_rows(int m) const override { return inner_->batch_rows(m); }
  double value(const Vec& w) const override { return inner_->value(w); }
  double value_grad(const Vec& w, Vec& g) const override { return inner_->value_grad(w, g); }
  double batch_value_grad(const Vec& z, int m, Vec& g) const override { return inner_->batch_value_grad(z, m, g); }
  void batch_block_grad(const Vec& z, int m, int s, VecRef g_s) const override { inner_->batch_block_grad(z, m, s, g_s); }
  void stage_forward(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out,
                     std::unique_ptr<StageCache>& cache) const override {
    inner_->stage_forward(s, m, in, w_s, out, cache);
  }
  double loss_forward_backward(int m, const Mat& last, Mat& grad_last) const override {
    return inner_->loss_forward_backward(m, last, grad_last);
  }
  void stage_backward(int s, int m, const Mat& grad_out, ConstVecRef w_s, const StageCache* cache, VecRef grad_w_s,
                      Mat& grad_in) const override {
    inner_->stage_backward(s, m, grad_out, w_s, cache, grad_w_s, grad_in);
  }
  Mat input_activation(int m) const override { return inner_->input_activation(m); }

 protected:
  std::unique_ptr<Objective> inner_;
};

}  // namespace stale::test
