// RPD — Randomized PipeDream (Ilin & Richtárik 2026, arXiv 2606.03498; docs/theory.md §2).
//
//   for k = 0, 1, …:
//     delays  d_k^(i) = k − j_k^(i) ∈ [0, min(δ, k)] from the delay model (independent of s_k, m_k)
//     z_k     = (w_{j_k^(1)}^(1), …, w_{j_k^(S)}^(S))                  (the mixed stale point)
//     s_k ~ U{1..S},  m_k ~ U{1..M}
//     w_{k+1}^(s_k) = w_k^(s_k) − γ (∇_{w^(s_k)} f_{m_k}(z_k) + ξ_k);  other blocks unchanged
//
// The gradient is evaluated at z_k, the update applied to the current w_k. Old block values
// come from the VersionStore, which keeps only the δ + 1 versions per block a read can reach;
// z_k is read there in place (located blocks handed to the objective), never copied.
// With delay.name = "schedule" and delay.follow_order, s_k and m_k are the schedule's own
// (RpdOrder): RPD then replays PipeDream exactly, which the tests check bit for bit.
#include <algorithm>
#include <cmath>

#include "delays/delay_model.hpp"
#include "src/core/block_distance.hpp"
#include "src/core/error.hpp"
#include "optimizers/method_registry.hpp"
#include "optimizers/schedule_planner.hpp"
#include "src/config/config.hpp"
#include "src/pipeline/simulator.hpp"
#include "optimizers/sampling.hpp"
#include "src/pipeline/version_store.hpp"
#include "src/core/state_bag.hpp"

namespace stale {
namespace {

// Everything RPD's loop carries from one update to the next, with save/restore for
// checkpoints: the version store, the stage, batch and noise streams, one update rule per
// block, and k. The version store is saved as what a read can still reach — the iterate at
// k − W (W = min(k, δ)) and the W block commits since — and restored by replaying those
// commits, so every stale read after a resume returns the value it would have returned.
struct LoopState : BlockStepDraws {
  const BlockPartition& P;
  VersionStore store;
  int64_t k = 0;
  std::vector<int64_t> committed;  // block committed by update j, at j mod δ (the last δ updates)

  LoopState(const Objective& f, const MethodParams& p, const Vec& w0, int64_t bound)
      : BlockStepDraws(f, p), P(f.blocks()), store(P, w0, bound),
        committed(static_cast<size_t>(std::max<int64_t>(bound, 0)), -1) {}
  void commit(int s, ConstVecRef value) {
    if (!committed.empty()) committed[static_cast<size_t>(k % store.bound())] = s;
    store.commit(s, value);
    ++k;
  }
  void save(StateBag& b) const {
    b.put("k", k);
    // the store counts its own commits (a restored one from its window's start): read by that count
    const int64_t W = std::min<int64_t>(k, store.bound()), ks = store.updates();
    Vec base(P.dim());
    for (int i = 0; i < P.stages(); ++i) P.block(base, i) = store.read(i, ks - W);
    b.put("store/base", base);
    std::vector<int64_t> blocks;
    std::vector<double> values;
    for (int64_t j = k - W; j < k; ++j) {
      const int s = static_cast<int>(committed[static_cast<size_t>(j % store.bound())]);
      blocks.push_back(s);
      const auto v = store.read(s, ks - k + j + 1);
      values.insert(values.end(), v.data(), v.data() + v.size());
    }
    b.put_ints("store/blocks", blocks);
    b.put_doubles("store/values", values);
    BlockStepDraws::save(b);
  }
  void restore(const StateBag& b) {
    k = b.get_int("k");
    const auto& blocks = b.get_ints("store/blocks");
    const auto& values = b.get_doubles("store/values");
    const int64_t W = static_cast<int64_t>(blocks.size());
    if (W != std::min<int64_t>(k, store.bound())) throw UserError("checkpoint: the version store's window does not match delay.max");
    store = VersionStore(P, b.get_vec("store/base"), store.bound());
    size_t at = 0;
    for (int64_t t = 0; t < W; ++t) {
      const int s = static_cast<int>(blocks[t]);
      if (s < 0 || s >= P.stages() || at + P.size(s) > values.size()) throw UserError("checkpoint: a corrupt version store");
      store.commit(s, Eigen::Map<const Vec>(values.data() + at, P.size(s)));
      committed[static_cast<size_t>((k - W + t) % store.bound())] = s;
      at += P.size(s);
    }
    BlockStepDraws::restore(b);
  }
};

class Rpd final : public Method {
 public:
  Rpd(MethodParams p, std::shared_ptr<const DelayModel> delays, RpdOrder order)
      : p_(p), delays_(std::move(delays)), order_(std::move(order)) {}
  std::string name() const override { return "rpd"; }
  RunPlan plan(const Objective& f) const override {
    RunPlan pl;
    pl.updates = p_.updates;
    // δ is what the run's reads reach, not delay.max: a short run or sparse draws stay below it
    pl.delay_bound = delays_->largest_delay(p_.updates, f.stages());
    pl.delay_max_steady = delays_->bound();
    pl.delay_mean_steady = delays_->steady_state_mean();
    pl.delay_name = delays_->name();
    pl.delay_attributes = delays_->run_attributes(p_.updates);
    pl.schedule = order_.schedule;
    pl.simulation = order_.simulation;
    if (!order_.times.empty()) pl.note = "method.time_budget: the updates the schedule fits into the budget";
    pl.clock = !order_.times.empty();
    return pl;
  }

