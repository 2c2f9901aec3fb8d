// Nesterov momentum as a per-block update rule (Sutskever, Martens, Dahl & Hinton 2013, in the
// form deep-learning libraries use), each stage stepping its own block:
//
//   v ← β v + g;     w ← w − γ_t (g + β v)          (β = method.momentum)
//
// The look-ahead g + βv is the heavy-ball step taken from where the velocity is about to carry
// the block; with β = 0 it is SGD bit for bit. Under staleness the velocity accumulates stale
// gradients as heavy ball's does (docs/theory.md §3 covers neither; the bound printed is SGD's).
//
// This rule is this file and its test: it registers itself (method.optimizer = "nesterov",
// `stale list rules`), reads method.momentum through its entry's keys, and keeps one velocity
// per coordinate (the resource estimate and the checkpoint read that from here).
#include "optimizers/update_rule.hpp"

namespace stale {
namespace {

class Nesterov final : public VelocityRule {
 public:
  using VelocityRule::VelocityRule;
  void step(VecRef w, ConstVecRef g, double lr, Vec& delta) override {
    v_ = beta_ * v_ + g;
    delta = -lr * (g + beta_ * v_);
    w += delta;
  }
};

const bool registered = UpdateRuleRegistry::add(
    {"nesterov", "Nesterov momentum: v <- beta v + g; w <- w - lr (g + beta v) (method.momentum = beta)", 2,
     {"method.momentum"}, 1.0,
     [](const UpdateRuleParams& p, Index n) { return std::make_unique<Nesterov>(p.momentum, n); }});

}  // namespace
}  // namespace stale
