#include "objectives/linear_constants.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

// a 64-bit content hash, eight bytes at a time (≈ 1 GB/s: 2 ms for a 600 × 512 data set)
uint64_t hash_bytes(const void* p, size_t n, uint64_t h) {
  const auto* b = static_cast<const unsigned char*>(p);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, b + i, 8);
    h = splitmix64(h ^ word);
  }
  uint64_t tail = 0;
  for (; i < n; ++i) tail = (tail << 8) | b[i];
  return splitmix64(h ^ tail ^ n);
}

// The cache key: the data's content, the loss and λ, and the version of the algorithms that
// produce the constants (bump it whenever a solver or tolerance changes: old entries are
// then simply never found again).
constexpr uint64_t kConstantsAlgorithmVersion = 2;

uint64_t constants_key(const LinearData& data, const char* loss, double lambda) {
  uint64_t h = splitmix64(kConstantsAlgorithmVersion);
  h = hash_bytes(loss, std::strlen(loss), h);
  h = hash_bytes(data.X.data(), sizeof(double) * data.X.size(), h);
  h = hash_bytes(data.y.data(), sizeof(double) * data.y.size(), h);
  h = hash_bytes(data.weight.data(), sizeof(double) * data.weight.size(), h);
  return hash_bytes(&lambda, sizeof lambda, h);
}

std::filesystem::path cache_dir() {
  if (const char* d = std::getenv("STALE_CACHE_DIR")) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME")) return std::filesystem::path(x) / "stale";
  if (const char* home = std::getenv("HOME")) return std::filesystem::path(home) / ".cache" / "stale";
  return std::filesystem::temp_directory_path() / "stale-cache";
}

// One record per data set: λ_max and λ_min of the Hessian, f_* and w_* (empty when f_* is in
// closed form) and how f_* was found. Written to a unique temporary name and renamed, so
// concurrent runs never read a half-written record.
struct CachedConstants {
  double lambda_max = 0, lambda_min = 0, f_star = 0;
  Vec w_star;
  std::string method;
};

std::filesystem::path cache_path(uint64_t key) {
  char name[40];
  std::snprintf(name, sizeof name, "constants-%016llx.bin", static_cast<unsigned long long>(key));
  return cache_dir() / name;
}

bool load_cached(uint64_t key, Index d, CachedConstants& c) {
  std::ifstream in(cache_path(key), std::ios::binary);
  if (!in) return false;
  Index dd = 0, nw = 0, nm = 0;
  in.read(reinterpret_cast<char*>(&dd), sizeof dd);
  if (!in || dd != d) return false;
  in.read(reinterpret_cast<char*>(&c.lambda_max), sizeof(double));
  in.read(reinterpret_cast<char*>(&c.lambda_min), sizeof(double));
  in.read(reinterpret_cast<char*>(&c.f_star), sizeof(double));
  in.read(reinterpret_cast<char*>(&nw), sizeof nw);
  if (!in || (nw != 0 && nw != d)) return false;
  c.w_star.resize(nw);
  in.read(reinterpret_cast<char*>(c.w_star.data()), static_cast<std::streamsize>(sizeof(double) * nw));
  in.read(reinterpret_cast<char*>(&nm), sizeof nm);
  if (!in || nm < 0 || nm > 4096) return false;
  c.method.resize(static_cast<size_t>(nm));
  in.read(c.method.data(), nm);
  return static_cast<bool>(in);
}