  // the window the version store keeps: no read of a K-update run reaches back more than K
  // updates, whatever the model's bound (a repeated delay table's largest entry can be any
  // size); the same store as delay.max's for every run whose bound is below K
  int64_t store_bound(const RunPlan& plan) const { return std::min(delays_->bound(), plan.updates); }

  RunReport run(const Objective& f, const RunPlan& plan, Vec& w, RunObserver& obs) const override {
    const auto& P = f.blocks();
    const int S = f.stages();
    LoopState st(f, p_, w, store_bound(plan));
    const bool follow = !order_.stages.empty();
    STALE_CHECK(!follow || static_cast<int64_t>(order_.stages.size()) >= plan.updates, "the order covers every update");
    std::vector<int64_t> d(S);
    std::vector<const double*> z_at;
    Vec g(P.max_size()), wb, delta;
    if (const StateBag* resume = obs.resume_state()) st.restore(*resume);
    else obs.on_start(w);
    for (int64_t& k = st.k; k < plan.updates && !obs.should_stop();) {
      delays_->delays(k, d);
      // z_k read in place (valid until the commit below): no copy of the mixed point
      st.store.locate(d, z_at);
      const double stale_sq = stale_sq_distance(z_at, st.store.current().data(), P, d);
      const int s = follow ? order_.stages[k] : st.stages.next();
      const int m = follow ? order_.batches[k] : st.batches.next();
      auto gs = g.head(P.size(s));
      f.batch_block_grad_blocks(z_at, m, s, gs);
      st.noise.add(gs);
      wb = P.block(st.store.current(), s);
      st.rules[s]->step(wb, gs, p_.lr_schedule.at(k), delta);
      st.commit(s, wb);
      UpdateEvent e;
      e.k = k;
      e.stage = s;
      e.batch = m;
      e.grad_norm = gs.norm();
      e.stale_dist = std::sqrt(stale_sq);
      e.delays = &d;
      if (k - 1 < static_cast<int64_t>(order_.times.size())) e.time = order_.times[k - 1];
      obs.update_done(e, delta, st.store.current(), [&](StateBag& b) { st.save(b); });
    }
    w = st.store.current();
    return {};
  }

  bool runs_ensembles() const override { return true; }

