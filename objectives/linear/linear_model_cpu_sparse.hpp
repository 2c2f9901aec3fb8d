#pragma once
// CPU twin of the linear models over a CSR data matrix (objective.storage = "sparse"): the same
// functions as LinearModelCpu (docs/theory.md §7; stage s adds X_b[:, slice_s] w^(s) to the
// running activation, the loss head applies ℓ, λ w^(s) and the nonconvex regulariser's
// ∇r(w^(s)) enter each stage's backward), for data
// whose dense X would not fit (a LIBSVM file with millions of features and few nonzeros).
//
// Every product walks the nonzeros: a stage's forward and backward touch the nonzeros of the
// batch's rows that fall in the block's columns (found by binary search in each row's sorted
// column indices), a full evaluation is one O(nnz + d) pass. Nothing d × d is ever formed, so
// the exact metrics are that full pass at each read (IterateTracker below), not the dense
// twin's Hessian update. Results equal the dense twin's to rounding (sums taken in another
// order: tests/objectives/test_sparse_linear_models.cpp holds them to 1e-12), and within this
// twin the stage-wise pipeline gradient equals the batch gradient bit for bit, as in the
// dense one (PipeDream with stashing ≡ RPD replaying its delays relies on it).
//
// Single-threaded and in a fixed order, so results never depend on the thread count; a sweep
// parallelises across runs.
#include <memory>

#include "objectives/linear/linear_data.hpp"
#include "objectives/linear/linear_losses.hpp"
#include "objectives/linear/linear_model_base.hpp"
#include "objectives/linear/nonconvex_regularizer.hpp"
#include "objectives/objective.hpp"

namespace stale {

template <class Loss>
class LinearModelCpuSparse final : public LinearModelBase<Loss, LinearModelCpuSparse<Loss>> {
  using Base = LinearModelBase<Loss, LinearModelCpuSparse<Loss>>;
  using Base::data_, Base::l2_, Base::reg_, Base::blocks_, Base::constants_;

 public:
  LinearModelCpuSparse(std::shared_ptr<const LinearData> data, int stages, double l2, NonconvexRegularizer reg = {});
  using Base::batch_rows;

  double batch_value_grad(const Vec& z, int m, Vec& grad) const override;
  void batch_block_grad(const Vec& z, int m, int s, VecRef g_s) const override;

  void stage_forward(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out,
                     std::unique_ptr<StageCache>& cache) const override;
  void stage_backward(int s, int m, const Mat& grad_out, ConstVecRef w_s, const StageCache* cache,
                      VecRef grad_w_s, Mat& grad_in) const override;

  std::unique_ptr<IterateTracker> make_tracker(const Vec& w) const override;
  std::string description() const override { return data_->description + " (CSR)"; }

  const SparseRowMat& X() const { return data_->X_sparse; }
  // c: the convex part's constants; constants() are f's own (nonconvex_constants)
  void set_constants(const ObjectiveConstants& c) { constants_ = nonconvex_constants(c, reg_); }

  // out = X v and out = Xᵀ u over all rows (the constants' solvers use them too)
  void multiply(const Vec& v, Vec& out) const;
  void multiply_transpose(const Vec& u, Vec& out) const;

 private:
  // Σ_j X_ij v_{j − lo} over row i's nonzeros with column j in [lo, lo + len)
  double row_slice_dot(Index i, Index lo, Index len, const double* v) const;
  // g[j − lo] += r X_ij over the same nonzeros
  void row_slice_axpy(Index i, Index lo, Index len, double r, double* g) const;
  // the batch's activation at z, summed stage by stage exactly as stage_forward does
  Vec staged_activation(int m, const Vec& z) const;
  // ∇_{w^(s)} of the batch's data term for the per-row derivatives r (the batch's rows), + λ z_s
  // (+ ∇r(z_s))
  void block_grad_from(int m, int s, const Vec& r, ConstVecRef z_s, VecRef g_s) const;
};

using LeastSquaresCpuSparse = LinearModelCpuSparse<SquaredLoss>;
using LogisticCpuSparse = LinearModelCpuSparse<LogisticLoss>;

}  // namespace stale
