#include "objectives/linear/linear_data.hpp"

#include <cmath>

#include "objectives/linear/normal_draw_cache.hpp"
#include "src/core/error.hpp"
#include "src/core/rng.hpp"

namespace stale {

void partition_batches(LinearData& data, Index batch_size) {
  const Index n = data.n();
  STALE_CHECK(batch_size >= 1 && batch_size <= n, "1 <= batch_size <= n");
  const Index M = n / batch_size, base = n / M, extra = n % M;
  data.batch_offsets.assign(M + 1, 0);
  data.weight.resize(n);
  for (Index m = 0; m < M; ++m) {
    const Index size = base + (m < extra ? 1 : 0);
    data.batch_offsets[m + 1] = data.batch_offsets[m] + size;
    data.weight.segment(data.batch_offsets[m], size).setConstant(1.0 / (static_cast<double>(M) * size));
  }
}

namespace {
Mat gaussian(Index rows, Index cols, Rng& rng) {
  Mat A(rows, cols);
  // column by column (the column-major storage order), so the draw order is fixed
  draw_normals(rng, A.data(), static_cast<size_t>(A.size()));
  return A;
}
Vec gaussian(Index n, Rng& rng) {
  Vec v(n);
  draw_normals(rng, v.data(), static_cast<size_t>(n));
  return v;
}
// n × d with orthonormal columns, from the QR of a Gaussian matrix (needs n >= d)
Mat orthonormal_columns(Index n, Index d, Rng& rng) {
  Eigen::HouseholderQR<Mat> qr(gaussian(n, d, rng));
  Mat Q = qr.householderQ() * Mat::Identity(n, d);
  // fix signs so Q is a deterministic function of the Gaussian draw
  const Mat R = qr.matrixQR().topRows(d).triangularView<Eigen::Upper>();
  for (Index j = 0; j < d; ++j)
    if (R(j, j) < 0) Q.col(j) *= -1.0;
  return Q;
}
}  // namespace

LinearData make_random_least_squares(Index n, Index d, uint64_t seed) {
  Rng rng(seed, Stream::DataGen, 1);
  LinearData data;
  data.X = gaussian(n, d, rng);
  data.w_true = gaussian(d, rng);
  data.y = data.X * *data.w_true;
  data.description = "random least squares, X ~ N(0,1), y = X w_true";
  return data;
}

LinearData make_nesterov_least_squares(Index n, Index d, double mu, uint64_t seed) {
  if (n < d) throw UserError("objective.samples: the nesterov generator needs samples >= dim (got n = " +
                             std::to_string(n) + ", d = " + std::to_string(d) + ")");
  Rng rng(seed, Stream::DataGen, 2);
  Mat A = Mat::Zero(d, d);
  for (Index i = 0; i < d; ++i) {
    A(i, i) = 2.0 + mu;
    if (i + 1 < d) A(i, i + 1) = A(i + 1, i) = -1.0;
  }
  const Mat Lc = A.llt().matrixL();
  LinearData data;
  data.X = std::sqrt(static_cast<double>(n)) * orthonormal_columns(n, d, rng) * Lc.transpose();
  data.w_true = gaussian(d, rng);
  data.y = data.X * *data.w_true;
  data.description = "nesterov least squares, Hessian T + mu I";
  return data;
}

Vec prescribed_spectrum(Index d, double mu, double L, bool geometric) {
  Vec lam(d);
  for (Index i = 0; i < d; ++i) {
    const double t = d == 1 ? 0.0 : static_cast<double>(i) / static_cast<double>(d - 1);
    lam(i) = geometric ? L * std::pow(mu / L, t) : L + (mu - L) * t;
  }
  return lam;
}

LinearData make_spectrum_least_squares(Index n, Index d, double mu, double L, bool geometric, uint64_t seed) {
  if (n < d) throw UserError("objective.samples: the spectrum generator needs samples >= dim");
  if (!(mu <= L)) throw UserError("objective.mu must be <= objective.L for the spectrum generator");
  Rng rng(seed, Stream::DataGen, 3);
  const Vec lam = prescribed_spectrum(d, mu, L, geometric);
  const Mat Q = orthonormal_columns(n, d, rng);
  const Mat V = orthonormal_columns(d, d, rng);
  LinearData data;
  data.X = std::sqrt(static_cast<double>(n)) * Q * lam.cwiseSqrt().asDiagonal() * V.transpose();
  data.w_true = gaussian(d, rng);
  data.y = data.X * *data.w_true;
  data.description = "prescribed-spectrum least squares";
  return data;
}

LinearData make_synthetic_logistic(Index n, Index d, uint64_t seed) {
  Rng rng(seed, Stream::DataGen, 4);
  LinearData data;
  data.X = gaussian(n, d, rng);
  data.w_true = gaussian(d, rng);
  const Vec logits = data.X * *data.w_true;
  data.y.resize(n);
  for (Index i = 0; i < n; ++i) data.y(i) = rng.uniform() < 1.0 / (1.0 + std::exp(-logits(i))) ? 1.0 : 0.0;
  data.description = "synthetic logistic, X ~ N(0,1), y ~ Bernoulli(sigmoid(X w_true))";
  return data;
}

}  // namespace stale