  // The loop above over P columns that share every draw (delays, s_k, m_k, noise) and differ
  // in γ: one gradient call over the P mixed points, each column its own version store,
  // update rules and observer.
  std::vector<RunReport> run_ensemble(const Objective& f, const RunPlan& plan, const std::vector<const Method*>& columns,
                                      std::vector<Vec>& w, const std::vector<RunObserver*>& obs) const override {
    const int Pc = static_cast<int>(columns.size());
    STALE_CHECK(Pc >= 1 && columns[0] == this && w.size() == columns.size() && obs.size() == columns.size(),
                "one iterate and one observer per column, this method first");
    const auto& P = f.blocks();
    const int S = f.stages();
    std::vector<const Rpd*> col(Pc);
    for (int p = 0; p < Pc; ++p) {
      col[p] = dynamic_cast<const Rpd*>(columns[p]);
      STALE_CHECK(col[p] != nullptr, "every column is rpd");
    }
    // one version store for all columns: block s of the wide vector is vec(W_s), the d_s × Pc
    // block of every column side by side, so that a read of one version is one contiguous
    // copy for all columns (the columns saw the same commits: same blocks, same k)
    std::vector<Index> wide_offsets;
    for (int s = 0; s <= S; ++s) wide_offsets.push_back(P.offsets()[s] * Pc);
    const BlockPartition wide(wide_offsets);
    Vec w0(P.dim() * Pc);
    for (int s = 0; s < S; ++s)
      for (int p = 0; p < Pc; ++p) w0.segment(wide.offset(s) + p * P.size(s), P.size(s)) = P.block(w[p], s);
    VersionStore store(wide, w0, store_bound(plan));
    auto column_of = [&](auto&& wide_block, int s, Index p) { return wide_block.segment(p * P.size(s), P.size(s)); };
    std::vector<Vec> current(w.begin(), w.end());  // each column's iterate, for its observer
    StageSampler stages(S, p_.seed);
    BatchSampler batches(f.num_batches(), p_.cyclic_batches, p_.seed);
    GradientNoise noise(p_.grad_noise_std, p_.seed);
    std::vector<std::vector<std::unique_ptr<BlockOptimizer>>> rules(Pc);
    for (int p = 0; p < Pc; ++p)
      for (int s = 0; s < S; ++s) rules[p].push_back(make_block_optimizer(col[p]->p_.rule, P.size(s)));
    const bool follow = !order_.stages.empty();
    STALE_CHECK(!follow || static_cast<int64_t>(order_.stages.size()) >= plan.updates, "the order covers every update");
    std::vector<int64_t> d(S);
    std::vector<const double*> then_at, column_at;
    std::vector<int> active;
    for (int p = 0; p < Pc; ++p) obs[p]->on_start(w[p]), active.push_back(p);
    Mat Z, G;
    Vec wb, wide_block, noise_draw;
    std::vector<Vec> deltas;
    std::vector<UpdateEvent> events;
    for (int64_t k = 0; k < plan.updates; ++k) {
      // a column stops where its separate run would: before the update after its observer said so
      active.erase(std::remove_if(active.begin(), active.end(), [&](int p) { return obs[p]->should_stop(); }),
                   active.end());
      if (active.empty()) break;
      const Index n = static_cast<Index>(active.size());
      delays_->delays(k, d);
      Z.resize(f.dim(), n);
      std::vector<double> stale_sq(active.size(), 0.0);
      store.locate(d, then_at);
      // the mixed point of every column, copied from its located blocks (a version holds the
      // ensemble's columns side by side), and its stale distance, summed as the run alone sums
      // it (block_distance on the column's blocks)
      column_at.resize(static_cast<size_t>(S));
      for (Index a = 0; a < n; ++a) {
        const Index p = active[a];
        for (int i = 0; i < S; ++i) {
          const double* at = then_at[static_cast<size_t>(i)] + p * P.size(i);
          column_at[static_cast<size_t>(i)] = at;
          Z.col(a).segment(P.offset(i), P.size(i)) = Eigen::Map<const Vec>(at, P.size(i));
        }
        stale_sq[a] = stale_sq_distance(column_at, current[p].data(), P, d);
      }
      const int s = follow ? order_.stages[k] : stages.next();
      const int m = follow ? order_.batches[k] : batches.next();
      f.batch_block_grad_cols(Z, m, s, G);
      if (p_.grad_noise_std != 0) {
        // one draw for all columns: each separate run draws the same values from its own stream
        noise_draw.resize(P.size(s));
        noise.draw(noise_draw);
        for (Index c = 0; c < G.cols(); ++c) noise.add_drawn(G.col(c), noise_draw);
      }
      // every column's change is announced before any is reported: trackers shared between
      // the columns apply them as one product
      events.resize(active.size());
      deltas.resize(active.size());
      wide_block = wide.block(store.current(), s);  // frozen columns keep their value
      for (Index a = 0; a < n; ++a) {
        const int p = active[a];
        wb = P.block(current[p], s);
        rules[p][s]->step(wb, G.col(a), col[p]->p_.lr_schedule.at(k), deltas[a]);
        column_of(wide_block, s, p) = wb;
        P.block(current[p], s) = wb;
        UpdateEvent& e = events[a];
        e = UpdateEvent{};
        e.k = k + 1;
        e.stage = s;
        e.batch = m;
        e.grad_norm = G.col(a).norm();
        e.stale_dist = std::sqrt(stale_sq[a]);
        e.delays = &d;
        if (k < static_cast<int64_t>(order_.times.size())) e.time = order_.times[k];
        obs[p]->prepare_update(e, deltas[a]);
      }
      store.commit(s, wide_block);
      for (Index a = 0; a < n; ++a) obs[active[a]]->on_update(events[a], deltas[a], current[active[a]]);
    }
    for (int p = 0; p < Pc; ++p) w[p] = current[p];
    return std::vector<RunReport>(Pc);
  }

