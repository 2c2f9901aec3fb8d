#pragma once
// The loss head of a linear model's pipeline (Objective::loss_forward_backward and its
// ensemble form) for mini-batch m: the mean loss of the last stage's activations and its
// gradient, one definition for the dense and the CSR twin and for every column of an ensemble,
// so that their stage-wise pipelines agree and a column is its run alone bit for bit.
#include "objectives/linear_data.hpp"
#include "src/core/types.hpp"

namespace stale {

// last: b × P activations of P points; losses[p] gets point p's loss
template <class Loss>
void linear_loss_head(const LinearData& data, Index rows, int m, const Mat& last, Mat& grad_last, double* losses) {
  const auto ym = data.y.segment(data.batch_offsets[m], rows);
  const double inv_b = 1.0 / static_cast<double>(ym.size());
  grad_last.resize(last.rows(), last.cols());
  for (Index p = 0; p < last.cols(); ++p) {
    double f = 0;
    for (Index i = 0; i < ym.size(); ++i) {
      f += Loss::value(last(i, p), ym(i));
      grad_last(i, p) = Loss::deriv(last(i, p), ym(i)) * inv_b;
    }
    losses[p] = f * inv_b;
  }
}

}  // namespace stale
