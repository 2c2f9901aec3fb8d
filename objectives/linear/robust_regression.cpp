// Robust linear regression with the Cauchy loss (objective.name = "robust"): a smooth objective
// that is nonconvex in the model's own loss, not through an added regulariser, with targets that
// carry heavy-tailed outliers, the case the loss exists for.
//
//   f(w)  = Σ_i c_i ρ(x_iᵀw − y_i)          c_i = 1/(M n_m): (1/n) Σ_i for equal batches
//   ρ(r)  = (s²/2) log(1 + r²/s²)           s = objective.robust_scale
//   ρ'(r) = r / (1 + r²/s²)
//   ρ''(r) = (1 − r²/s²) / (1 + r²/s²)²     ∈ [−1/8, 1]  (1 at r = 0, −1/8 at r² = 3s²)
//
// ρ is the Cauchy ρ-function of M-estimation (Z. Zhang, "Parameter estimation techniques: a
// tutorial with application to conic fitting", Image Vis. Comput. 1997; the Lorentzian of Black &
// Anandan 1996): quadratic for |r| ≪ s, logarithmic beyond, so an outlier's pull ρ' decays like
// s²/r instead of growing like r.
//
// Constants (docs/theory.md §3 needs L and a lower bound of f_*):
//  - ∇²f(w) = Xᵀ diag(c_i ρ''(r_i)) X and |ρ''| ≤ 1, so −⅛ H₀ ≼ ∇²f ≼ H₀ with H₀ = Xᵀ diag(c) X:
//    L = λ_max(H₀) is a certified upper bound (L_exact = false), attained where every residual is
//    0 (w_true without outliers) and not beyond;
//  - ρ'' < 0 exactly where |r| > s. Where fewer than d residuals lie inside |r| ≤ s (X of rank d),
//    a direction v orthogonal to their rows meets only negative ρ'': vᵀ∇²f v < 0. At w = 0 that
//    takes only fewer than d targets with |y_i| ≤ s, so f is nonconvex on any data of scale
//    beyond s, and no μ is claimed;
//  - ρ ≥ 0, so f_low = 0 stands in for the unknown f_* with f_star_is_lower_bound, the
//    convention of the nonconvex linear models (objectives/linear/nonconvex_regularizer.hpp).
//
// The data are the linear models' (objectives/linear/linear_data.hpp, make_linear_data): X and
// y = X w_true of the random or spectrum generator, then a fraction objective.robust_outliers of
// the targets moved by a standard-Cauchy error times the rms of X w_true; or the user's X, y
// (generator file) as they are. The pipeline view is the linear models' (docs/theory.md §7):
// stage s adds X_m[:, slice_s] w^(s) to an activation of width 1 through
// add_product_in_column_order, the sum batch_block_grad forms in one pass, so that the
// stage-wise gradient and the block gradient at a mixed point agree bit for bit (PipeDream with
// stashing ≡ RPD replaying its delays relies on that).
//
// CPU only and no tracker: the metrics recompute f and ∇f at each logged row (the default
// IterateTracker), and the column calls of ensembles loop (the defaults).
//
// This objective, its keys and its registration are the whole of it; the test is
// tests/objectives/test_robust_regression.cpp.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "objectives/linear/dense_spectrum.hpp"
#include "objectives/linear/linear_constants_cache.hpp"
#include "objectives/linear/linear_data.hpp"
#include "objectives/linear/linear_model_cpu.hpp"
#include "objectives/linear/linear_stage_product.hpp"
#include "objectives/objective_factory.hpp"
#include "objectives/objective_registry.hpp"
#include "src/config/config.hpp"
#include "src/core/error.hpp"
#include "src/core/rng.hpp"

namespace stale {
namespace {

struct CauchyLoss {
  double s2;  // s²
  double value(double r) const { return 0.5 * s2 * std::log1p(r * r / s2); }
  double deriv(double r) const { return r / (1.0 + r * r / s2); }
};

class RobustRegression final : public Objective {
 public:
  RobustRegression(std::shared_ptr<const LinearData> data, int stages, double scale)
      : data_(std::move(data)), loss_{scale * scale} {
    blocks_ = BlockPartition(data_->d(), stages);
  }

  std::string name() const override { return "robust"; }
  int num_batches() const override { return data_->num_batches(); }
  Index num_samples() const override { return data_->n(); }
  Index batch_rows(int m) const override { return data_->batch_offsets[m + 1] - data_->batch_offsets[m]; }
  std::string description() const override { return description_; }
  void set_description(std::string d) { description_ = std::move(d); }
  void set_constants(ObjectiveConstants c) { constants_ = std::move(c); }
  const LinearData& data() const { return *data_; }

  double value(const Vec& w) const override {
    Vec a;
    gemv_parallel(data_->X, w, a);
    double f = 0;
    for (Index i = 0; i < a.size(); ++i) f += data_->weight(i) * loss_.value(a(i) - data_->y(i));
    return f;
  }

