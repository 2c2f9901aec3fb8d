// RPD — Randomized PipeDream (Ilin & Richtárik 2026, arXiv 2606.03498; theory.md §2).
//
//   for k = 0, 1, …:
//     delays  d_k^(i) = k − j_k^(i) ∈ [0, min(δ, k)] from the delay model (independent of s_k, m_k)
//     z_k     = (w_{j_k^(1)}^(1), …, w_{j_k^(S)}^(S))                  (the mixed stale point)
//     s_k ~ U{1..S},  m_k ~ U{1..M}
//     w_{k+1}^(s_k) = w_k^(s_k) − γ (∇_{w^(s_k)} f_{m_k}(z_k) + ξ_k);  other blocks unchanged
//
// The gradient is evaluated at z_k, the update applied to the current w_k. Old block values
// come from the VersionStore, which keeps only the δ + 1 versions per block a read can reach.
// With delay.name = "schedule" and delay.follow_order, s_k and m_k are the schedule's own
// (RpdOrder): RPD then replays PipeDream exactly, which the tests check bit for bit.
#include "delays/delay_model.hpp"
#include "src/core/error.hpp"
#include "optimizers/method.hpp"
#include "optimizers/sampling.hpp"
#include "src/pipeline/version_store.hpp"

namespace stale {
namespace {
class Rpd final : public Method {
 public:
  Rpd(MethodParams p, std::shared_ptr<const DelayModel> delays, RpdOrder order)
      : p_(p), delays_(std::move(delays)), order_(std::move(order)) {}
  std::string name() const override { return "rpd"; }
  RunPlan plan(const Objective&) const override {
    RunPlan pl;
    pl.updates = p_.updates;
    pl.delay_bound = delays_->bound();
    pl.delay_mean = delays_->steady_state_mean();
    pl.delay_name = delays_->name();
    pl.schedule = order_.schedule;
    pl.simulation = order_.simulation;
    if (!order_.times.empty()) pl.note = "method.time_budget: the updates the schedule fits into the budget";
    return pl;
  }

  RunReport run(const Objective& f, const RunPlan& plan, Vec& w, RunObserver& obs) const override {
    const auto& P = f.blocks();
    const int S = f.stages();
    VersionStore store(P, w, delays_->bound());
    StageSampler stages(S, p_.seed);
    BatchSampler batches(f.num_batches(), p_.cyclic_batches, p_.seed);
    GradientNoise noise(p_.grad_noise_std, p_.seed);
    std::vector<std::unique_ptr<BlockOptimizer>> rules;
    for (int s = 0; s < S; ++s) rules.push_back(make_block_optimizer(p_.rule, P.size(s)));
    const bool follow = !order_.stages.empty();
    STALE_CHECK(!follow || static_cast<int64_t>(order_.stages.size()) >= plan.updates, "the order covers every update");
    std::vector<int64_t> d(S);
    Vec z(f.dim()), g(P.max_size()), wb, delta;
    obs.on_start(w);
    for (int64_t k = 0; k < plan.updates && !obs.should_stop(); ++k) {
      for (int i = 0; i < S; ++i) d[i] = delays_->delay(k, i);
      store.gather(d, z);
      double stale_sq = 0;
      for (int i = 0; i < S; ++i)
        if (d[i] > 0) stale_sq += (P.block(z, i) - P.block(store.current(), i)).squaredNorm();
      const int s = follow ? order_.stages[k] : stages.next();
      const int m = follow ? order_.batches[k] : batches.next();
      auto gs = g.head(P.size(s));
      f.batch_block_grad(z, m, s, gs);
      noise.add(gs);
      wb = P.block(store.current(), s);
      rules[s]->step(wb, gs, p_.lr_schedule.at(k), delta);
      store.commit(s, wb);
      UpdateEvent e;
      e.k = k + 1;
      e.stage = s;
      e.batch = m;
      e.grad_norm = gs.norm();
      e.stale_dist = std::sqrt(stale_sq);
      e.delays = &d;
      if (k < static_cast<int64_t>(order_.times.size())) e.time = order_.times[k];
      obs.on_update(e, delta, store.current());
    }
    w = store.current();
    return {};
  }

 private:
  MethodParams p_;
  std::shared_ptr<const DelayModel> delays_;
  RpdOrder order_;
};
}  // namespace
std::unique_ptr<Method> make_rpd(const MethodParams& p, std::shared_ptr<const DelayModel> delays, RpdOrder order) {
  return std::make_unique<Rpd>(p, std::move(delays), std::move(order));
}
}  // namespace stale
