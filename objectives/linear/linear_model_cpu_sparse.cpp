// The linear models over a CSR data matrix (linear_model_cpu_sparse.hpp): least squares and
// logistic regression, every product a walk over the nonzeros.
#include "objectives/linear/linear_model_cpu_sparse.hpp"

#include <algorithm>
#include <utility>

#include "src/core/error.hpp"

namespace stale {

template <class Loss>
LinearModelCpuSparse<Loss>::LinearModelCpuSparse(std::shared_ptr<const LinearData> data, int stages, double l2,
                                                 NonconvexRegularizer reg)
    : Base(std::move(data), stages, l2, reg) {
  STALE_CHECK(data_->sparse() && data_->X_sparse.isCompressed(), "the sparse twin needs compressed CSR data");
}

namespace {
// positions [first, last) in the CSR arrays of row i's nonzeros with column in [lo, lo + len):
// the row's column indices are sorted, so two binary searches
std::pair<int, int> row_slice(const SparseRowMat& X, Index i, Index lo, Index len) {
  const int* idx = X.innerIndexPtr();
  const int *b = idx + X.outerIndexPtr()[i], *e = idx + X.outerIndexPtr()[i + 1];
  const int* p = std::lower_bound(b, e, static_cast<int>(lo));
  const int* q = std::lower_bound(p, e, static_cast<int>(lo + len));
  return {static_cast<int>(p - idx), static_cast<int>(q - idx)};
}
}  // namespace

template <class Loss>
double LinearModelCpuSparse<Loss>::row_slice_dot(Index i, Index lo, Index len, const double* v) const {
  const SparseRowMat& X = data_->X_sparse;
  const auto [first, last] = row_slice(X, i, lo, len);
  double acc = 0;
  for (int p = first; p < last; ++p) acc += X.valuePtr()[p] * v[X.innerIndexPtr()[p] - lo];
  return acc;
}

template <class Loss>
void LinearModelCpuSparse<Loss>::row_slice_axpy(Index i, Index lo, Index len, double r, double* g) const {
  const SparseRowMat& X = data_->X_sparse;
  const auto [first, last] = row_slice(X, i, lo, len);
  for (int p = first; p < last; ++p) g[X.innerIndexPtr()[p] - lo] += r * X.valuePtr()[p];
}

template <class Loss>
void LinearModelCpuSparse<Loss>::multiply(const Vec& v, Vec& out) const {
  const SparseRowMat& X = data_->X_sparse;
  out.resize(X.rows());
  const int* outer = X.outerIndexPtr();
  const int* idx = X.innerIndexPtr();
  const double* val = X.valuePtr();
  for (Index i = 0; i < X.rows(); ++i) {
    double acc = 0;
    for (int p = outer[i]; p < outer[i + 1]; ++p) acc += val[p] * v[idx[p]];
    out[i] = acc;
  }
}

template <class Loss>
void LinearModelCpuSparse<Loss>::multiply_transpose(const Vec& u, Vec& out) const {
  const SparseRowMat& X = data_->X_sparse;
  out.setZero(X.cols());
  const int* outer = X.outerIndexPtr();
  const int* idx = X.innerIndexPtr();
  const double* val = X.valuePtr();
  for (Index i = 0; i < X.rows(); ++i)
    for (int p = outer[i]; p < outer[i + 1]; ++p) out[idx[p]] += u[i] * val[p];
}

template <class Loss>
Vec LinearModelCpuSparse<Loss>::staged_activation(int m, const Vec& z) const {
  const Index off = data_->batch_offsets[m], rows = batch_rows(m);
  Vec a = Vec::Zero(rows);
  for (int s = 0; s < blocks_.stages(); ++s) {
    const double* zs = z.data() + blocks_.offset(s);
    for (Index i = 0; i < rows; ++i) a(i) += row_slice_dot(off + i, blocks_.offset(s), blocks_.size(s), zs);
  }
  return a;
}

template <class Loss>
void LinearModelCpuSparse<Loss>::block_grad_from(int m, int s, const Vec& r, ConstVecRef z_s, VecRef g_s) const {
  const Index off = data_->batch_offsets[m];
  g_s.setZero();
  for (Index i = 0; i < r.size(); ++i) row_slice_axpy(off + i, blocks_.offset(s), blocks_.size(s), r(i), g_s.data());
  if (l2_ != 0) g_s += l2_ * z_s;
  if (reg_.active()) reg_.add_gradient(z_s, g_s);
}

template <class Loss>
double LinearModelCpuSparse<Loss>::batch_value_grad(const Vec& z, int m, Vec& grad) const {
  const auto ym = data_->y.segment(data_->batch_offsets[m], batch_rows(m));
  const Vec a = staged_activation(m, z);
  Vec r(a.size());
  double f = 0;
  const double inv_b = 1.0 / static_cast<double>(a.size());
  for (Index i = 0; i < a.size(); ++i) {
    f += Loss::value(a(i), ym(i));
    r(i) = Loss::deriv(a(i), ym(i)) * inv_b;
  }
  grad.resize(z.size());
  for (int s = 0; s < blocks_.stages(); ++s)
    block_grad_from(m, s, r, blocks_.block(z, s), grad.segment(blocks_.offset(s), blocks_.size(s)));
  double value = f * inv_b + 0.5 * l2_ * z.squaredNorm();
  if (reg_.active()) value += reg_.value(z);
  return value;
}

template <class Loss>
void LinearModelCpuSparse<Loss>::batch_block_grad(const Vec& z, int m, int s, VecRef g_s) const {
  const auto ym = data_->y.segment(data_->batch_offsets[m], batch_rows(m));
  Vec r = staged_activation(m, z);
  const double inv_b = 1.0 / static_cast<double>(r.size());
  for (Index i = 0; i < r.size(); ++i) r(i) = Loss::deriv(r(i), ym(i)) * inv_b;
  block_grad_from(m, s, r, blocks_.block(z, s), g_s);
}

template <class Loss>
void LinearModelCpuSparse<Loss>::stage_forward(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out,
                                               std::unique_ptr<StageCache>& cache) const {
  cache.reset();  // a linear stage needs nothing from its forward pass for its backward pass
  const Index off = data_->batch_offsets[m];
  out = in;
  for (Index i = 0; i < out.rows(); ++i)  // the same accumulation as staged_activation
    out(i, 0) += row_slice_dot(off + i, blocks_.offset(s), blocks_.size(s), w_s.data());
}

template <class Loss>
void LinearModelCpuSparse<Loss>::stage_backward(int s, int m, const Mat& grad_out, ConstVecRef w_s, const StageCache*,
                                                VecRef grad_w_s, Mat& grad_in) const {
  const Vec r = grad_out.col(0);
  block_grad_from(m, s, r, w_s, grad_w_s);
  grad_in = grad_out;  // d(in + X_s w_s)/d in = I
}

namespace {

// f and ∇f at the tracked iterate by one full O(nnz + d) pass, made when a value is read after
// a change (never per change): nothing d × d, and no drift to resynchronise. The iterate is the
// state a checkpoint keeps, so a resumed run reads the same bits.
template <class Loss>
class SparseLinearTracker final : public IterateTracker {
 public:
  SparseLinearTracker(const LinearModelCpuSparse<Loss>& f, const Vec& w) : f_(f) { reset(w); }
  void reset(const Vec& w) override {
    w_ = w;
    fresh_ = false;
  }
  void block_changed(int s, ConstVecRef delta) override {
    f_.blocks().block(w_, s) += delta;
    fresh_ = false;
  }
  double value() override {
    refresh();
    return value_;
  }
  const Vec& gradient() override {
    refresh();
    return g_;
  }
  void save(StateBag& b) const override { b.put("w", w_); }
  void restore(const StateBag& b) override { reset(b.get_vec("w")); }

 private:
  void refresh() {
    if (fresh_) return;
    value_ = f_.value_grad(w_, g_);
    fresh_ = true;
  }
  const LinearModelCpuSparse<Loss>& f_;
  Vec w_, g_;
  double value_ = 0;
  bool fresh_ = false;
};

}  // namespace

template <class Loss>
std::unique_ptr<IterateTracker> LinearModelCpuSparse<Loss>::make_tracker(const Vec& w) const {
  return std::make_unique<SparseLinearTracker<Loss>>(*this, w);
}

template class LinearModelCpuSparse<SquaredLoss>;
template class LinearModelCpuSparse<LogisticLoss>;

}  // namespace stale