  double value_grad(const Vec& w, Vec& grad) const override {
    Vec a;
    gemv_parallel(data_->X, w, a);
    double f = 0;
    for (Index i = 0; i < a.size(); ++i) {
      const double r = a(i) - data_->y(i);
      f += data_->weight(i) * loss_.value(r);
      a(i) = data_->weight(i) * loss_.deriv(r);
    }
    gemv_t_parallel(data_->X, a, grad);
    return f;
  }

  double batch_value_grad(const Vec& z, int m, Vec& grad) const override {
    Vec r = batch_activation(m, z);
    const double loss = to_residual_gradient(m, r);
    grad.resize(z.size());
    for (int s = 0; s < stages(); ++s) block_grad_from_residual_gradient(m, s, r, blocks_.block(grad, s));
    return loss;
  }

  void batch_block_grad(const Vec& z, int m, int s, VecRef g_s) const override {
    Vec r = batch_activation(m, z);
    to_residual_gradient(m, r);
    block_grad_from_residual_gradient(m, s, r, g_s);
  }

  void stage_forward(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out,
                     std::unique_ptr<StageCache>& cache) const override {
    cache.reset();  // a linear stage's backward needs nothing from its forward
    out = in;
    add_product_in_column_order(batch_X(m).middleCols(blocks_.offset(s), blocks_.size(s)), w_s.data(),
                                out.col(0).data());
  }

  double loss_forward_backward(int m, const Mat& last, Mat& grad_last) const override {
    Vec r = last.col(0);
    const double loss = to_residual_gradient(m, r);
    grad_last = r;
    return loss;
  }

  void stage_backward(int s, int m, const Mat& grad_out, ConstVecRef, const StageCache*, VecRef grad_w_s,
                      Mat& grad_in) const override {
    const Vec r = grad_out.col(0);  // a plain vector: the GEMV batch_block_grad runs
    block_grad_from_residual_gradient(m, s, r, grad_w_s);
    grad_in = grad_out;  // d(in + X_s w_s)/d in = I
  }

 private:
  using BatchView = Eigen::Map<const Mat, 0, Eigen::OuterStride<>>;
  BatchView batch_X(int m) const {
    return BatchView(data_->X.data() + data_->batch_offsets[m], batch_rows(m), dim(),
                     Eigen::OuterStride<>(data_->X.rows()));
  }

  // X_m z, every row summed in column order: what the stages' forwards add up stage by stage
  Vec batch_activation(int m, const Vec& z) const {
    const auto Xm = batch_X(m);
    Vec a = Vec::Zero(Xm.rows());
    add_product_in_column_order(Xm, z.data(), a.data());
    return a;
  }

  // the activation a of batch m turned, in place, into d f_m / d a = ρ'(a − y) / b; returns f_m.
  // The loss head and the block gradients both go through here, so they agree bit for bit.
  double to_residual_gradient(int m, Vec& a) const {
    const auto y = data_->y.segment(data_->batch_offsets[m], a.size());
    const double inv_b = 1.0 / static_cast<double>(a.size());
    double f = 0;
    for (Index i = 0; i < a.size(); ++i) {
      const double r = a(i) - y(i);
      f += loss_.value(r);
      a(i) = loss_.deriv(r) * inv_b;
    }
    return f * inv_b;
  }

  void block_grad_from_residual_gradient(int m, int s, const Vec& g, VecRef g_s) const {
    g_s.noalias() = batch_X(m).middleCols(blocks_.offset(s), blocks_.size(s)).transpose() * g;
  }

