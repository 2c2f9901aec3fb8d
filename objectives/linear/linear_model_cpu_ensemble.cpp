// The linear models' CPU twin over P columns at once: the lockstep-ensemble calls
// (docs/design.md "Ensembles") and the one iterate tracker, of which a lone run's is the
// one-column case. P runs that share data, schedule and random streams advance together:
//
//   stage s forward:   A_out = A_in + X_s W_s          (b × d_s)(d_s × P)
//   stage s backward:  G_s   = X_sᵀ Δ + λ W_s (+ ∇r(W_s)),  Δ_in = Δ
//   mini-batch block gradient at P mixed points Z:  G_s = X_m[:, s]ᵀ ℓ'(X_m Z) / b + λ Z_s (+ ∇r(Z_s))
//   metrics: ∇f moved by H[:, s] ΔW_s (least squares) or the activations by X[:, s] ΔW_s; the
//            nonconvex regulariser r (objectives/linear/nonconvex_regularizer.hpp) added at each read
//
// The metrics products (d × d_s against P columns, the largest by far) are one pass of
// src/core/block_product.hpp's kernel over H or X for all columns, which sums every column
// as it sums one. The mini-batch products (b × d_s, b ≈ 10) sum each column exactly as the
// single-point code does (the activations of all columns in one pass, then each column's
// block gradient through the single-point code): so a least-squares column is its separate
// run bit for bit (tests/run/test_ensemble.cpp). On the activation route (logistic) the full
// gradient Xᵀ ℓ'(X W) of P > 1 columns is one GEMM, which sums in another order than the
// threaded GEMV a lone run uses (its rows split over the threads): there a column agrees with
// its run to rounding.
#include <algorithm>

#include "objectives/linear/linear_loss_head.hpp"
#include "objectives/linear/linear_model_cpu.hpp"
#include "objectives/linear/linear_stage_product.hpp"
#include "src/core/error.hpp"

