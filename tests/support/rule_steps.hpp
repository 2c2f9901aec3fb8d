#pragma once
// Two steps of a block update rule from w0 with the gradients g1 then g2: the hand-worked
// checks of tests/optimizers (momentum, Nesterov) compare what comes out with their rule.
#include <string>
#include <vector>

#include "optimizers/update_rule.hpp"

namespace stale::test {

struct TwoRuleSteps {
  Vec w1, w2;  // the iterate after each step
  Vec delta2;  // the second step's change
};

inline TwoRuleSteps two_rule_steps(const std::string& optimizer, double momentum, const std::vector<double>& w0,
                                   const std::vector<double>& g1, const std::vector<double>& g2, double lr) {
  auto vec = [](const std::vector<double>& v) { return Vec(Eigen::Map<const Vec>(v.data(), static_cast<Index>(v.size()))); };
  UpdateRuleParams p;
  p.optimizer = optimizer;
  p.momentum = momentum;
  auto rule = make_block_optimizer(p, static_cast<Index>(w0.size()));
  TwoRuleSteps out;
  Vec w = vec(w0), g = vec(g1), delta;
  rule->step(w, g, lr, delta);
  out.w1 = w;
  g = vec(g2);
  rule->step(w, g, lr, delta);
  out.w2 = w;
  out.delta2 = delta;
  return out;
}

}  // namespace stale::test