 private:
  MethodParams p_;
  std::shared_ptr<const DelayModel> delays_;
  RpdOrder order_;
};
// RPD tied to a schedule: with delay.name = "schedule" it replays the schedule's exact delay
// table (and, with follow_order, its stage and batch order); with method.time_budget > 0 it
// runs as many updates as the schedule fits into the budget and takes their simulated times
// (E4: RPD at PipeDream's time budget). Otherwise RPD draws from its delay model alone.
std::unique_ptr<Method> make_rpd_method(const Config& cfg, MethodParams p, int stages, int num_batches) {
  const bool replay = cfg.get_string("delay.name") == "schedule";
  const double budget = cfg.get_float("method.time_budget");
  if (!replay && budget <= 0) {
    if (cfg.get_bool("delay.follow_order")) config_error("delay.follow_order", "needs delay.name = \"schedule\"");
    return std::make_unique<Rpd>(p, make_delay_model(DelayContext{cfg, stages, p.updates}), RpdOrder{});
  }
  PlanOptions o = PlanOptions::from_config(cfg, cfg.get_string("delay.schedule"));
  o.params.stages = stages / std::max(1, o.params.chunks);
  SimOptions so;
  so.delay_table = replay;
  const PlannedSchedule planned = planned_schedule(o, so);
  auto sched_ptr = planned.schedule;
  const Schedule& sched = *sched_ptr;
  if (sched.replicas > 1) config_error("delay.schedule", "localsgd has one delay table per replica; RPD replays one model");
  auto sim_ptr = planned.simulation;
  const SimResult& sim = *sim_ptr;
  const int64_t rows = static_cast<int64_t>(sim.updates.size());
  if (budget > 0) p.updates = rows;
  if (rows < p.updates)
    config_error("method.updates", std::to_string(p.updates) + " updates but the schedule " + sched.name + " yields " +
                                       std::to_string(rows));
  RpdOrder order;
  order.schedule = sched_ptr;
  order.simulation = sim_ptr;
  for (const auto& u : sim.updates) order.times.push_back(u.end);
  if (replay && cfg.get_bool("delay.follow_order")) {
    if (sched.accumulation > 1)
      config_error("delay.follow_order", "needs a schedule that steps after every micro-batch (accumulation 1)");
    const auto batch_of = microbatch_batches(sched.microbatches, num_batches, p.cyclic_batches, p.seed);
    for (const auto& u : sim.updates) {
      order.stages.push_back(u.block);
      order.batches.push_back(batch_of[u.microbatch]);
    }
  } else if (cfg.get_bool("delay.follow_order")) {
    config_error("delay.follow_order", "needs delay.name = \"schedule\"");
  }
  DelayContext context{cfg, stages, p.updates};
  if (replay) {
    context.schedule_table = &sim.delay_table;
    context.schedule_rows = rows;
    context.schedule_origin = "schedule " + sched.name;
  }
  std::shared_ptr<const DelayModel> delays = make_delay_model(context);
  p.lr_schedule.total = p.updates;
  return std::make_unique<Rpd>(p, std::move(delays), std::move(order));
}


}  // namespace

std::unique_ptr<Method> make_rpd(const MethodParams& p, std::shared_ptr<const DelayModel> delays, RpdOrder order) {
  return std::make_unique<Rpd>(p, std::move(delays), std::move(order));
}

namespace {
const bool registered = MethodRegistry::add(
    {"rpd", "randomized PipeDream: a uniformly drawn block, its gradient at the stale point a delay model gives "
            "(Ilin & Richtarik 2026)",
     2, MethodKind::DelayDriven, "", false, false, {"method.time_budget"},
     [](const Config& cfg, const MethodParams& p, const Objective& f) {
       return make_rpd_method(cfg, p, f.stages(), f.num_batches());
     }});
}  // namespace
}  // namespace stale
