#pragma once
// The loss head of a linear model's pipeline (Objective::loss_forward_backward) for mini-batch
// m: the mean loss of the last stage's activations and its gradient, one definition for the
// dense and the CSR twin so that their stage-wise pipelines agree.
#include "objectives/linear_data.hpp"
#include "src/core/types.hpp"

namespace stale {

template <class Loss>
double linear_loss_head(const LinearData& data, Index rows, int m, const Mat& last, Mat& grad_last) {
  const auto ym = data.y.segment(data.batch_offsets[m], rows);
  const double inv_b = 1.0 / static_cast<double>(ym.size());
  grad_last.resize(last.rows(), 1);
  double f = 0;
  for (Index i = 0; i < ym.size(); ++i) {
    f += Loss::value(last(i, 0), ym(i));
    grad_last(i, 0) = Loss::deriv(last(i, 0), ym(i)) * inv_b;
  }
  return f * inv_b;
}

}  // namespace stale
