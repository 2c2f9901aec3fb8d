#include "objectives/objective.hpp"

#include "src/core/error.hpp"

namespace stale {

void Objective::batch_grad_many(const Mat& Z, const std::vector<int>& batches, Mat& G) const {
  STALE_CHECK(Z.rows() == dim() && static_cast<size_t>(Z.cols()) == batches.size(), "Z is d × P, one batch per column");
  G.resize(dim(), Z.cols());
  Vec z, g;
  for (Index p = 0; p < Z.cols(); ++p) {
    z = Z.col(p);
    batch_value_grad(z, batches[p], g);
    G.col(p) = g;
  }
}

void Objective::value_grad_many(const Mat& Z, Mat& G, Vec& values) const {
  STALE_CHECK(Z.rows() == dim(), "Z is d × P");
  G.resize(dim(), Z.cols());
  values.resize(Z.cols());
  Vec z, g;
  for (Index p = 0; p < Z.cols(); ++p) {
    z = Z.col(p);
    values(p) = value_grad(z, g);
    G.col(p) = g;
  }
}

namespace {
// Fallback tracker: recompute value and gradient at the current point when asked. The point is
// the caller's own iterate (at()), read where it lies; a caller that sends block changes
// instead moves a copy of it.
class RecomputingTracker final : public IterateTracker {
 public:
  RecomputingTracker(const Objective& f, const Vec& w) : f_(f), own_(w), w_(&own_), grad_(w.size()) {}
  bool follows_deltas() const override { return false; }
  void at(const Vec& w) override {
    w_ = &w;
    fresh_ = false;
  }
  void block_changed(int s, ConstVecRef delta) override {
    if (w_ != &own_) own_ = *w_, w_ = &own_;
    f_.blocks().block(own_, s) += delta;
    fresh_ = false;
  }
  void reset(const Vec& w) override {
    own_ = w;
    w_ = &own_;
    fresh_ = false;
  }
  // value and gradient are recomputed from w, deterministically: w is the whole state
  void save(StateBag& b) const override { b.put("w", *w_); }
  void restore(const StateBag& b) override { reset(b.get_vec("w")); }
  double value() override {
    refresh();
    return value_;
  }
  const Vec& gradient() override {
    refresh();
    return grad_;
  }

