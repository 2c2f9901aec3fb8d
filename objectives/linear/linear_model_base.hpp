#pragma once
// What the dense (linear_model_cpu.hpp) and CSR (linear_model_cpu_sparse.hpp) twins of the
// linear models share, written once: the data, λ and the nonconvex regulariser r, the facts of
// the batch partition, and f and ∇f over all rows,
//
//   f(w) = Σ_i c_i ℓ(x_iᵀw, y_i) + (λ/2)‖w‖² + r(w),   ∇f(w) = Xᵀ(c ⊙ ℓ'(Xw, y)) + λw + ∇r(w),
//
// from the twin's own two products (Twin::multiply: X v, Twin::multiply_transpose: Xᵀ u), and
// the pipeline's loss head, so that the twins differ only in how they walk X (CRTP: no virtual
// call per product).
#include <memory>
#include <string>
#include <utility>

#include "objectives/linear/linear_data.hpp"
#include "objectives/linear/linear_loss_head.hpp"
#include "objectives/linear/nonconvex_regularizer.hpp"
#include "objectives/objective.hpp"
#include "src/core/error.hpp"

namespace stale {

template <class Loss, class Twin>
class LinearModelBase : public Objective {
 public:
  std::string name() const override { return Loss::name; }
  int num_batches() const override { return data_->num_batches(); }
  Index num_samples() const override { return data_->n(); }
  Index batch_rows(int m) const override { return data_->batch_offsets[m + 1] - data_->batch_offsets[m]; }

  double value(const Vec& w) const override { return reg_.added_to(convex_value(w), w); }
  double value_grad(const Vec& w, Vec& grad) const override {
    const double convex = convex_value_grad(w, grad);
    return reg_.added_to(convex, w, grad);
  }
  // the convex part alone (data term + (λ/2)‖w‖², without r): what the constants' solvers
  // minimise (linear_constants.hpp, linear_constants_sparse.hpp); value and value_grad when r = 0
  double convex_value(const Vec& w) const {
    Vec a;
    twin().multiply(w, a);
    double f = 0;
    for (Index i = 0; i < a.size(); ++i) f += data_->weight(i) * Loss::value(a(i), data_->y(i));
    return f + 0.5 * l2_ * w.squaredNorm();
  }
  double convex_value_grad(const Vec& w, Vec& grad) const {
    Vec a;
    twin().multiply(w, a);
    double f = 0;
    Vec r(a.size());
    for (Index i = 0; i < a.size(); ++i) {
      f += data_->weight(i) * Loss::value(a(i), data_->y(i));
      r(i) = data_->weight(i) * Loss::deriv(a(i), data_->y(i));
    }
    twin().multiply_transpose(r, grad);
    if (l2_ != 0) grad += l2_ * w;
    return f + 0.5 * l2_ * w.squaredNorm();
  }

  // the pipeline's loss head (linear_loss_head.hpp: one definition for both twins and every
  // column of an ensemble)
  double loss_forward_backward(int m, const Mat& last, Mat& grad_last) const override {
    STALE_CHECK(last.cols() == 1, "one activation column");
    double loss = 0;
    linear_loss_head<Loss>(*data_, batch_rows(m), m, last, grad_last, &loss);
    return loss;
  }

  // the dense twin's tracker moves ∇f per block change (its Hessian); the CSR twin's full pass
  // is O(nnz + d), the order of the dense logistic tracker's Xᵀr: log.exact_mean = "auto"
  // keeps the exact mean on both
  bool cheap_exact_metrics() const override { return true; }

  const LinearData& data() const { return *data_; }
  double l2() const { return l2_; }
  const NonconvexRegularizer& nonconvex_reg() const { return reg_; }

 protected:
  LinearModelBase(std::shared_ptr<const LinearData> data, int stages, double l2, NonconvexRegularizer reg)
      : data_(std::move(data)), l2_(l2), reg_(reg) {
    blocks_ = BlockPartition(data_->d(), stages);
  }

  std::shared_ptr<const LinearData> data_;
  double l2_;
  NonconvexRegularizer reg_;

 private:
  const Twin& twin() const { return static_cast<const Twin&>(*this); }
};

}  // namespace stale