  std::shared_ptr<const LinearData> data_;
  CauchyLoss loss_;
  std::string description_;
};

// L = λ_max(Xᵀ diag(c) X), cached on disk like the linear models' constants (the eigenvalues
// are O(d³) and a sweep builds the same data once per run). Above d = 4096 extreme_eigenvalues
// falls back to power iteration, whose value approaches λ_max from below: L is then an estimate,
// as it is for least squares there.
ObjectiveConstants robust_constants(const RobustRegression& f) {
  const LinearData& data = f.data();
  const uint64_t key = constants_key(data, "cauchy", 0.0);
  CachedConstants cc;
  if (!load_cached(key, f.dim(), cc)) {
    check_dense_hessian(f.dim(), 2, "robust regression's L (the largest eigenvalue of X^T diag(c) X)");
    Mat H = Mat::Zero(f.dim(), f.dim());
    const Vec& c = data.weight;
    if ((c.array() == c(0)).all()) {
      H.selfadjointView<Eigen::Lower>().rankUpdate(data.X.transpose(), c(0));  // half a GEMM's work
      H.triangularView<Eigen::StrictlyUpper>() = H.transpose();
    } else {
      H.noalias() = data.X.transpose() * (c.asDiagonal() * data.X);
    }
    extreme_eigenvalues(H, cc.lambda_max, cc.lambda_min);
    store_cached(key, f.dim(), cc);
  }
  ObjectiveConstants k;
  k.L = cc.lambda_max;
  k.L_exact = false;
  k.mu = 0.0;
  k.f_star = 0.0;
  k.f_star_is_lower_bound = true;
  k.f_star_method = "lower bound f_low = 0 (the Cauchy loss is >= 0; the minimum of the nonconvex f is unknown)";
  return k;
}

// Each target moves with probability p by a standard-Cauchy error (no mean, no variance: the
// outliers least squares cannot shrug off) times the rms of X w_true, so the outliers are large
// at any d. Both uniforms are drawn for every sample, so a larger p keeps the smaller p's
// outliers and their values. Substream 5: the generators of linear_data.cpp use 1–4.
Index add_cauchy_outliers(LinearData& data, double p, uint64_t seed) {
  if (p == 0) return 0;
  const double rms = std::sqrt(data.y.squaredNorm() / static_cast<double>(data.y.size()));
  Rng rng(seed, Stream::DataGen, 5);
  Index moved = 0;
  for (Index i = 0; i < data.y.size(); ++i) {
    const double u = rng.uniform(), v = rng.uniform();
    if (u >= p) continue;
    data.y(i) += rms * std::tan(M_PI * (v - 0.5));
    ++moved;
  }
  return moved;
}

std::string format_number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

std::unique_ptr<Objective> make_robust_regression(const Config& cfg, BackendKind backend) {
  if (backend == BackendKind::Cuda && cfg.get_string("backend") == "cuda")
    config_error("backend", "\"cuda\": robust regression runs on the cpu only; use backend = \"cpu\" (or auto)");
  auto data = make_linear_data(cfg);
  if (data->sparse())
    config_error("objective.storage", "robust regression holds X dense; the data were stored sparse (choose dense)");
  const int S = static_cast<int>(cfg.get_int("objective.stages"));
  if (S > data->d())
    config_error("objective.stages", "S = " + std::to_string(S) + " exceeds the dimension d = " +
                                         std::to_string(data->d()) + "; every stage needs at least one coordinate");
  const double scale = cfg.get_float("objective.robust_scale");
  std::string desc = data->description + "; Cauchy loss, objective.robust_scale = " + format_number(scale);
  if (cfg.get_string("objective.generator") != "file") {
    const Index moved = add_cauchy_outliers(*data, cfg.get_float("objective.robust_outliers"),
                                            static_cast<uint64_t>(cfg.get_int("seed")));
    desc += "; " + std::to_string(moved) + " of " + std::to_string(data->n()) + " targets with Cauchy outliers";
  }
  auto f = std::make_unique<RobustRegression>(data, S, scale);
  f->set_description(desc);
  f->set_data_file(data->source_path);
  f->set_constants(robust_constants(*f));
  return f;
}

// the data and the d × d matrix L comes from (the generators' share as the linear models count it)
ObjectiveFootprint robust_footprint(const Config& cfg, const FootprintContext&) {
  ObjectiveFootprint fp;
  fp.parameter_keys = "objective.dim";
  const std::string gen = cfg.get_string("objective.generator");
  if (gen == "file") return fp;  // the file's shape: its reader sizes X before allocating it
  const double n = static_cast<double>(cfg.get_int("objective.samples"));
  const double d = static_cast<double>(cfg.get_int("objective.dim"));
  fp.parameters = d;
  // spectrum orthogonalises an n × d Gaussian matrix (Householder QR, Q formed)
  const double copies = gen == "spectrum" ? 3.0 : 1.0;
  fp.memory.push_back({"data X", "objective.samples × objective.dim = " + format_count(n) + " × " + format_count(d),
                       copies * n * d * 8.0});
  // H₀ and the eigensolver's copy; spectrum forms its d × d rotation as well
  const double dd = 2.0 + (gen == "spectrum" ? 1.0 : 0.0);
  fp.memory.push_back({"d × d Gram matrix", "objective.dim × objective.dim = " + format_count(d) + " × " + format_count(d),
                       dd * d * d * 8.0});
  return fp;
}

const bool keys = add_component_keys(
    {keys::Float("objective.robust_scale", 1.0,
                 "robust: scale s of the Cauchy loss (s²/2) log(1 + r²/s²); residuals well below s count as in "
                 "least squares, far beyond it only logarithmically",
                 0.0, /*lo_exclusive=*/true),
     keys::Float("objective.robust_outliers", 0.1,
                 "robust, generators random and spectrum: fraction of targets y = X w_true moved by a "
                 "standard-Cauchy error times the rms of X w_true (heavy-tailed outliers); 0 = none",
                 0.0, /*lo_exclusive=*/false, 1.0)});

const bool registered = ObjectiveRegistry::add(
    {"robust",
     "robust linear regression: mean Cauchy loss (s^2/2) log(1 + r^2/s^2) of the residuals, targets with "
     "heavy-tailed outliers; smooth and nonconvex, L an upper bound, f_* the lower bound 0",
     1,
     {"objective.generator", "objective.robust_scale"},
     {{"random", {"objective.dim", "objective.samples", "objective.robust_outliers"}},
      {"spectrum",
       {"objective.dim", "objective.samples", "objective.mu", "objective.L", "objective.spectrum",
        "objective.robust_outliers"}},
      {"file", {"objective.data", "objective.data_dir", "objective.label_column", "objective.storage"}}},
     make_robust_regression, robust_footprint,
     // evaluation is const and keeps no caches: one instance can serve a sweep's threads
     /*shared_across_runs=*/true, /*ensembles_on_cpu=*/false});

}  // namespace
}  // namespace stale
