#include "objectives/linear/linear_model_cpu.hpp"

#include <algorithm>
#include <map>

#include "objectives/linear/linear_constants_cache.hpp"
#include "objectives/linear/linear_stage_product.hpp"
#include "src/core/error.hpp"

#include "src/core/parallel.hpp"

namespace stale {

namespace {
// Rows per chunk of a GEMV: the chunk boundaries are fixed, so each output row is computed by
// the same kernel over the same columns whatever thread runs it (results independent of the
// thread count, src/core/parallel.hpp).
constexpr Index kRowChunk = 256;
constexpr Index kColChunk = 64;  // columns per chunk of a transposed GEMV

// the stages' first columns and d: the blocks of ColumnBlockProducts
std::vector<Index> stage_offsets(const BlockPartition& B) {
  std::vector<Index> offsets;
  for (int s = 0; s < B.stages(); ++s) offsets.push_back(B.offset(s));
  offsets.push_back(B.dim());
  return offsets;
}

}  // namespace

namespace {
// out = X W and out = Xᵀ V, for one vector or for P columns, in fixed chunks of X's rows
// (kRowChunk) or columns (kColChunk) on the threads the policy gives the work
template <class Rhs, class Out>
void product_parallel(const Mat& X, const Rhs& W, Out& out) {
  out.resize(X.rows(), W.cols());
  const Index chunks = (X.rows() + kRowChunk - 1) / kRowChunk;
  const int T = parallel_threads(static_cast<double>(X.size()) * static_cast<double>(W.cols()));
#pragma omp parallel for num_threads(T) schedule(dynamic) if (T > 1)
  for (Index c = 0; c < chunks; ++c) {
    const Index r0 = c * kRowChunk, n = std::min<Index>(kRowChunk, X.rows() - r0);
    out.middleRows(r0, n).noalias() = X.middleRows(r0, n) * W;
  }
}

template <class Rhs, class Out>
void product_t_parallel(const Mat& X, const Rhs& V, Out& out) {
  out.resize(X.cols(), V.cols());
  const Index chunks = (X.cols() + kColChunk - 1) / kColChunk;
  const int T = parallel_threads(static_cast<double>(X.size()) * static_cast<double>(V.cols()));
#pragma omp parallel for num_threads(T) schedule(dynamic) if (T > 1)
  for (Index c = 0; c < chunks; ++c) {
    const Index c0 = c * kColChunk, n = std::min<Index>(kColChunk, X.cols() - c0);
    out.middleRows(c0, n).noalias() = X.middleCols(c0, n).transpose() * V;
  }
}
}  // namespace

void gemv_parallel(const Mat& X, const Vec& w, Vec& out) { product_parallel(X, w, out); }

void gemv_t_parallel(const Mat& X, const Vec& v, Vec& out) { product_t_parallel(X, v, out); }

template <class Loss>
LinearModelCpu<Loss>::LinearModelCpu(std::shared_ptr<const LinearData> data, int stages, double l2,
                                     NonconvexRegularizer reg)
    : Base(std::move(data), stages, l2, reg) {
  const Mat& X = data_->X;
  data_blocks_ = ColumnBlockProducts(X.data(), X.rows(), X.rows(), stage_offsets(blocks_), 0);
  if (static_cast<size_t>(X.size()) * sizeof(double) <= kMaxBatchCopyBytes) {
    by_batch_.reset(new double[static_cast<size_t>(X.size())]);  // uninitialised: pages are touched by the copies
    by_batch_once_.reset(new std::once_flag[static_cast<size_t>(num_batches())]);
  }
}

template <class Loss>
const double* LinearModelCpu<Loss>::batch_copy(int m) const {
  const Index off = data_->batch_offsets[m], rows = batch_rows(m);
  double* out = by_batch_.get() + off * dim();
  std::call_once(by_batch_once_[m], [&] {
    const Mat& X = data_->X;
    for (Index j = 0; j < X.cols(); ++j) std::copy_n(X.data() + off + j * X.rows(), rows, out + j * rows);
  });
  return out;
}

// The activation of a batch at z, summed stage by stage exactly as stage_forward does, so
// that a gradient at a mixed point equals the pipeline's (stage-wise) gradient bit for bit
// (pipedream with weight stashing ≡ rpd replaying its delays relies on this).
template <class Loss>
Vec LinearModelCpu<Loss>::staged_activation(int m, const Vec& z) const {
  const auto Xm = batch_X(m);
  Vec a = Vec::Zero(Xm.rows());
  // the stages' columns are consecutive, so one pass in column order adds exactly what the
  // pipeline's forward passes add stage after stage (stage_forward)
  add_product_in_column_order(Xm, z.data(), a.data());
  return a;
}

template <class Loss>
double LinearModelCpu<Loss>::batch_value_grad(const Vec& z, int m, Vec& grad) const {
  const auto Xm = batch_X(m);
  const auto ym = data_->y.segment(data_->batch_offsets[m], Xm.rows());
  const Vec a = staged_activation(m, z);
  Vec r(a.size());
  double f = 0;
  const double inv_b = 1.0 / static_cast<double>(Xm.rows());
  for (Index i = 0; i < a.size(); ++i) {
    f += Loss::value(a(i), ym(i));
    r(i) = Loss::deriv(a(i), ym(i)) * inv_b;
  }
  grad.resize(z.size());
  for (int s = 0; s < blocks_.stages(); ++s) {
    auto gs = grad.segment(blocks_.offset(s), blocks_.size(s));
    gs.noalias() = Xm.middleCols(blocks_.offset(s), blocks_.size(s)).transpose() * r;
    if (l2_ != 0) gs += l2_ * z.segment(blocks_.offset(s), blocks_.size(s));
    if (reg_.active()) reg_.add_gradient(z.segment(blocks_.offset(s), blocks_.size(s)), gs);
  }
  double value = f * inv_b + 0.5 * l2_ * z.squaredNorm();
  if (reg_.active()) value += reg_.value(z);
  return value;
}

template <class Loss>
void LinearModelCpu<Loss>::batch_block_grad(const Vec& z, int m, int s, VecRef g_s) const {
  block_grad_from_activation(staged_activation(m, z), z.data() + blocks_.offset(s), m, s, g_s);
}

// Read in place, the mixed point's blocks feed the activation straight from the version
// store: the copy into z was a sixth of a lone RPD run at S = 128, and the loads now overlap
// the activation's chain of multiply-adds. The sums are staged_activation's.
template <class Loss>
void LinearModelCpu<Loss>::batch_block_grad_blocks(const std::vector<const double*>& blocks, int m, int s,
                                                   VecRef g_s) const {
  STALE_CHECK(static_cast<int>(blocks.size()) == blocks_.stages(), "one pointer per block");
  const auto Xm = batch_X(m);
  Vec a = Vec::Zero(Xm.rows());
  if (!add_product_few_rows_blocks(Xm.data(), Xm.outerStride(), Xm.rows(), blocks_.offsets(), blocks, a.data()))
    return Objective::batch_block_grad_blocks(blocks, m, s, g_s);
  block_grad_from_activation(std::move(a), blocks[static_cast<size_t>(s)], m, s, g_s);
}

// X_m[:, s]ᵀ ℓ'(r) / b + λ z_s (+ ∇r(z_s)) from the activation r = X_m z (consumed), for a run
// and for each column of an ensemble alike
template <class Loss>
void LinearModelCpu<Loss>::block_grad_from_activation(Vec r, const double* z_s, int m, int s, VecRef g_s) const {
  const auto Xm = batch_X(m);
  const auto ym = data_->y.segment(data_->batch_offsets[m], Xm.rows());
  const double inv_b = 1.0 / static_cast<double>(Xm.rows());
  for (Index i = 0; i < r.size(); ++i) r(i) = Loss::deriv(r(i), ym(i)) * inv_b;
  const Index off = blocks_.offset(s), ds = blocks_.size(s);
  g_s.noalias() = Xm.middleCols(off, ds).transpose() * r;
  if (l2_ != 0) g_s += l2_ * Eigen::Map<const Vec>(z_s, ds);
  if (reg_.active()) reg_.add_gradient(z_s, ds, g_s.data());
}

template <class Loss>
void LinearModelCpu<Loss>::stage_forward(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out,
                                         std::unique_ptr<StageCache>& cache) const {
  // a linear stage needs nothing from its forward pass for its backward pass
  cache.reset();
  const auto Xs = batch_X(m).middleCols(blocks_.offset(s), blocks_.size(s));
  out = in;
  add_product_in_column_order(Xs, w_s.data(), out.col(0).data());  // the same accumulation as staged_activation
}

template <class Loss>
void LinearModelCpu<Loss>::stage_backward(int s, int m, const Mat& grad_out, ConstVecRef w_s, const StageCache*,
                                          VecRef grad_w_s, Mat& grad_in) const {
  const auto Xs = batch_X(m).middleCols(blocks_.offset(s), blocks_.size(s));
  const Vec r = grad_out.col(0);  // a plain vector, so the GEMV is the one batch_block_grad runs
  grad_w_s.noalias() = Xs.transpose() * r;
  if (l2_ != 0) grad_w_s += l2_ * w_s;
  if (reg_.active()) reg_.add_gradient(w_s, grad_w_s);
  grad_in = grad_out;  // d(in + X_s w_s)/d in = I
}

template <class Loss>
void LinearModelCpu<Loss>::batch_grad_many(const Mat& Z, const std::vector<int>& batches, Mat& G) const {
  STALE_CHECK(Z.rows() == dim() && static_cast<size_t>(Z.cols()) == batches.size(), "Z is d × P, one batch per column");
  const Index P = Z.cols();
  G.resize(dim(), P);
  std::map<int, std::vector<Index>> by_batch;
  for (Index p = 0; p < P; ++p) {
    STALE_CHECK(batches[p] >= 0 && batches[p] < num_batches(), "batch ids lie in [0, M)");
    by_batch[batches[p]].push_back(p);
  }
  std::vector<Index> alone;
  for (const auto& [m, cols] : by_batch) {
    if (cols.size() == 1) {
      alone.push_back(cols[0]);
      continue;
    }
    const Index k = static_cast<Index>(cols.size());
    Mat Zg(dim(), k);
    for (Index j = 0; j < k; ++j) Zg.col(j) = Z.col(cols[j]);
    const auto Xm = batch_X(m);
    const auto ym = data_->y.segment(data_->batch_offsets[m], Xm.rows());
    // one GEMM for the columns sharing a batch (Eigen single-threaded, src/core/parallel.hpp);
    // its blocking differs from a GEMV's, so a column may differ from the per-point loop in
    // the last bits (tests/objectives/test_batched_cpu.cpp states the tolerance)
    Mat R;
    R.noalias() = Xm * Zg;
    const double inv_b = 1.0 / static_cast<double>(Xm.rows());
    for (Index j = 0; j < k; ++j)
      for (Index i = 0; i < R.rows(); ++i) R(i, j) = Loss::deriv(R(i, j), ym(i)) * inv_b;
    Mat Gg;
    Gg.noalias() = Xm.transpose() * R;
    if (l2_ != 0) Gg += l2_ * Zg;
    if (reg_.active()) reg_.add_gradient_cols(Zg, Gg);
    for (Index j = 0; j < k; ++j) G.col(cols[j]) = Gg.col(j);
  }
  // columns alone in their batch: GEMVs over different rows share no data, so they are
  // bandwidth-bound whatever is done; running them side by side uses every core's share
  const Index A = static_cast<Index>(alone.size());
  const int T = parallel_threads(static_cast<double>(data_->X.size() / num_batches() * A));
#pragma omp parallel for num_threads(T) schedule(dynamic) if (A > 1 && T > 1)
  for (Index j = 0; j < A; ++j) {
    const Index p = alone[j];
    const Vec z = Z.col(p);
    Vec g;
    batch_value_grad(z, batches[p], g);
    G.col(p) = g;
  }
}

template <class Loss>
void LinearModelCpu<Loss>::value_grad_many(const Mat& Z, Mat& G, Vec& values) const {
  STALE_CHECK(Z.rows() == dim(), "Z is d × P");
  const Index P = Z.cols();
  G.resize(dim(), P);
  values.resize(P);
  if (P == 1) {
    Vec g;
    values(0) = value_grad(Z.col(0), g);
    G.col(0) = g;
    return;
  }
  if (P == 0) return;
  const auto& d = *data_;
  // R = X Z and G = Xᵀ R in the fixed chunks of the single call's GEMVs (the bits do not
  // depend on the thread count), on the threads the policy gives P columns' work. As two whole
  // GEMMs they ran on one thread while a single call's GEMVs ran on every core: on the H100
  // host's 16 cores P = 8 at d = 4096 took 45 single calls' time
  // (results/gpu/gpu_check_2026-11-22.md).
  Mat R;
  product_parallel(d.X, Z, R);
  for (Index p = 0; p < P; ++p) {
    double f = 0;
    for (Index i = 0; i < R.rows(); ++i) {
      const double a = R(i, p);
      f += d.weight(i) * Loss::value(a, d.y(i));
      R(i, p) = d.weight(i) * Loss::deriv(a, d.y(i));
    }
    values(p) = f + 0.5 * l2_ * Z.col(p).squaredNorm();
    if (reg_.active()) values(p) += reg_.value(Z.col(p));
  }
  product_t_parallel(d.X, R, G);
  if (l2_ != 0) G += l2_ * Z;
  if (reg_.active()) reg_.add_gradient_cols(Z, G);
}

template <class Loss>
uint64_t LinearModelCpu<Loss>::cache_key() const {
  std::call_once(cache_key_once_, [this] { cache_key_ = constants_key(*data_, Loss::name, l2_); });
  return cache_key_;
}

template <class Loss>
const Mat& LinearModelCpu<Loss>::gram() const {
  std::call_once(gram_once_, [this] {
    // from the constants cache when this data set's H was computed before (bit for bit)
    const uint64_t key = dim() <= kMaxCachedGramDim ? cache_key() : 0;
    if (key != 0 && load_cached_gram(key, dim(), gram_)) return;
    const auto& c = data_->weight;
    if (c.size() > 0 && (c.array() == c(0)).all()) {
      // equal weights (every generator): a symmetric rank-n update, half a GEMM's work
      gram_.setZero(dim(), dim());
      gram_.selfadjointView<Eigen::Lower>().rankUpdate(data_->X.transpose(), c(0));
      gram_.triangularView<Eigen::StrictlyUpper>() = gram_.transpose();
    } else {
      const Mat CX = c.asDiagonal() * data_->X;
      gram_.noalias() = data_->X.transpose() * CX;
    }
    gram_.diagonal().array() += l2_;
    if (key != 0) store_cached_gram(key, gram_);
  });
  return gram_;
}

template <class Loss>
const ColumnBlockProducts& LinearModelCpu<Loss>::gram_blocks() const {
  std::call_once(gram_blocks_once_, [this] {
    const Mat& H = gram();
    gram_blocks_ = ColumnBlockProducts(H.data(), H.rows(), H.rows(), stage_offsets(blocks_), size_t{32} << 20);
  });
  return gram_blocks_;
}


template <class Loss>
bool LinearModelCpu<Loss>::tracks_through_hessian() const {
  // the Hessian route pays when H fits comfortably (d ≤ 4096 → ≤ 128 MiB) and is exact only
  // for a quadratic (the convex part's: the nonconvex regulariser is added at each read)
  return std::is_same_v<Loss, SquaredLoss> && dim() <= 4096 && convex_constants_.w_star.has_value();
}

template <class Loss>
std::unique_ptr<IterateTracker> LinearModelCpu<Loss>::make_tracker(const Vec& w) const {
  // a lone run's tracker is the one tracker with one column (linear_model_cpu_ensemble.cpp)
  return column_tracker(make_ensemble_tracker(Mat(w)), 0);
}

template class LinearModelCpu<SquaredLoss>;
template class LinearModelCpu<LogisticLoss>;

}  // namespace stale