namespace stale {

template <class Loss>
void LinearModelCpu<Loss>::batch_block_grad_cols(const std::vector<const double*>& blocks, const std::vector<int>& cols,
                                                 int m, int s, Mat& G) const {
  STALE_CHECK(static_cast<int>(blocks.size()) == blocks_.stages(), "one pointer per block");
  // one column: the single-point code, reading the point in place (a lone run)
  if (cols.size() == 1) return Objective::batch_block_grad_cols(blocks, cols, m, s, G);
  const Index n = static_cast<Index>(cols.size());
  G.resize(blocks_.size(s), n);
  // the columns' mixed points gathered once, every column's activation in one pass (each
  // summed as staged_activation sums it), then each column's block gradient by the
  // single-point code
  thread_local Mat Z;
  Z.resize(dim(), n);
  for (Index c = 0; c < n; ++c)
    for (int i = 0; i < blocks_.stages(); ++i)
      Z.col(c).segment(blocks_.offset(i), blocks_.size(i)) =
          Eigen::Map<const Vec>(blocks[static_cast<size_t>(i)] + cols[static_cast<size_t>(c)] * blocks_.size(i), blocks_.size(i));
  const auto Xm = batch_X(m);
  Mat A = Mat::Zero(Xm.rows(), n);
  add_products_in_column_order(Xm, Z.data(), Z.rows(), A.data(), A.rows(), n);
  for (Index c = 0; c < n; ++c) block_grad_from_activation(A.col(c), Z.col(c).data() + blocks_.offset(s), m, s, G.col(c));
}

template <class Loss>
void LinearModelCpu<Loss>::stage_forward_cols(int s, int m, const Mat& in, const Mat& W_s, Mat& out,
                                              std::vector<std::unique_ptr<StageCache>>& caches) const {
  const Index P = W_s.cols();
  STALE_CHECK(in.cols() == P, "one activation column per point");
  caches.clear();  // a linear stage keeps nothing for its backward pass
  const auto Xs = batch_X(m).middleCols(blocks_.offset(s), blocks_.size(s));
  out = in;
  add_products_in_column_order(Xs, W_s.data(), W_s.rows(), out.data(), out.rows(), P);  // each column as stage_forward
}

template <class Loss>
void LinearModelCpu<Loss>::loss_forward_backward_cols(int m, const Mat& last, Index P, Mat& grad_last,
                                                      Vec& losses) const {
  STALE_CHECK(last.cols() == P, "one activation column per point");
  losses.resize(P);
  linear_loss_head<Loss>(*data_, batch_rows(m), m, last, grad_last, losses.data());
}

template <class Loss>
void LinearModelCpu<Loss>::stage_backward_cols(int s, int m, const Mat& grad_out, const Mat& W_s,
                                               const std::vector<std::unique_ptr<StageCache>>& caches, Mat& grad_W,
                                               Mat& grad_in) const {
  const Index P = W_s.cols();
  STALE_CHECK(grad_out.cols() == P, "one column per point");
  grad_W.resize(blocks_.size(s), P);
  const auto Xs = batch_X(m).middleCols(blocks_.offset(s), blocks_.size(s));
  Vec r;
  for (Index p = 0; p < P; ++p) {
    r = grad_out.col(p);  // a plain vector: the GEMV stage_backward runs
    grad_W.col(p).noalias() = Xs.transpose() * r;
  }
  if (l2_ != 0) grad_W += l2_ * W_s;
  if (reg_.active()) reg_.add_gradient_cols(W_s, grad_W);
  grad_in = grad_out;
}

namespace {

// The one iterate tracker of the linear models, over P columns (a lone run: P = 1). It keeps
// f and ∇f current under single-block changes without an O(n·d) pass per change.
// Changes are accumulated per block and column (Σ of pending deltas) and applied when a value is asked
// for, so the cost follows how often metrics are read, never exceeding one full evaluation:
//  - least squares with the Hessian H at hand (d ≤ 4096): G += H[:, s] Δ_s (O(d·d_s) per
//    column), and f = f_* + ½ (w − w_*)ᵀ g needs no residual at all;
//  - otherwise the activations A = XW move by X[:, s] Δ_s (O(n·d_s)); f is O(n) from A and
//    the gradient Xᵀ(c ∘ ℓ'(A)) + λW is recomputed when asked.
// Both routes track the convex part (its f_* and w_* in the closed form); the nonconvex
// regulariser, coordinate-wise, is added from the tracked iterate in O(d) at each read, so the
// value and ∇f stay exact (r(w) and ∇r(w) are evaluated, not moved). Pending changes are
// applied, for every column that has one, as one product; a column that stops changing (a
// diverged run, frozen) costs nothing. A column is recomputed from scratch every kResync
// applied changes, so rounding drift stays at machine level.
//
// Columns live in slots: the columns that changed are moved to the leading slots before a
// product, so the product runs in place on the first c slots. Gathering them into copies
// instead (every update once a column had diverged: d × c values out and back per block)
// was a fifth of an ensemble's tracker time. Each column's sums do not depend on its slot
// (src/core/block_product.hpp). G_ holds the convex part's gradients; the nonconvex
// regulariser's value and gradient are added from W_ when read.
template <class Loss>
class LinearTracker final : public EnsembleTracker {
  static constexpr int kResync = 1024;

 public:
  LinearTracker(const LinearModelCpu<Loss>& f, const Mat& W)
      : f_(f), hessian_(f.tracks_through_hessian()), W_(W), P_(static_cast<int>(W.cols())) {
    const auto& B = f.blocks();
    for (int s = 0; s < B.stages(); ++s) {
      pending_.push_back(Mat::Zero(B.size(s), P_));
      has_.emplace_back(P_, 0);
    }
    changes_.assign(P_, 0);
    grad_dirty_.assign(P_, 1);
    resync_.assign(P_, 0);
    slot_.resize(P_);
    column_.resize(P_);
    for (int p = 0; p < P_; ++p) slot_[p] = column_[p] = p;
    G_.setZero(f.dim(), P_);
    if (!hessian_) A_.setZero(f.data().X.rows(), P_);
    std::vector<int> all(P_);
    for (int p = 0; p < P_; ++p) all[p] = p;
    recompute(all);
  }

