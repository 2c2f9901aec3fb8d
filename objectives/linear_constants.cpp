#include "objectives/linear_constants.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "src/core/error.hpp"
#include "src/core/memory.hpp"
#include "src/core/rng.hpp"

namespace stale {

void extreme_eigenvalues(const Mat& H, double& lambda_max, double& lambda_min) {
  if (H.rows() <= 4096) {
    Eigen::SelfAdjointEigenSolver<Mat> es(H, Eigen::EigenvaluesOnly);
    lambda_max = es.eigenvalues().maxCoeff();
    lambda_min = es.eigenvalues().minCoeff();
    return;
  }
  Rng rng(0, Stream::Eval);
  Vec v(H.rows());
  for (Index i = 0; i < v.size(); ++i) v(i) = rng.normal();
  v.normalize();
  double lam = 0;
  for (int it = 0; it < 2000; ++it) {
    Vec u = H * v;
    const double next = v.dot(u);
    v = u.normalized();
    if (std::abs(next - lam) <= 1e-13 * std::abs(next)) {
      lam = next;
      break;
    }
    lam = next;
  }
  lambda_max = lam;
  lambda_min = 0.0;
}

namespace {
// L, μ and f_* come from dense d × d matrices (the Gram/Hessian, its factorisation): sized
// before they are formed, so a LIBSVM file with a stray feature index of 10^6 is refused
// with its d instead of std::bad_alloc
void check_dense_hessian(Index d, int copies, const std::string& what) {
  const double bytes = copies * static_cast<double>(d) * static_cast<double>(d) * sizeof(double);
  check_memory(bytes, what + ": " + std::to_string(copies) + " dense d x d matrices at d = " + std::to_string(d) +
                          " (objective.dim, or a LIBSVM file's largest feature index)",
               "reduce objective.dim or check the data file's feature indices");
}
}  // namespace

ObjectiveConstants least_squares_constants(const LeastSquaresCpu& f) {
  check_dense_hessian(f.dim(), 2, "least-squares constants (L, mu by eigenvalues, f_* by LDLT)");
  ObjectiveConstants c;
  double lmax = 0, lmin = 0;
  extreme_eigenvalues(f.gram(), lmax, lmin);
  c.L = lmax;
  c.L_exact = true;
  c.mu = std::max(lmin, 0.0);
  const auto& d = f.data();
  if (d.w_true && (d.X * *d.w_true - d.y).squaredNorm() == 0.0) {
    c.f_star = 0.0;
    c.w_star = *d.w_true;
    c.f_star_method = "closed form (y = X w_true)";
  } else {
    const Vec rhs = d.X.transpose() * (d.weight.asDiagonal() * d.y);
    Vec w = f.gram().ldlt().solve(rhs);
    c.f_star = f.value(w);
    c.w_star = w;
    c.f_star_method = "normal equations (LDLT)";
  }
  return c;
}

namespace {

uint64_t hash_bytes(const void* p, size_t n, uint64_t h) {
  const auto* b = static_cast<const unsigned char*>(p);
  uint64_t word = 0;
  for (size_t i = 0; i < n; ++i) {
    word = (word << 8) | b[i];
    if ((i & 7) == 7) h = splitmix64(h ^ word), word = 0;
  }
  return splitmix64(h ^ word ^ n);
}

std::filesystem::path cache_dir() {
  if (const char* d = std::getenv("STALE_CACHE_DIR")) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME")) return std::filesystem::path(x) / "stale";
  if (const char* home = std::getenv("HOME")) return std::filesystem::path(home) / ".cache" / "stale";
  return std::filesystem::temp_directory_path() / "stale-cache";
}

bool load_cached(const std::filesystem::path& p, Index d, double& f_star, Vec& w) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  Index dd = 0;
  in.read(reinterpret_cast<char*>(&dd), sizeof dd);
  if (dd != d) return false;
  w.resize(d);
  in.read(reinterpret_cast<char*>(&f_star), sizeof f_star);
  in.read(reinterpret_cast<char*>(w.data()), static_cast<std::streamsize>(sizeof(double) * d));
  return static_cast<bool>(in);
}

void store_cached(const std::filesystem::path& p, double f_star, const Vec& w) {
  std::error_code ec;
  std::filesystem::create_directories(p.parent_path(), ec);
  const auto tmp = p.string() + ".partial";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return;  // a cache that cannot be written only costs time
    const Index d = w.size();
    out.write(reinterpret_cast<const char*>(&d), sizeof d);
    out.write(reinterpret_cast<const char*>(&f_star), sizeof f_star);
    out.write(reinterpret_cast<const char*>(w.data()), static_cast<std::streamsize>(sizeof(double) * d));
  }
  std::filesystem::rename(tmp, p, ec);
}

}  // namespace

