// Lockstep ensembles on the linear models' CPU twin (docs/design.md "Ensembles"). P runs that
// share data, schedule and random streams evaluate their P points with one product where a
// single run takes a matrix–vector product:
//
//   stage s forward:   A_out = A_in + X_s W_s          (b × d_s)(d_s × P)
//   stage s backward:  G_s   = X_sᵀ Δ + λ W_s,  Δ_in = Δ
//   mini-batch block gradient at P mixed points Z:  G_s = X_m[:, s]ᵀ ℓ'(X_m Z) / b + λ Z_s
//   metrics: ∇f moved by H[:, s] ΔW_s (least squares) or the activations by X[:, s] ΔW_s
//
// A GEMM sums in another order than a GEMV, so a column agrees with its separate run to
// rounding (tests/optimizers/test_ensemble.cpp states the tolerance); with P = 1 every call
// is the single-point function itself, bit for bit.
#include <algorithm>

#include "objectives/linear_model_cpu.hpp"
#include "src/core/error.hpp"

namespace stale {

template <class Loss>
void LinearModelCpu<Loss>::batch_block_grad_cols(const Mat& Z, int m, int s, Mat& G) const {
  STALE_CHECK(Z.rows() == dim(), "Z is d × P");
  const Index P = Z.cols(), off = blocks_.offset(s), ds = blocks_.size(s);
  G.resize(ds, P);
  if (P == 1) {
    const Vec z = Z.col(0);
    batch_block_grad(z, m, s, G.col(0));
    return;
  }
  const auto Xm = batch_X(m);
  const auto ym = data_->y.segment(data_->batch_offsets[m], Xm.rows());
  Mat R;
  R.noalias() = Xm * Z;
  const double inv_b = 1.0 / static_cast<double>(Xm.rows());
  for (Index p = 0; p < P; ++p)
    for (Index i = 0; i < R.rows(); ++i) R(i, p) = Loss::deriv(R(i, p), ym(i)) * inv_b;
  G.noalias() = Xm.middleCols(off, ds).transpose() * R;
  if (l2_ != 0) G += l2_ * Z.middleRows(off, ds);
}

template <class Loss>
void LinearModelCpu<Loss>::stage_forward_cols(int s, int m, const Mat& in, const Mat& W_s, Mat& out,
                                              std::vector<std::unique_ptr<StageCache>>& caches) const {
  const Index P = W_s.cols();
  STALE_CHECK(in.cols() == P, "one activation column per point");
  caches.clear();
  caches.resize(P);  // a linear stage keeps nothing for its backward pass
  if (P == 1) return stage_forward(s, m, in, W_s.col(0), out, caches[0]);
  const auto Xs = batch_X(m).middleCols(blocks_.offset(s), blocks_.size(s));
  out = in;
  out.noalias() += Xs * W_s;
}

template <class Loss>
void LinearModelCpu<Loss>::loss_forward_backward_cols(int m, const Mat& last, Mat& grad_last, Vec& losses) const {
  const Index P = last.cols();
  losses.resize(P);
  if (P == 1) {
    losses(0) = loss_forward_backward(m, last, grad_last);
    return;
  }
  const auto ym = data_->y.segment(data_->batch_offsets[m], batch_rows(m));
  const double inv_b = 1.0 / static_cast<double>(ym.size());
  grad_last.resize(last.rows(), P);
  for (Index p = 0; p < P; ++p) {
    double f = 0;
    for (Index i = 0; i < ym.size(); ++i) {
      f += Loss::value(last(i, p), ym(i));
      grad_last(i, p) = Loss::deriv(last(i, p), ym(i)) * inv_b;
    }
    losses(p) = f * inv_b;
  }
}

template <class Loss>
void LinearModelCpu<Loss>::stage_backward_cols(int s, int m, const Mat& grad_out, const Mat& W_s,
                                               const std::vector<std::unique_ptr<StageCache>>& caches, Mat& grad_W,
                                               Mat& grad_in) const {
  const Index P = W_s.cols();
  STALE_CHECK(grad_out.cols() == P && static_cast<Index>(caches.size()) == P, "one column per point");
  grad_W.resize(blocks_.size(s), P);
  if (P == 1) return stage_backward(s, m, grad_out, W_s.col(0), caches[0].get(), grad_W.col(0), grad_in);
  const auto Xs = batch_X(m).middleCols(blocks_.offset(s), blocks_.size(s));
  grad_W.noalias() = Xs.transpose() * grad_out;
  if (l2_ != 0) grad_W += l2_ * W_s;
  grad_in = grad_out;
}

namespace {

// The trackers of P columns (objectives/linear_model_cpu.cpp's LinearTracker, P at a time):
// pending block changes are kept per column and applied, for every column that has one, as
// one product — H[:, s] ΔW_s on the Hessian route, X[:, s] ΔW_s on the activation route.
// A column that stops changing (a diverged run, frozen) costs nothing. Every column is
// recomputed from scratch after kResync applied changes, as the single tracker is.
template <class Loss>
class LinearEnsembleTracker final : public EnsembleTracker {
  static constexpr int kResync = 1024;