  int columns() const override { return P_; }

  void block_changed(int p, int s, ConstVecRef delta) override {
    const auto& B = f_.blocks();
    const int q = slot_[p];
    W_.col(q).segment(B.offset(s), B.size(s)) += delta;
    if (has_[s][q]) pending_[s].col(q) += delta;
    else pending_[s].col(q) = delta;  // an applied change is not zeroed: the first one overwrites it
    has_[s][q] = 1;
    any_pending_ = true;
  }

  double value(int p) override {
    double v = convex_value(p);
    if (f_.nonconvex_reg().active()) v += f_.nonconvex_reg().value(W_.col(slot_[p]));
    return v;
  }

  double gradient_sq_norm(int p) override {
    refresh_gradient();
    if (!f_.nonconvex_reg().active()) return G_.col(slot_[p]).squaredNorm();
    return gradient(p).squaredNorm();
  }

  Vec gradient(int p) override {
    refresh_gradient();
    const int q = slot_[p];
    Vec g = G_.col(q);
    if (f_.nonconvex_reg().active()) f_.nonconvex_reg().add_gradient(W_.col(q), g);
    return g;
  }

  // column p's checkpoint: iterate, activations, gradient, pending block changes and counters
  // (the layout a lone run's tracker wrote before it became this one's one-column case).
  // Restored into the column's slot: a column's sums do not depend on its slot.
  void save(int p, StateBag& b) const override {
    const int q = slot_[p];
    const auto& B = f_.blocks();
    b.put("w", Vec(W_.col(q)));
    b.put("a", hessian_ ? Vec() : Vec(A_.col(q)));
    b.put("g", Vec(G_.col(q)));
    std::vector<int64_t> flags;
    for (int s = 0; s < B.stages(); ++s) {
      b.put("pending/" + std::to_string(s), has_[s][q] ? Vec(pending_[s].col(q)) : Vec(Vec::Zero(B.size(s))));
      flags.push_back(has_[s][q] ? 1 : 0);
    }
    b.put_ints("has_pending", flags);
    b.put_ints("counters", {changes_[q], (hessian_ || grad_dirty_[q]) ? 0 : 1});
  }
  void restore(int p, const StateBag& b) override {
    const int q = slot_[p];
    const auto& B = f_.blocks();
    auto put = [](auto&& col, const Vec& v, const char* what) {
      if (v.size() == 0) return false;  // not computed yet (kept lazily)
      if (v.size() != col.size())
        throw UserError(std::string("checkpoint: the tracker's ") + what + " has " + std::to_string(v.size()) +
                        " values where this objective has " + std::to_string(col.size()) +
                        ": the data's shape changed since the checkpoint; rerun from the start instead");
      col = v;
      return true;
    };
    put(W_.col(q), b.get_vec("w"), "iterate");
    if (!hessian_) put(A_.col(q), b.get_vec("a"), "activations Xw");
    const bool have_g = put(G_.col(q), b.get_vec("g"), "gradient");
    const auto& flags = b.get_ints("has_pending");
    for (int s = 0; s < B.stages(); ++s) {
      has_[s][q] = flags.at(static_cast<size_t>(s)) != 0 ? 1 : 0;
      if (has_[s][q]) put(pending_[s].col(q), b.get_vec("pending/" + std::to_string(s)), "pending block change");
      any_pending_ = any_pending_ || has_[s][q];
    }
    const auto& c = b.get_ints("counters");
    changes_[q] = static_cast<int>(c.at(0));
    grad_dirty_[q] = hessian_ ? 0 : ((c.at(1) != 0 && have_g) ? 0 : 1);
  }

