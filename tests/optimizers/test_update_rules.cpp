// The per-block update rules and step-size schedules against values computed by hand from
// their definitions (optimizers/update_rule.hpp).
#include <doctest/doctest.h>

#include <cmath>

#include "optimizers/update_rule.hpp"
#include "tests/support/rule_steps.hpp"

using namespace stale;

TEST_SUITE("optimizers") {

TEST_CASE("OneMomentumStepAndTheNextAreTheHeavyBallRule") {
  // β = 0.5, γ = 0.1, w0 = (1, 1): v1 = g1 = (1, −2), w1 = (0.9, 1.2);
  // v2 = 0.5 v1 + g2 = (3.5, −1), w2 = w1 − 0.1 v2 = (0.55, 1.3)
  const auto s = test::two_rule_steps("momentum", 0.5, {1, 1}, {1, -2}, {3, 0}, 0.1);
  CHECK(s.w1(0) == doctest::Approx(0.9).epsilon(1e-15));
  CHECK(s.w1(1) == doctest::Approx(1.2).epsilon(1e-15));
  CHECK(s.w2(0) == doctest::Approx(0.55).epsilon(1e-15));
  CHECK(s.w2(1) == doctest::Approx(1.3).epsilon(1e-15));
  CHECK(s.delta2(0) == doctest::Approx(-0.35).epsilon(1e-15));
}

TEST_CASE("TwoAdamWStepsFollowTheBiasCorrectedRuleWithDecoupledDecay") {
  // β1 = 0.9, β2 = 0.999, ε = 1e-8, λ = 0.1, γ = 0.01, w0 = 2
  UpdateRuleParams p;
  p.optimizer = "adamw";
  p.weight_decay = 0.1;
  auto rule = make_block_optimizer(p, 1);
  Vec w(1), g(1), delta;
  w << 2;
  g << 0.5;
  rule->step(w, g, 0.01, delta);
  // m = 0.05, v = 0.00025, m̂ = 0.5, v̂ = 0.25: step 0.5 / (0.5 + 1e-8); decay 0.01 · 0.1 · 2
  const double w1 = 2 - 0.01 * (0.5 / (0.5 + 1e-8)) - 0.01 * 0.1 * 2;
  CHECK(w(0) == doctest::Approx(w1).epsilon(1e-14));
  g << -1;
  rule->step(w, g, 0.01, delta);
  // m = 0.9·0.05 − 0.1 = −0.055, v = 0.999·0.00025 + 0.001 = 0.00124975,
  // m̂ = −0.055/(1 − 0.81), v̂ = 0.00124975/(1 − 0.998001)
  const double mh = -0.055 / 0.19, vh = 0.00124975 / 0.001999;
  const double w2 = w1 - 0.01 * (mh / (std::sqrt(vh) + 1e-8)) - 0.01 * 0.1 * w1;
  CHECK(w(0) == doctest::Approx(w2).epsilon(1e-13));
}

TEST_CASE("WarmUpThenCosineHitItsBoundaryValues") {
  // γ = 1, γ_min = 0.1, 4 warm-up updates, K = 12
  LrSchedule s{"cosine", 1.0, 0.1, 4, 12};
  CHECK(s.at(0) == doctest::Approx(0.25));  // (k + 1)/warmup
  CHECK(s.at(3) == doctest::Approx(1.0));   // the last warm-up update reaches the peak
  CHECK(s.at(4) == doctest::Approx(1.0));   // cosine starts at its peak
  CHECK(s.at(8) == doctest::Approx(0.55));  // half way: γ_min + (γ − γ_min)/2
  CHECK(s.at(12) == doctest::Approx(0.1));  // the end: γ_min
  CHECK(s.at(100) == doctest::Approx(0.1)); // beyond K it stays there
  LrSchedule c{"constant", 0.5, 0.0, 2, 10};
  CHECK(c.at(0) == doctest::Approx(0.25));  // warm-up applies to a constant step too
  CHECK(c.at(1) == doctest::Approx(0.5));
  CHECK(c.at(9) == doctest::Approx(0.5));
}

}  // TEST_SUITE