 public:
  LinearEnsembleTracker(const LinearModelCpu<Loss>& f, const Mat& W)
      : f_(f), hessian_(f.tracks_through_hessian()), W_(W), P_(static_cast<int>(W.cols())) {
    const auto& B = f.blocks();
    for (int s = 0; s < B.stages(); ++s) {
      pending_.push_back(Mat::Zero(B.size(s), P_));
      has_.emplace_back(P_, 0);
    }
    changes_.assign(P_, 0);
    grad_dirty_.assign(P_, 1);
    G_.setZero(f.dim(), P_);
    if (!hessian_) A_.setZero(f.data().X.rows(), P_);
    std::vector<int> all(P_);
    for (int p = 0; p < P_; ++p) all[p] = p;
    recompute(all);
  }

  int columns() const override { return P_; }

  void block_changed(int p, int s, ConstVecRef delta) override {
    const auto& B = f_.blocks();
    W_.col(p).segment(B.offset(s), B.size(s)) += delta;
    pending_[s].col(p) += delta;
    has_[s][p] = 1;
  }

  double value(int p) override {
    apply_pending();
    if (hessian_) return f_.constants().f_star + 0.5 * (W_.col(p) - *f_.constants().w_star).dot(G_.col(p));
    const auto& d = f_.data();
    double v = 0;
    for (Index i = 0; i < A_.rows(); ++i) v += d.weight(i) * Loss::value(A_(i, p), d.y(i));
    return v + 0.5 * f_.l2() * W_.col(p).squaredNorm();
  }

  double gradient_sq_norm(int p) override {
    refresh_gradient();
    return G_.col(p).squaredNorm();
  }

  Vec gradient(int p) override {
    refresh_gradient();
    return G_.col(p);
  }

 private:
  // Y[:, cols] += M · D where D holds the columns `cols` of Dfull: one GEMM in place when
  // every column takes part, else gathered and scattered
  static void add_product(Mat& Y, const Eigen::Block<const Mat, Eigen::Dynamic, Eigen::Dynamic, true>& M,
                          const Mat& Dfull, const std::vector<int>& cols) {
    if (static_cast<Index>(cols.size()) == Dfull.cols()) {
      Y.noalias() += M * Dfull;
      return;
    }
    Mat D(Dfull.rows(), static_cast<Index>(cols.size()));
    for (size_t j = 0; j < cols.size(); ++j) D.col(static_cast<Index>(j)) = Dfull.col(cols[j]);
    Mat R;
    R.noalias() = M * D;
    for (size_t j = 0; j < cols.size(); ++j) Y.col(cols[j]) += R.col(static_cast<Index>(j));
  }

  void recompute(const std::vector<int>& cols) {
    if (cols.empty()) return;
    Mat D(f_.dim(), static_cast<Index>(cols.size()));
    for (size_t j = 0; j < cols.size(); ++j) D.col(static_cast<Index>(j)) = W_.col(cols[j]);
    Mat R;
    if (hessian_) {
      D.colwise() -= *f_.constants().w_star;
      R.noalias() = f_.gram() * D;  // ∇f(w) = H (w − w_*)
      for (size_t j = 0; j < cols.size(); ++j) G_.col(cols[j]) = R.col(static_cast<Index>(j));
    } else {
      R.noalias() = f_.data().X * D;
      for (size_t j = 0; j < cols.size(); ++j) A_.col(cols[j]) = R.col(static_cast<Index>(j)), grad_dirty_[cols[j]] = 1;
    }
  }

