// Randomized block-coordinate SGD with fresh reads: RPD without staleness.
//
//   s_k ~ U{1..S}, m_k ~ U{1..M}:  w_{k+1}^(s_k) = w_k^(s_k) − γ_k (∇_{w^(s_k)} f_{m_k}(w_k) + ξ_k)
//
// RPD (rpd.cpp) with the zero delay model must reproduce this bit for bit: both draw s_k
// and m_k from the same streams in the same order and evaluate the same block gradient.
#include "optimizers/method_registry.hpp"
#include "optimizers/sampling.hpp"

namespace stale {
namespace {
class Bcd final : public Method {
 public:
  explicit Bcd(MethodParams p) : p_(p) {}
  std::string name() const override { return "bcd"; }
  RunPlan plan(const Objective&) const override {
    RunPlan pl;
    pl.updates = p_.updates;
    return pl;
  }
  RunReport run(const Objective& f, const RunPlan& plan, Vec& w, RunObserver& obs) const override {
    const auto& P = f.blocks();
    StageSampler stages(f.stages(), p_.seed);
    BatchSampler batches(f.num_batches(), p_.cyclic_batches, p_.seed);
    GradientNoise noise(p_.grad_noise_std, p_.seed);
    std::vector<std::unique_ptr<BlockOptimizer>> rules;
    for (int s = 0; s < f.stages(); ++s) rules.push_back(make_block_optimizer(p_.rule, P.size(s)));
    Vec g(P.max_size()), delta;
    obs.on_start(w);
    for (int64_t k = 0; k < plan.updates && !obs.should_stop(); ++k) {
      const int s = stages.next();
      const int m = batches.next();
      auto gs = g.head(P.size(s));
      f.batch_block_grad(w, m, s, gs);
      noise.add(gs);
      rules[s]->step(P.block(w, s), gs, p_.lr_schedule.at(k), delta);
      UpdateEvent e;
      e.k = k + 1;
      e.stage = s;
      e.batch = m;
      e.grad_norm = gs.norm();
      obs.on_update(e, delta, w);
    }
    return {};
  }

 private:
  MethodParams p_;
};
const bool registered = MethodRegistry::add(
    {"bcd", "randomized block-coordinate SGD: one uniformly drawn block per update, fresh reads", 1, MethodKind::Fresh,
     "", false, false, {}, [](const Config&, const MethodParams& p, const Objective&) -> std::unique_ptr<Method> {
       return std::make_unique<Bcd>(p);
     }});
}  // namespace
}  // namespace stale