void store_cached(uint64_t key, Index d, const CachedConstants& c) {
  const auto path = cache_path(key);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  static std::atomic<int> counter{0};
  const auto tmp = path.string() + ".partial." + std::to_string(getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return;  // a cache that cannot be written only costs time
    const Index nw = c.w_star.size(), nm = static_cast<Index>(c.method.size());
    out.write(reinterpret_cast<const char*>(&d), sizeof d);
    out.write(reinterpret_cast<const char*>(&c.lambda_max), sizeof(double));
    out.write(reinterpret_cast<const char*>(&c.lambda_min), sizeof(double));
    out.write(reinterpret_cast<const char*>(&c.f_star), sizeof(double));
    out.write(reinterpret_cast<const char*>(&nw), sizeof nw);
    out.write(reinterpret_cast<const char*>(c.w_star.data()), static_cast<std::streamsize>(sizeof(double) * nw));
    out.write(reinterpret_cast<const char*>(&nm), sizeof nm);
    out.write(c.method.data(), nm);
    if (!out) {
      out.close();
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace

// L, μ and f_* come from dense d × d matrices (the Gram/Hessian, its factorisation): sized
// before they are formed, so a LIBSVM file with a stray feature index of 10^6 is refused
// with its d instead of std::bad_alloc
void check_dense_hessian(Index d, int copies, const std::string& what) {
  const double bytes = copies * static_cast<double>(d) * static_cast<double>(d) * sizeof(double);
  check_memory(bytes, what + ": " + std::to_string(copies) + " dense d x d matrices at d = " + std::to_string(d) +
                          " (objective.dim, or a LIBSVM file's largest feature index)",
               "reduce objective.dim or check the data file's feature indices");
}

ObjectiveConstants least_squares_constants(const LeastSquaresCpu& f) {
  check_dense_hessian(f.dim(), 2, "least-squares constants (L, mu by eigenvalues, f_* by LDLT)");
  const auto& d = f.data();
  const uint64_t key = constants_key(d, "squared", 0.0);
  CachedConstants cc;
  const bool cached = load_cached(key, f.dim(), cc);
  if (!cached) extreme_eigenvalues(f.gram(), cc.lambda_max, cc.lambda_min);
  ObjectiveConstants c;
  c.L = cc.lambda_max;
  c.L_exact = true;
  c.mu = std::max(cc.lambda_min, 0.0);
  if (d.w_true && (d.X * *d.w_true - d.y).squaredNorm() == 0.0) {
    c.f_star = 0.0;
    c.w_star = *d.w_true;
    c.f_star_method = "closed form (y = X w_true)";
    cc.w_star.resize(0);
    cc.method = c.f_star_method;
  } else if (cached && cc.w_star.size() == f.dim()) {
    c.f_star = cc.f_star;
    c.w_star = cc.w_star;
    c.f_star_method = cc.method + " (cached)";
  } else {
    const Vec rhs = d.X.transpose() * (d.weight.asDiagonal() * d.y);
    Vec w = f.gram().ldlt().solve(rhs);
    c.f_star = f.value(w);
    c.w_star = w;
    c.f_star_method = "normal equations (LDLT)";
    cc.f_star = c.f_star;
    cc.w_star = w;
    cc.method = c.f_star_method;
  }
  if (!cached) store_cached(key, f.dim(), cc);
  return c;
}

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
  const uint64_t key = constants_key(data, "logistic", lambda);
  CachedConstants cc;
  ObjectiveConstants c;
  c.L_exact = false;
  c.mu = lambda;
  if (load_cached(key, f.dim(), cc) && cc.w_star.size() == f.dim()) {
    c.L = 0.25 * (cc.lambda_max - lambda) + lambda;
    c.f_star = cc.f_star;
    c.w_star = cc.w_star;
    c.f_star_method = cc.method + " (cached)";
    return c;
  }
  if (!dual) check_dense_hessian(d, 3, "logistic constants (L by eigenvalues, f_* by damped Newton) for " + data.description);
  if (dual) {
    const Mat A = data.weight.array().sqrt().matrix().asDiagonal() * data.X;
    const Mat kernel = A * A.transpose();  // n × n, the nonzero spectrum of XᵀCX
    extreme_eigenvalues(kernel, cc.lambda_max, cc.lambda_min);
    cc.lambda_max += lambda;
  } else {
    if (d >= 2000)  // eigenvalues of a d × d matrix: O(d³), tens of seconds at d in the thousands
      std::fprintf(stderr, "logistic constants: eigenvalues of the dense %lld x %lld Gram matrix (%s)...\n",
                   static_cast<long long>(d), static_cast<long long>(d), data.description.c_str());
    extreme_eigenvalues(f.gram(), cc.lambda_max, cc.lambda_min);  // gram() = Xᵀ C X + λI
  }
  c.L = 0.25 * (cc.lambda_max - lambda) + lambda;
  Vec w = Vec::Zero(f.dim()), g;
  // damped Newton with Armijo backtracking; the λI term makes the Hessian positive definite
  double fw = f.value_grad(w, g);
  const double g0 = g.norm();
  int it = 0;
  bool stalled = false, at_precision = false;
  // each step forms and factors a dense system (O(n·d² + d³)): at d in the thousands that is
  // seconds per step, so a solve that has run 2 s says on stderr what it is doing (the result
  // is cached, the next run with the same data skips it)
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
    const double slope = g.dot(step);
    // Newton decrement: gᵀH⁻¹g / 2 estimates f(w) − f_*. Once it is below the rounding of f
    // itself, f_* is known to machine precision and further steps only chase rounding noise
    // in ‖g‖ (which on real data stalls near 1e-11 ‖g0‖, below the 1e-12 aim)
    if (0.5 * slope <= 1e-15 * std::max(1.0, std::abs(fw))) {
      at_precision = true;
      break;
    }
    double t = 1.0;
    Vec trial;
    double ft = 0;
    for (int ls = 0; ls < 60; ++ls) {
      trial = w - t * step;
      ft = f.value(trial);
      if (ft <= fw - 1e-4 * t * slope) break;
      t *= 0.5;
    }
    if (!(ft < fw) && t < 1e-12) {  // no further progress in floating point
      stalled = true;
      break;
    }
    w = trial;
    fw = f.value_grad(w, g);
    report(it + 1);
  }
  c.f_star = fw;
  c.w_star = w;
  char buf[160];
  std::snprintf(buf, sizeof buf, "newton%s, %d steps, |g|/|g0| = %.2e%s", dual ? " (n x n Woodbury)" : "", it,
                g.norm() / g0, at_precision ? ", Newton decrement at machine precision" : "");
  c.f_star_method = buf;
  // only a converged solve is cached: a later run must not inherit a bad f_*
  const double rel = g0 > 0 ? g.norm() / g0 : 0.0;
  if (rel <= 1e-12 || at_precision || (stalled && rel <= 1e-9)) {
    cc.f_star = fw;
    cc.w_star = w;
    cc.method = buf;
    store_cached(key, f.dim(), cc);
  }
  return c;
}

}  // namespace stale
