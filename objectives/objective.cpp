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
// Fallback tracker: recompute value and gradient at the current point when asked.
class RecomputingTracker final : public IterateTracker {
 public:
  RecomputingTracker(const Objective& f, const Vec& w) : f_(f), w_(w), grad_(w.size()) {}
  void block_changed(int s, ConstVecRef delta) override {
    f_.blocks().block(w_, s) += delta;
    fresh_ = false;
  }
  void reset(const Vec& w) override {
    w_ = w;
    fresh_ = false;
  }
  // value and gradient are recomputed from w, deterministically: w is the whole state
  void save(StateBag& b) const override { b.put("w", w_); }
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
    if (!fresh_) value_ = f_.value_grad(w_, grad_), fresh_ = true;
  }
  const Objective& f_;
  Vec w_, grad_;
  double value_ = 0;
  bool fresh_ = false;
};
}  // namespace

std::unique_ptr<IterateTracker> Objective::make_tracker(const Vec& w) const {
  return std::make_unique<RecomputingTracker>(*this, w);
}

}  // namespace stale