 private:
  double convex_value(int p) {
    apply_pending();
    const int q = slot_[p];
    const auto& c = f_.convex_constants();
    if (hessian_) return c.f_star + 0.5 * (W_.col(q) - *c.w_star).dot(G_.col(q));
    const auto& d = f_.data();
    double v = 0;
    for (Index i = 0; i < A_.rows(); ++i) v += d.weight(i) * Loss::value(A_(i, q), d.y(i));
    return v + 0.5 * f_.l2() * W_.col(q).squaredNorm();
  }

  // exchange the columns in slots a and b
  void swap_slots(int a, int b) {
    W_.col(a).swap(W_.col(b));
    G_.col(a).swap(G_.col(b));
    if (!hessian_) A_.col(a).swap(A_.col(b));
    for (size_t s = 0; s < pending_.size(); ++s) {
      pending_[s].col(a).swap(pending_[s].col(b));
      std::swap(has_[s][a], has_[s][b]);
    }
    std::swap(changes_[a], changes_[b]);
    std::swap(grad_dirty_[a], grad_dirty_[b]);
    std::swap(resync_[a], resync_[b]);
    std::swap(column_[a], column_[b]);
    slot_[column_[a]] = a;
    slot_[column_[b]] = b;
  }

  // move the slots in `slots` (ascending) to the front, in that order; slots becomes 0..c-1.
  // Slot i < slots[i] holds a column outside the set (the set's earlier members are in 0..i-1).
  void to_front(std::vector<int>& slots) {
    for (size_t i = 0; i < slots.size(); ++i)
      if (slots[i] != static_cast<int>(i)) swap_slots(static_cast<int>(i), slots[i]), slots[i] = static_cast<int>(i);
  }

  // Y[:, slots] = M · W[:, slots] (minus w_* on the Hessian route), summed as a full
  // tracker's reset sums it
  void recompute(const std::vector<int>& slots) {
    if (slots.empty()) return;
    const Index c = static_cast<Index>(slots.size());
    Mat D(f_.dim(), c);
    for (Index j = 0; j < c; ++j) D.col(j) = W_.col(slots[j]);
    const Mat& M = hessian_ ? f_.gram() : f_.data().X;
    if (hessian_) D.colwise() -= *f_.convex_constants().w_star;
    Mat R = Mat::Zero(M.rows(), c);
    if (!hessian_ && P_ == 1) {
      // a lone run: X w with its rows split over the threads (the run has no other columns
      // to spread); its sums are the full-evaluation path's (linear_model_cpu.cpp)
      Vec a;
      gemv_parallel(M, Vec(D.col(0)), a);
      R.col(0) = a;
    } else {
      add_block_product(M.data(), M.rows(), M.rows(), M.cols(), D.data(), D.rows(), R.data(), R.rows(), c);
    }
    Mat& Y = hessian_ ? G_ : A_;
    for (Index j = 0; j < c; ++j) {
      Y.col(slots[j]) = R.col(j);
      if (!hessian_) grad_dirty_[slots[j]] = 1;
    }
  }

  // (a value and a gradient norm read at one row both ask: the second finds nothing pending,
  // which the flag answers without a pass over the stages and slots — a lone run's row was
  // 1.9 % slower in instructions than the lone tracker this class replaced before it)
  void apply_pending() {
    if (!any_pending_) return;
    any_pending_ = false;
    const auto& B = f_.blocks();
    for (int s = 0; s < B.stages(); ++s) {
      cols_.clear();
      for (int q = 0; q < P_; ++q) {
        if (!has_[s][q]) continue;
        has_[s][q] = 0;
        if (!resync_[q] && ++changes_[q] >= kResync) resync_[q] = 1;
        if (!resync_[q]) cols_.push_back(q);  // a resynced column is recomputed below
      }
      if (cols_.empty()) continue;
      to_front(cols_);
      const Index c = static_cast<Index>(cols_.size());
      const Mat& D = pending_[s];
      if (hessian_) {
        f_.gram_blocks().add(s, D.data(), D.rows(), G_.data(), G_.rows(), c);
      } else {
        f_.data_blocks().add(s, D.data(), D.rows(), A_.data(), A_.rows(), c);
        for (Index q = 0; q < c; ++q) grad_dirty_[q] = 1;
      }
    }
    cols_.clear();
    for (int q = 0; q < P_; ++q)
      if (resync_[q]) cols_.push_back(q), changes_[q] = 0, resync_[q] = 0;  // resync_ is all 0 between calls
    recompute(cols_);
  }