  void apply_pending() {
    const auto& B = f_.blocks();
    std::vector<char> resync(P_, 0);
    std::vector<int> cols;
    for (int s = 0; s < B.stages(); ++s) {
      cols.clear();
      for (int p = 0; p < P_; ++p) {
        if (!has_[s][p] || resync[p]) continue;
        if (++changes_[p] >= kResync) resync[p] = 1;
        else cols.push_back(p);
      }
      if (!cols.empty()) {
        if (hessian_) {
          add_product(G_, f_.gram().middleCols(B.offset(s), B.size(s)), pending_[s], cols);
        } else {
          add_product(A_, f_.data().X.middleCols(B.offset(s), B.size(s)), pending_[s], cols);
          for (int p : cols) grad_dirty_[p] = 1;
        }
      }
      for (int p = 0; p < P_; ++p)
        if (has_[s][p] && (resync[p] || std::find(cols.begin(), cols.end(), p) != cols.end()))
          pending_[s].col(p).setZero(), has_[s][p] = 0;
    }
    std::vector<int> again;
    for (int p = 0; p < P_; ++p)
      if (resync[p]) {
        again.push_back(p);
        changes_[p] = 0;
        for (int s = 0; s < B.stages(); ++s) pending_[s].col(p).setZero(), has_[s][p] = 0;
      }
    recompute(again);
  }

  void refresh_gradient() {
    apply_pending();
    if (hessian_) return;
    std::vector<int> cols;
    for (int p = 0; p < P_; ++p)
      if (grad_dirty_[p]) cols.push_back(p);
    if (cols.empty()) return;
    const auto& d = f_.data();
    Mat R(A_.rows(), static_cast<Index>(cols.size()));
    for (size_t j = 0; j < cols.size(); ++j)
      for (Index i = 0; i < A_.rows(); ++i)
        R(i, static_cast<Index>(j)) = d.weight(i) * Loss::deriv(A_(i, cols[j]), d.y(i));
    Mat Gc;
    Gc.noalias() = d.X.transpose() * R;
    for (size_t j = 0; j < cols.size(); ++j) {
      G_.col(cols[j]) = Gc.col(static_cast<Index>(j));
      if (f_.l2() != 0) G_.col(cols[j]) += f_.l2() * W_.col(cols[j]);
      grad_dirty_[cols[j]] = 0;
    }
  }

  const LinearModelCpu<Loss>& f_;
  bool hessian_;
  Mat W_, G_, A_;  // points, gradients, activations X W (activation route), one column each
  int P_;
  std::vector<Mat> pending_;             // [block] d_s × P: changes not yet applied
  std::vector<std::vector<char>> has_;   // [block][column]: whether pending holds a change
  std::vector<int> changes_;             // [column] applied changes since the last recompute
  std::vector<char> grad_dirty_;         // [column] activation route: gradient to recompute
};

}  // namespace

template <class Loss>
std::unique_ptr<EnsembleTracker> LinearModelCpu<Loss>::make_ensemble_tracker(const Mat& W) const {
  if (W.cols() == 1) return Objective::make_ensemble_tracker(W);  // the single tracker itself
  return std::make_unique<LinearEnsembleTracker<Loss>>(*this, W);
}

#define STALE_INSTANTIATE_ENSEMBLE(Loss)                                                                          \
  template void LinearModelCpu<Loss>::batch_block_grad_cols(const Mat&, int, int, Mat&) const;                  \
  template void LinearModelCpu<Loss>::stage_forward_cols(int, int, const Mat&, const Mat&, Mat&,                 \
                                                         std::vector<std::unique_ptr<StageCache>>&) const;      \
  template void LinearModelCpu<Loss>::loss_forward_backward_cols(int, const Mat&, Mat&, Vec&) const;            \
  template void LinearModelCpu<Loss>::stage_backward_cols(                                                      \
      int, int, const Mat&, const Mat&, const std::vector<std::unique_ptr<StageCache>>&, Mat&, Mat&) const;    \
  template std::unique_ptr<EnsembleTracker> LinearModelCpu<Loss>::make_ensemble_tracker(const Mat&) const;
STALE_INSTANTIATE_ENSEMBLE(SquaredLoss)
STALE_INSTANTIATE_ENSEMBLE(LogisticLoss)
#undef STALE_INSTANTIATE_ENSEMBLE

}  // namespace stale
