#pragma once
// CPU twin (Eigen + OpenMP, float64) of the linear models: least squares and logistic
// regression as S-stage pipelines (docs/theory.md §7). Stage s adds X_b[:, slice_s] w^(s) to the
// running activation; the loss head applies ℓ; the (λ/2)‖w‖² term enters each stage's
// backward as λ w^(s), and so does the nonconvex regulariser's ∇r(w^(s)) when
// objective.nonconvex_reg > 0 (objectives/linear/nonconvex_regularizer.hpp).
#include <memory>
#include <mutex>
#include <vector>

#include "objectives/linear/linear_data.hpp"
#include "objectives/linear/linear_losses.hpp"
#include "objectives/linear/linear_model_base.hpp"
#include "objectives/linear/nonconvex_regularizer.hpp"
#include "objectives/objective.hpp"
#include "src/core/block_product.hpp"

namespace stale {

// X w and Xᵀ v, split across OpenMP threads when the matrix is large enough to pay
void gemv_parallel(const Mat& X, const Vec& w, Vec& out);
void gemv_t_parallel(const Mat& X, const Vec& v, Vec& out);

template <class Loss>
class LinearModelCpu final : public LinearModelBase<Loss, LinearModelCpu<Loss>> {
  using Base = LinearModelBase<Loss, LinearModelCpu<Loss>>;
  using Base::data_, Base::l2_, Base::reg_, Base::blocks_, Base::constants_;

 public:
  LinearModelCpu(std::shared_ptr<const LinearData> data, int stages, double l2, NonconvexRegularizer reg = {});
  using Base::batch_rows, Base::dim, Base::num_batches, Base::stages, Base::value_grad, Base::convex_value_grad;

  // the products f and ∇f over all rows are made of (linear_model_base.hpp)
  void multiply(const Vec& v, Vec& out) const { gemv_parallel(data_->X, v, out); }
  void multiply_transpose(const Vec& u, Vec& out) const { gemv_t_parallel(data_->X, u, out); }

  double batch_value_grad(const Vec& z, int m, Vec& grad) const override;
  void batch_block_grad(const Vec& z, int m, int s, VecRef g_s) const override;
  void batch_block_grad_blocks(const std::vector<const double*>& blocks, int m, int s, VecRef g_s) const override;

  void stage_forward(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out,
                     std::unique_ptr<StageCache>& cache) const override;
  void stage_backward(int s, int m, const Mat& grad_out, ConstVecRef w_s, const StageCache* cache,
                      VecRef grad_w_s, Mat& grad_in) const override;

  // Batched fast paths. Columns that share a mini-batch become two GEMMs (X_m Z_g, then
  // X_mᵀ R); a column alone in its batch is batch_value_grad itself (bit-identical to the
  // per-point loop), with such columns spread over OpenMP threads.
  void batch_grad_many(const Mat& Z, const std::vector<int>& batches, Mat& G) const override;
  // X Z and Xᵀ R as two GEMMs; P = 1 is value_grad itself
  void value_grad_many(const Mat& Z, Mat& G, Vec& values) const override;

  std::unique_ptr<IterateTracker> make_tracker(const Vec& w) const override;

  // Lockstep ensembles (linear_model_cpu_ensemble.cpp): a linear stage is X_s W_s for P
  // columns at once, one GEMM (P = 1: the single-point functions above, bit for bit)
  void batch_block_grad_cols(const std::vector<const double*>& blocks, const std::vector<int>& cols, int m, int s,
                             Mat& G) const override;
  void stage_forward_cols(int s, int m, const Mat& in, const Mat& W_s, Mat& out,
                          std::vector<std::unique_ptr<StageCache>>& caches) const override;
  void loss_forward_backward_cols(int m, const Mat& last, Index P, Mat& grad_last, Vec& losses) const override;
  void stage_backward_cols(int s, int m, const Mat& grad_out, const Mat& W_s,
                           const std::vector<std::unique_ptr<StageCache>>& caches, Mat& grad_W,
                           Mat& grad_in) const override;
  std::unique_ptr<EnsembleTracker> make_ensemble_tracker(const Mat& W) const override;
  bool batches_columns() const override { return true; }
  // whether the tracker keeps ∇f through the Hessian (least squares with H at hand)
  bool tracks_through_hessian() const;

  // H = Xᵀ diag(c) X + λI, the exact Hessian of the convex part for least squares (the data
  // part's Gram matrix for logistic); computed once on first use, safely when runs of an in-process
  // sweep share the objective
  const Mat& gram() const;
  // the trackers' H[:, s] Δ_s for one column or an ensemble's P (src/core/block_product.hpp):
  // gram() with each stage's columns packed once (d ≤ 2048), bit for bit Eigen's GEMV
  const ColumnBlockProducts& gram_blocks() const;
  // the same for X[:, s] Δ_s (the activation route), read in place
  const ColumnBlockProducts& data_blocks() const { return data_blocks_; }
  // the key of this data, loss and λ in the on-disk cache (constants, Gram matrix): the data's
  // content hashed once per objective, not once per record
  uint64_t cache_key() const;
  // c: the convex part's constants (linear_constants.hpp); constants() are f's own, which
  // differ from c only when the nonconvex regulariser is on (nonconvex_constants)
  void set_constants(const ObjectiveConstants& c) {
    convex_constants_ = c;
    constants_ = nonconvex_constants(c, reg_);
  }
  // the convex part's f_*, w_* and L: the trackers' closed form H (w − w_*) needs them
  const ObjectiveConstants& convex_constants() const { return convex_constants_; }

 private:
  // mini-batch m's rows of X: from the batch-major copy when there is one
  using BatchView = Eigen::Map<const Mat, 0, Eigen::OuterStride<>>;
  BatchView batch_X(int m) const {
    const Index off = data_->batch_offsets[m], rows = batch_rows(m);
    if (by_batch_) return BatchView(batch_copy(m), rows, dim(), Eigen::OuterStride<>(rows));
    return BatchView(data_->X.data() + off, rows, dim(), Eigen::OuterStride<>(data_->X.rows()));
  }
  Vec staged_activation(int m, const Vec& z) const;
  void block_grad_from_activation(Vec r, const double* z_s, int m, int s, VecRef g_s) const;
  // X once more, batch after batch, each batch's rows × d block column-major and contiguous: a
  // mini-batch product reads one stream instead of b values from each of d columns n apart
  // (its cache lines were most of an RPD update's activation at S = 128). Kept while it takes
  // at most kMaxBatchCopyBytes; the same values, so the same results either way. Each batch is
  // copied on its first use (a short run would otherwise pay the whole copy's page faults).
  static constexpr size_t kMaxBatchCopyBytes = size_t{64} << 20;
  std::unique_ptr<double[]> by_batch_;
  std::unique_ptr<std::once_flag[]> by_batch_once_;
  const double* batch_copy(int m) const;
  ObjectiveConstants convex_constants_;
  mutable Mat gram_;
  mutable std::once_flag gram_once_;
  ColumnBlockProducts data_blocks_;
  mutable ColumnBlockProducts gram_blocks_;
  mutable std::once_flag gram_blocks_once_;
  mutable uint64_t cache_key_ = 0;
  mutable std::once_flag cache_key_once_;
};

using LeastSquaresCpu = LinearModelCpu<SquaredLoss>;
using LogisticCpu = LinearModelCpu<LogisticLoss>;

}  // namespace stale
