// Each delay model's empirical law against its definition, its bound, and purity.
#include <doctest/doctest.h>

#include <cmath>

#include "delays/delay_model.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("delays");

using namespace stale;

namespace {
struct Moments {
  double mean = 0, var = 0;
  int64_t max = 0;
};
// 10^5 draws at k ≥ bound (steady state), spread over blocks and k
Moments sample(const DelayModel& m, int64_t k0) {
  const int N = 100000;
  double s = 0, s2 = 0;
  Moments r;
  for (int t = 0; t < N; ++t) {
    const int64_t k = k0 + t / 4;
    const int64_t d = m.delay(k, t % 4);
    CHECK_MESSAGE(d <= m.bound(), "delay above bound");
    r.max = std::max(r.max, d);
    s += static_cast<double>(d);
    s2 += static_cast<double>(d) * static_cast<double>(d);
  }
  r.mean = s / N;
  r.var = s2 / N - r.mean * r.mean;
  return r;
}
void check_mean(const Moments& m, double expected) {
  const double se = std::sqrt(std::max(m.var, 1e-12) / 100000.0);
  CHECK(std::abs(m.mean - expected) <= 3 * se);
}
}  // namespace

TEST_CASE("UniformDelayIsUniformOnZeroToDelta") {
  auto m = make_uniform_delay(60, 7);
  const Moments r = sample(*m, 1000);
  check_mean(r, 30.0);
  // variance of U{0..δ} is ((δ+1)² − 1)/12
  CHECK(r.var == doctest::Approx((61.0 * 61.0 - 1) / 12).epsilon(0.02));
  CHECK(r.max == 60);
  // early updates cannot reach before w_0: delay ≤ k
  for (int64_t k = 0; k < 60; ++k)
    for (int i = 0; i < 8; ++i) CHECK(m->delay(k, i) <= k);
}

TEST_CASE("GeometricDelayMatchesTruncatedGeometricMean") {
  auto m = make_geometric_delay(5.0, 30, 3);
  const Moments r = sample(*m, 100);
  check_mean(r, truncated_geometric_mean(5.0, 30));
  CHECK(r.max <= 30);
  // P(D = 0) = p / (1 − q^{31}) with p = 1/6
  int zeros = 0;
  for (int t = 0; t < 100000; ++t) zeros += m->delay(100 + t, 0) == 0;
  const double q = 5.0 / 6.0, p0 = (1 - q) / (1 - std::pow(q, 31));
  CHECK(std::abs(zeros / 1e5 - p0) <= 3 * std::sqrt(p0 * (1 - p0) / 1e5));
}

TEST_CASE("ConstantAndZeroDelaysAreWhatTheySay") {
  auto c = make_constant_delay(14);
  CHECK(c->delay(3, 0) == 3);
  CHECK(c->delay(100, 2) == 14);
  CHECK(c->bound() == 14);
  auto z = make_zero_delay();
  CHECK(z->delay(100, 1) == 0);
  CHECK(z->bound() == 0);
}

TEST_CASE("DelayModelsArePureFunctionsOfSeedUpdateAndBlock") {
  auto a = make_uniform_delay(100, 42), b = make_uniform_delay(100, 42), c = make_uniform_delay(100, 43);
  int differ = 0;
  for (int64_t k = 500; k > 100; --k) {  // asked in another order
    CHECK(a->delay(k, 3) == b->delay(k, 3));
    differ += a->delay(k, 3) != c->delay(k, 3);
  }
  CHECK(differ > 300);
}

TEST_CASE("DelaysOfAllBlocksAtOnceEqualTheBlockByBlockDelays") {
  // delays(k, d) is the run loop's call; delay(k, i) the definition
  std::vector<std::unique_ptr<DelayModel>> models;
  models.push_back(make_uniform_delay(37, 5));
  models.push_back(make_uniform_delay(16320, 0));
  models.push_back(make_constant_delay(9));
  models.push_back(make_zero_delay());
  for (const auto& m : models) {
    std::vector<int64_t> d(128);
    for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{20}, int64_t{36}, int64_t{37}, int64_t{5000}, int64_t{187263}}) {
      m->delays(k, d);
      for (int i = 0; i < 128; ++i) REQUIRE(d[static_cast<size_t>(i)] == m->delay(k, i));
    }
  }
}

TEST_SUITE_END();