ObjectiveConstants logistic_constants(const LogisticCpu& f) {
  const auto& data = f.data();
  const double lambda = f.l2();
  // With fewer samples than features (a LIBSVM file with one large feature index) the d × d
  // Hessian λI + BᵀB, B = D^{1/2} X (n × d), is handled in the n-dimensional sample space:
  // BᵀB and BBᵀ share their nonzero eigenvalues, and (Woodbury)
  //   (λI + BᵀB)⁻¹ g = (g − Bᵀ (λI_n + BBᵀ)⁻¹ B g) / λ,
  // so a step costs O(n²d + n³) instead of O(nd² + d³) and memory is n² + nd, not d².
  const Index n = data.X.rows(), d = f.dim();
  const bool dual = n < d && lambda > 0;
  if (!dual) check_dense_hessian(d, 3, "logistic constants (L by eigenvalues, f_* by damped Newton) for " + data.description);
  ObjectiveConstants c;
  double lmax = 0, lmin = 0;
  if (dual) {
    const Mat A = data.weight.array().sqrt().matrix().asDiagonal() * data.X;
    const Mat kernel = A * A.transpose();  // n × n, the nonzero spectrum of XᵀCX
    extreme_eigenvalues(kernel, lmax, lmin);
    lmax += lambda;
  } else {
    if (d >= 2000)  // eigenvalues of a d × d matrix: O(d³), tens of seconds at d in the thousands
      std::fprintf(stderr, "logistic constants: eigenvalues of the dense %lld x %lld Gram matrix (%s)...\n",
                   static_cast<long long>(d), static_cast<long long>(d), data.description.c_str());
    extreme_eigenvalues(f.gram(), lmax, lmin);  // gram() = Xᵀ C X + λI
  }
  c.L = 0.25 * (lmax - lambda) + lambda;
  c.L_exact = false;
  c.mu = lambda;

  uint64_t h = 0x10615;
  h = hash_bytes(data.X.data(), sizeof(double) * data.X.size(), h);
  h = hash_bytes(data.y.data(), sizeof(double) * data.y.size(), h);
  h = hash_bytes(data.weight.data(), sizeof(double) * data.weight.size(), h);
  h = hash_bytes(&lambda, sizeof lambda, h);
  char name[40];
  std::snprintf(name, sizeof name, "logistic-%016llx.bin", static_cast<unsigned long long>(h));
  const auto path = cache_dir() / name;

  Vec w = Vec::Zero(f.dim()), g;
  double fs = 0;
  if (load_cached(path, f.dim(), fs, w)) {
    c.f_star = fs;
    c.w_star = w;
    c.f_star_method = "newton (cached)";
    return c;
  }
  // damped Newton with Armijo backtracking; the λI term makes the Hessian positive definite
  double fw = f.value_grad(w, g);
  const double g0 = g.norm();
  int it = 0;
  // each step forms and factors the d × d Hessian (O(n·d² + d³)): at d in the thousands that
  // is seconds per step, so a solve that has run 2 s says on stderr what it is doing (the
  // result is cached, the next run with the same data skips it)
  const auto t0 = std::chrono::steady_clock::now();
  bool announced = false;
  auto report = [&](int step) {
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (secs < 2.0) return;
    if (!announced)
      std::fprintf(stderr, "logistic f_*: damped Newton on a dense %lld x %lld system (%s); cached afterwards in %s\n",
                   static_cast<long long>(dual ? n : d), static_cast<long long>(dual ? n : d), data.description.c_str(),
                   cache_dir().string().c_str());
    announced = true;
    std::fprintf(stderr, "logistic f_*: Newton step %d, |grad|/|grad_0| = %.2e, %.1f s\n", step, g.norm() / g0, secs);
    std::fflush(stderr);
  };
  for (; it < 200 && g.norm() > 1e-12 * g0; ++it) {
    const Vec a = data.X * w;
    Vec curv(a.size());
    for (Index i = 0; i < a.size(); ++i) curv(i) = data.weight(i) * LogisticLoss::curvature(a(i), data.y(i));
    Vec step;
    if (dual) {
      const Mat B = curv.array().max(0.0).sqrt().matrix().asDiagonal() * data.X;
      Mat small = B * B.transpose();
      small.diagonal().array() += lambda;
      step = (g - B.transpose() * small.ldlt().solve(B * g)) / lambda;
    } else {
      Mat Hm = data.X.transpose() * (curv.asDiagonal() * data.X);
      Hm.diagonal().array() += lambda;
      step = Hm.ldlt().solve(g);
    }
    double t = 1.0;
    const double slope = g.dot(step);
    Vec trial;
    double ft = 0;
    for (int ls = 0; ls < 60; ++ls) {
      trial = w - t * step;
      ft = f.value(trial);
      if (ft <= fw - 1e-4 * t * slope) break;
      t *= 0.5;
    }
    if (!(ft < fw) && t < 1e-12) break;  // no further progress in floating point
    w = trial;
    fw = f.value_grad(w, g);
    report(it + 1);
  }
  c.f_star = fw;
  c.w_star = w;
  char buf[96];
  std::snprintf(buf, sizeof buf, "newton%s, %d steps, |g|/|g0| = %.2e", dual ? " (n x n Woodbury)" : "", it, g.norm() / g0);
  c.f_star_method = buf;
  store_cached(path, fw, w);
  return c;
}

}  // namespace stale
