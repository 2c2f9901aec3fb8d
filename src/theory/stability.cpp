// The one-period (monodromy) operator of a stale block recursion on a quadratic, its spectral
// radius and the largest stable step (stability.hpp).
#include "src/theory/stability.hpp"

#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <algorithm>
#include <cmath>

#include "src/core/error.hpp"
#include "src/core/rng.hpp"

namespace stale {

namespace {

bool changes(const PatternUpdate& u, int j) { return u.block == -1 || u.block == j; }

double max_abs_eigenvalue(const Mat& M) {
  if (M.size() == 0) return 0.0;
  Eigen::EigenSolver<Mat> es(M, /*computeEigenvectors=*/false);
  STALE_CHECK(es.info() == Eigen::Success, "the eigenvalue solver converged");
  return es.eigenvalues().cwiseAbs().maxCoeff();
}

}  // namespace

StaleRecursion::StaleRecursion(Mat A, BlockPartition blocks, DelayPattern pattern)
    : A_(std::move(A)), blocks_(std::move(blocks)), pattern_(std::move(pattern)) {
  const int J = blocks_.stages();
  const int64_t P = pattern_.length();
  STALE_CHECK(P > 0, "a pattern has at least one update");
  STALE_CHECK(pattern_.blocks == J, "pattern blocks = partition blocks");
  STALE_CHECK(A_.rows() == blocks_.dim() && A_.cols() == blocks_.dim(), "A is d × d");
  // version lags: reads of block j at delay d see the version before the updates of block j
  // among the d preceding updates (the pattern extended periodically into the past)
  V_.assign(J, 0);
  lag_.resize(P);
  for (int64_t i = 0; i < P; ++i) {
    const PatternUpdate& u = pattern_.period[i];
    STALE_CHECK(u.block >= -1 && u.block < J && !u.delays.empty(), "a pattern update names a block and reads");
    for (const auto& row : u.delays) {
      STALE_CHECK(static_cast<int>(row.size()) == J, "a read row has one delay per block");
      std::vector<int64_t> lags(J, 0);
      for (int j = 0; j < J; ++j) {
        STALE_CHECK(row[j] >= 0, "delays are >= 0");
        int64_t n = 0;
        for (int64_t t = 1; t <= row[j]; ++t) n += changes(pattern_.period[((i - t) % P + P) % P], j);
        lags[j] = n;
        V_[j] = std::max(V_[j], n);
      }
      lag_[i].push_back(std::move(lags));
    }
  }
  base_.assign(J, 0);
  N_ = 0;
  for (int j = 0; j < J; ++j) {
    base_[j] = N_;
    N_ += blocks_.size(j) * (V_[j] + 1);
  }
  // past iterates needed to assemble a state: back to the V_j-th last update of each block
  history_ = 1;
  for (int j = 0; j < J; ++j) {
    int64_t found = 0, t = 0;
    while (found < V_[j]) {
      ++t;
      STALE_CHECK(t <= P * (V_[j] + 1), "every block read at a lag is updated within the period");
      found += changes(pattern_.period[((-t) % P + P) % P], j);
    }
    history_ = std::max(history_, t + 1);
  }
}

void StaleRecursion::apply_period(double gamma, Mat& X) const {
  STALE_CHECK(X.rows() == N_, "X has state_dim rows");
  const Index c = X.cols();
  const int J = blocks_.stages();
  const double step = gamma * pattern_.step_scale;
  Mat Z(blocks_.dim(), c), G;
  for (size_t i = 0; i < pattern_.period.size(); ++i) {
    const PatternUpdate& u = pattern_.period[i];
    const bool all = u.block == -1;
    const Index off_a = all ? 0 : blocks_.offset(u.block), d_a = all ? blocks_.dim() : blocks_.size(u.block);
    G.setZero(d_a, c);
    for (const auto& lags : lag_[i]) {
      for (int j = 0; j < J; ++j) Z.middleRows(blocks_.offset(j), blocks_.size(j)) = X.middleRows(offset(j, lags[j]), blocks_.size(j));
      // a coefficient-wise product: Eigen's blocked GEMM may split over OpenMP threads, and
      // the prediction must not depend on the thread count
      G.noalias() += A_.middleRows(off_a, d_a).lazyProduct(Z);
    }
    G *= step / static_cast<double>(lag_[i].size());
    for (int a = 0; a < J; ++a) {
      if (!changes(u, a)) continue;
      const Index da = blocks_.size(a);
      for (int64_t l = V_[a]; l >= 1; --l) X.middleRows(offset(a, l), da) = X.middleRows(offset(a, l - 1), da);
      X.middleRows(offset(a, 0), da) -= G.middleRows(blocks_.offset(a) - off_a, da);
    }
  }
}

Mat StaleRecursion::monodromy(double gamma) const {
  Mat M = Mat::Identity(N_, N_);
  apply_period(gamma, M);
  return M;
}

Vec StaleRecursion::state_from_errors(const std::vector<Vec>& newest_first) const {
  STALE_CHECK(static_cast<int64_t>(newest_first.size()) >= history_, "enough past errors for the state");
  const int J = blocks_.stages();
  const int64_t P = pattern_.length();
  Vec x(N_);
  for (int j = 0; j < J; ++j) {
    const Index dj = blocks_.size(j), oj = blocks_.offset(j);
    x.segment(offset(j, 0), dj) = newest_first[0].segment(oj, dj);
    // version l: block j before its l-th most recent update, i.e. in the iterate that update read
    int64_t found = 0, t = 0;
    while (found < V_[j]) {
      ++t;
      if (!changes(pattern_.period[((-t) % P + P) % P], j)) continue;
      ++found;
      x.segment(offset(j, found), dj) = newest_first[t].segment(oj, dj);
    }
  }
  return x;
}

RadiusSolver parse_radius_solver(const std::string& name) {
  if (name == "auto") return RadiusSolver::Auto;
  if (name == "dense") return RadiusSolver::Dense;
  if (name == "power") return RadiusSolver::Power;
  if (name == "eigen") return RadiusSolver::Eigen;
  throw UserError("stability: --solver \"" + name + "\" is not valid; choose one of: auto, dense, power, eigen");
}

std::string solver_name(RadiusSolver s) {
  switch (s) {
    case RadiusSolver::Auto: return "auto";
    case RadiusSolver::Dense: return "dense";
    case RadiusSolver::Power: return "power";
    case RadiusSolver::Eigen: return "eigen";
  }
  return "?";
}

StabilityPredictor::StabilityPredictor(const StaleRecursion& rec, RadiusOptions opt) : rec_(rec), opt_(opt) {
  solver_ = opt.solver;
  const bool split = rec.pattern().uniform_all_block();
  if (solver_ == RadiusSolver::Eigen && !split)
    throw UserError("stability: --solver eigen needs every update to change all blocks with one delay per read "
                    "(constant delay, expected order, sgd); block updates do not commute with A");
  if (solver_ == RadiusSolver::Auto)
    solver_ = split ? RadiusSolver::Eigen : rec.state_dim() <= opt.dense_max ? RadiusSolver::Dense : RadiusSolver::Power;
  if (solver_ == RadiusSolver::Eigen) {
    Eigen::SelfAdjointEigenSolver<Mat> es(rec.hessian(), Eigen::EigenvaluesOnly);
    STALE_CHECK(es.info() == Eigen::Success, "the symmetric eigenvalue solver converged");
    eig_A_ = es.eigenvalues();
  }
}

RadiusResult StabilityPredictor::radius(double gamma) const {
  RadiusResult r;
  r.solver = solver_;
  if (solver_ == RadiusSolver::Dense) {
    r.rho = max_abs_eigenvalue(rec_.monodromy(gamma));
    return r;
  }
  if (solver_ == RadiusSolver::Eigen) {
    // one scalar recursion per eigenvalue λ of A: the same pattern on one block with A = [1]
    // and step γλ (the recursion is linear in γA)
    DelayPattern scalar = rec_.pattern();
    scalar.blocks = 1;
    for (auto& u : scalar.period)
      for (auto& row : u.delays) row.resize(1);
    const StaleRecursion one(Mat::Ones(1, 1), BlockPartition(1, 1), scalar);
    double rho = 0;
    std::vector<double> seen;
    for (Index i = 0; i < eig_A_.size(); ++i) {
      const double lambda = eig_A_(i);
      if (!seen.empty() && std::abs(lambda - seen.back()) <= 1e-15 * std::abs(lambda)) continue;  // repeated
      seen.push_back(lambda);
      rho = std::max(rho, max_abs_eigenvalue(one.monodromy(gamma * lambda)));
    }
    r.rho = rho;
    return r;
  }
  // subspace iteration with Rayleigh–Ritz: Q ← orth(M Q), Ritz values = eig(Qᵀ M Q)
  const Index N = rec_.state_dim();
  const Index p = std::min<Index>(opt_.power_columns, N);
  Rng rng(opt_.seed, Stream::Init);
  Mat Q(N, p);
  for (Index i = 0; i < Q.size(); ++i) Q.data()[i] = rng.normal();
  Eigen::HouseholderQR<Mat> qr(Q);
  Q = qr.householderQ() * Mat::Identity(N, p);
  double prev = -1;
  int steady = 0;
  r.converged = false;
  for (int it = 1; it <= opt_.power_max_periods; ++it) {
    Mat Z = Q;
    rec_.apply_period(gamma, Z);
    const Mat H = Q.transpose() * Z;
    const double ritz = max_abs_eigenvalue(H);
    qr.compute(Z);
    Q = qr.householderQ() * Mat::Identity(N, p);
    r.rho = ritz;
    r.iterations = it;
    steady = std::abs(ritz - prev) <= opt_.power_tol * std::max(ritz, 1e-300) ? steady + 1 : 0;
    prev = ritz;
    if (steady >= 5) {
      r.converged = true;
      break;
    }
  }
  return r;
}

StepBound largest_stable_step(const StabilityPredictor& p, double L, double rel_tol, double stable_tol) {
  STALE_CHECK(L > 0 && std::isfinite(L), "L > 0");
  StepBound b;
  auto eval = [&](double gamma) {
    const RadiusResult r = p.radius(gamma);
    ++b.evaluations;
    b.converged = b.converged && r.converged;
    return r.rho;
  };
  const double g0 = 2.0 / (L * p.recursion().pattern().step_scale);
  double lo, hi, rho_lo, rho_hi;
  const double r0 = eval(g0);
  if (r0 <= 1 + stable_tol) {
    lo = g0, rho_lo = r0, hi = 2 * g0, rho_hi = eval(hi);
    for (int i = 0; rho_hi <= 1 + stable_tol; ++i) {
      STALE_CHECK(i < 60, "some step size is unstable");
      lo = hi, rho_lo = rho_hi, hi *= 2, rho_hi = eval(hi);
    }
  } else {
    hi = g0, rho_hi = r0, lo = g0 / 2, rho_lo = eval(lo);
    for (int i = 0; rho_lo > 1 + stable_tol; ++i) {
      if (i >= 200) {  // no stable step: a direction with ρ > 1 for every γ (A not ⪰ 0)
        b.gamma_max = 0, b.rho_below = rho_lo, b.rho_above = rho_hi;
        return b;
      }
      hi = lo, rho_hi = rho_lo, lo /= 2, rho_lo = eval(lo);
    }
  }
  while (hi - lo > rel_tol * hi) {
    const double mid = 0.5 * (lo + hi);
    const double rm = eval(mid);
    if (rm <= 1 + stable_tol) lo = mid, rho_lo = rm;
    else hi = mid, rho_hi = rm;
  }
  b.gamma_max = lo;
  b.rho_below = rho_lo;
  b.rho_above = rho_hi;
  return b;
}

}  // namespace stale