  void refresh_gradient() {
    apply_pending();
    if (hessian_) return;
    std::vector<int> slots;
    for (int q = 0; q < P_; ++q)
      if (grad_dirty_[q]) slots.push_back(q);
    if (slots.empty()) return;
    const auto& d = f_.data();
    Mat R(A_.rows(), static_cast<Index>(slots.size()));
    for (size_t j = 0; j < slots.size(); ++j)
      for (Index i = 0; i < A_.rows(); ++i)
        R(i, static_cast<Index>(j)) = d.weight(i) * Loss::deriv(A_(i, slots[j]), d.y(i));
    Mat Gc;
    if (P_ == 1) {
      Vec g;
      gemv_t_parallel(d.X, Vec(R.col(0)), g);  // a lone run: Xᵀ r over the threads, as above
      Gc = g;
    } else {
      Gc.noalias() = d.X.transpose() * R;
    }
    for (size_t j = 0; j < slots.size(); ++j) {
      G_.col(slots[j]) = Gc.col(static_cast<Index>(j));
      if (f_.l2() != 0) G_.col(slots[j]) += f_.l2() * W_.col(slots[j]);
      grad_dirty_[slots[j]] = 0;
    }
  }

  const LinearModelCpu<Loss>& f_;
  bool hessian_;
  Mat W_, G_, A_;  // points, gradients, activations X W (activation route), one slot each
  int P_;
  std::vector<int> slot_;                // [column] its slot
  std::vector<int> column_;              // [slot] its column
  std::vector<Mat> pending_;             // [block] d_s × P: changes not yet applied, by slot
  std::vector<std::vector<char>> has_;   // [block][slot]: whether pending holds a change
  std::vector<int> changes_;             // [slot] applied changes since the last recompute
  std::vector<char> grad_dirty_;         // [slot] activation route: gradient to recompute
  std::vector<char> resync_;             // apply_pending's scratch: slots recomputed this time
  std::vector<int> cols_;                // apply_pending's scratch: slots taking part
  bool any_pending_ = false;             // some has_ entry is set
};

}  // namespace

template <class Loss>
std::unique_ptr<EnsembleTracker> LinearModelCpu<Loss>::make_ensemble_tracker(const Mat& W) const {
  return std::make_unique<LinearTracker<Loss>>(*this, W);
}

#define STALE_INSTANTIATE_ENSEMBLE(Loss)                                                                          \
  template void LinearModelCpu<Loss>::batch_block_grad_cols(const std::vector<const double*>&, const std::vector<int>&, \
                                                            int, int, Mat&) const;                                \
  template void LinearModelCpu<Loss>::stage_forward_cols(int, int, const Mat&, const Mat&, Mat&,                 \
                                                         std::vector<std::unique_ptr<StageCache>>&) const;      \
  template void LinearModelCpu<Loss>::loss_forward_backward_cols(int, const Mat&, Index, Mat&, Vec&) const;     \
  template void LinearModelCpu<Loss>::stage_backward_cols(                                                      \
      int, int, const Mat&, const Mat&, const std::vector<std::unique_ptr<StageCache>>&, Mat&, Mat&) const;    \
  template std::unique_ptr<EnsembleTracker> LinearModelCpu<Loss>::make_ensemble_tracker(const Mat&) const;
STALE_INSTANTIATE_ENSEMBLE(SquaredLoss)
STALE_INSTANTIATE_ENSEMBLE(LogisticLoss)
#undef STALE_INSTANTIATE_ENSEMBLE

}  // namespace stale