 private:
  void refresh() {
    if (!fresh_) value_ = f_.value_grad(*w_, grad_), fresh_ = true;
  }
  const Objective& f_;
  Vec own_;
  const Vec* w_;
  Vec grad_;
  double value_ = 0;
  bool fresh_ = false;
};
}  // namespace

std::unique_ptr<IterateTracker> Objective::make_tracker(const Vec& w) const {
  return std::make_unique<RecomputingTracker>(*this, w);
}

void Objective::batch_block_grad_blocks(const std::vector<const double*>& blocks, int m, int s, VecRef g_s) const {
  STALE_CHECK(static_cast<int>(blocks.size()) == blocks_.stages(), "one pointer per block");
  thread_local Vec z;
  z.resize(dim());
  for (int i = 0; i < blocks_.stages(); ++i) blocks_.block(z, i) = Eigen::Map<const Vec>(blocks[i], blocks_.size(i));
  batch_block_grad(z, m, s, g_s);
}

// ---- lockstep ensembles: the defaults call the single-point functions column by column

void Objective::batch_block_grad_cols(const std::vector<const double*>& blocks, const std::vector<int>& cols, int m,
                                      int s, Mat& G) const {
  STALE_CHECK(static_cast<int>(blocks.size()) == blocks_.stages(), "one pointer per block");
  G.resize(blocks_.size(s), static_cast<Index>(cols.size()));
  // column 0 is the store's own pointers (a lone run's)
  if (cols.size() == 1 && cols[0] == 0) return batch_block_grad_blocks(blocks, m, s, G.col(0));
  thread_local std::vector<const double*> at;
  at.resize(blocks.size());
  for (size_t c = 0; c < cols.size(); ++c) {
    for (int i = 0; i < blocks_.stages(); ++i) at[static_cast<size_t>(i)] = blocks[static_cast<size_t>(i)] + cols[c] * blocks_.size(i);
    batch_block_grad_blocks(at, m, s, G.col(static_cast<Index>(c)));
  }
}

void Objective::stage_forward_cols(int s, int m, const Mat& in, const Mat& W_s, Mat& out,
                                   std::vector<std::unique_ptr<StageCache>>& caches) const {
  const Index P = W_s.cols();
  caches.resize(P);
  if (P == 1) return stage_forward(s, m, in, W_s.col(0), out, caches[0]);
  // stage 0's input slices may be narrower than activation_width() (the transformer's: none)
  const Index width = in.cols() / P;
  STALE_CHECK(in.cols() == P * width, "one activation slice per column");
  Mat slice_in, slice_out;
  for (Index p = 0; p < P; ++p) {
    slice_in = in.middleCols(p * width, width);
    stage_forward(s, m, slice_in, W_s.col(p), slice_out, caches[p]);
    if (p == 0) out.resize(slice_out.rows(), P * slice_out.cols());
    out.middleCols(p * slice_out.cols(), slice_out.cols()) = slice_out;
  }
}

void Objective::loss_forward_backward_cols(int m, const Mat& last, Index P, Mat& grad_last, Vec& losses) const {
  const Index width = last.cols() / P;
  STALE_CHECK(last.cols() == P * width, "one slice of the last activation per column");
  losses.resize(P);
  if (P == 1) {
    losses(0) = loss_forward_backward(m, last, grad_last);
    return;
  }
  grad_last.resize(last.rows(), last.cols());
  Mat slice, g;
  for (Index p = 0; p < P; ++p) {
    slice = last.middleCols(p * width, width);
    losses(p) = loss_forward_backward(m, slice, g);
    grad_last.middleCols(p * width, width) = g;
  }
}

void Objective::stage_backward_cols(int s, int m, const Mat& grad_out, const Mat& W_s,
                                    const std::vector<std::unique_ptr<StageCache>>& caches, Mat& grad_W,
                                    Mat& grad_in) const {
  const Index P = W_s.cols();
  STALE_CHECK(static_cast<Index>(caches.size()) == P, "one cache per column");
  grad_W.resize(blocks_.size(s), P);
  if (P == 1) return stage_backward(s, m, grad_out, W_s.col(0), caches[0].get(), grad_W.col(0), grad_in);
  const Index width_out = grad_out.cols() / P;
  Mat slice, g_in;
  for (Index p = 0; p < P; ++p) {
    slice = grad_out.middleCols(p * width_out, width_out);
    stage_backward(s, m, slice, W_s.col(p), caches[p].get(), grad_W.col(p), g_in);
    if (p == 0) grad_in.resize(g_in.rows(), P * g_in.cols());
    grad_in.middleCols(p * g_in.cols(), g_in.cols()) = g_in;
  }
}

namespace {
// P single trackers side by side: the ensemble tracker of an objective without a batched one
class SeparateTrackers final : public EnsembleTracker {
 public:
  SeparateTrackers(const Objective& f, const Mat& W) {
    Vec w;
    for (Index p = 0; p < W.cols(); ++p) {
      w = W.col(p);
      trackers_.push_back(f.make_tracker(w));
    }
  }
  int columns() const override { return static_cast<int>(trackers_.size()); }
  void block_changed(int p, int s, ConstVecRef delta) override { trackers_[p]->block_changed(s, delta); }
  bool follows_deltas() const override { return trackers_.empty() || trackers_[0]->follows_deltas(); }
  void at(int p, const Vec& w) override { trackers_[p]->at(w); }
  double value(int p) override { return trackers_[p]->value(); }
  double gradient_sq_norm(int p) override { return trackers_[p]->gradient_sq_norm(); }
  Vec gradient(int p) override { return trackers_[p]->gradient(); }
  void save(int p, StateBag& b) const override { trackers_[p]->save(b); }
  void restore(int p, const StateBag& b) override { trackers_[p]->restore(b); }

 private:
  std::vector<std::unique_ptr<IterateTracker>> trackers_;
};

class ColumnTracker final : public IterateTracker {
 public:
  ColumnTracker(std::shared_ptr<EnsembleTracker> e, int p) : e_(std::move(e)), p_(p) {}
  void block_changed(int s, ConstVecRef delta) override { e_->block_changed(p_, s, delta); }
  bool follows_deltas() const override { return e_->follows_deltas(); }
  void at(const Vec& w) override { e_->at(p_, w); }
  void reset(const Vec&) override { STALE_CHECK(false, "an ensemble column's tracker is not reset"); }
  double value() override { return e_->value(p_); }
  const Vec& gradient() override { return g_ = e_->gradient(p_); }
  double gradient_sq_norm() override { return e_->gradient_sq_norm(p_); }
  void save(StateBag& b) const override { e_->save(p_, b); }
  void restore(const StateBag& b) override { e_->restore(p_, b); }

 private:
  std::shared_ptr<EnsembleTracker> e_;
  int p_;
  Vec g_;
};
}  // namespace

std::unique_ptr<EnsembleTracker> Objective::make_ensemble_tracker(const Mat& W) const {
  return std::make_unique<SeparateTrackers>(*this, W);
}

std::unique_ptr<IterateTracker> column_tracker(std::shared_ptr<EnsembleTracker> ensemble, int p) {
  STALE_CHECK(p >= 0 && p < ensemble->columns(), "column of the ensemble");
  return std::make_unique<ColumnTracker>(std::move(ensemble), p);
}

}  // namespace stale
