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

// Everything RPD's loop carries from one update to the next, for the P columns of a lockstep
// ensemble (a lone run is one column), with save/restore for checkpoints: one version store for
// all columns, the shared stage, batch and noise streams, one update rule per block and column,
// and k. Block s of the store's wide vector is vec(W_s), the d_s × P block of every column side
// by side, so that a read of one version is one contiguous copy for all columns (the columns
// see the same commits: same blocks, same k).
//
// Each column is saved into its own run's checkpoint as that run alone would save itself: the
// version store as what a read can still reach — the column's iterate at k − W (W = min(k, δ))
// and its W block commits since — restored by replaying those commits, so every stale read
// after a resume returns the value it would have returned. The shared streams are in every
// column's bag alike.
struct LoopState {
  const BlockPartition& P;
  const int columns;
  BlockPartition wide;
  VersionStore store;
  StageSampler stages;
  BatchSampler batches;
  GradientNoise noise;
  std::vector<std::vector<std::unique_ptr<BlockOptimizer>>> rules;  // [column][block]
  std::vector<Vec> current;  // each column's iterate, for its observer (P > 1)
  int64_t k = 0;
  std::vector<int64_t> committed;  // block committed by update j, at j mod δ (the last δ updates)

  static BlockPartition widened(const BlockPartition& P, int columns) {
    std::vector<Index> offsets;
    for (int s = 0; s <= P.stages(); ++s) offsets.push_back(P.offsets()[s] * columns);
    return BlockPartition(offsets);
  }
  Vec wide_of(const std::vector<Vec>& w) const {
    Vec out(wide.dim());
    for (int s = 0; s < P.stages(); ++s)
      for (int p = 0; p < columns; ++p) out.segment(wide.offset(s) + p * P.size(s), P.size(s)) = P.block(w[p], s);
    return out;
  }
  LoopState(const Objective& f, const MethodParams& p, const std::vector<const MethodParams*>& column_params,
            const std::vector<Vec>& w0, int64_t bound)
      : P(f.blocks()), columns(static_cast<int>(w0.size())), wide(widened(P, columns)), store(wide, wide_of(w0), bound),
        stages(f.stages(), p.seed), batches(f.num_batches(), p.cyclic_batches, p.seed),
        noise(p.grad_noise_std, p.seed), rules(columns), current(w0),
        committed(static_cast<size_t>(std::max<int64_t>(bound, 0)), -1) {
    for (int c = 0; c < columns; ++c)
      for (int s = 0; s < f.stages(); ++s) rules[c].push_back(make_block_optimizer(column_params[c]->rule, P.size(s)));
  }
  // column c's iterate: with one column the store's current vector is the iterate itself
  const Vec& iterate(int c) const { return columns == 1 ? store.current() : current[c]; }
  // column c's part of block s of a wide vector
  template <class Wide>
  static auto column_of(Wide&& wide_block, const BlockPartition& P, int s, int c) {
    return wide_block.segment(c * P.size(s), P.size(s));
  }
  void commit(int s, ConstVecRef wide_value) {
    if (!committed.empty()) committed[static_cast<size_t>(k % store.bound())] = s;
    store.commit(s, wide_value);
    ++k;
  }
  void save(StateBag& b, int c) const {
    b.put("k", k);
    // the store counts its own commits (a restored one from its window's start): read by that count
    const int64_t W = std::min<int64_t>(k, store.bound()), ks = store.updates();
    Vec base(P.dim());
    for (int i = 0; i < P.stages(); ++i) P.block(base, i) = column_of(store.read(i, ks - W), P, i, c);
    b.put("store/base", base);
    std::vector<int64_t> blocks;
    std::vector<double> values;
    for (int64_t j = k - W; j < k; ++j) {
      const int s = static_cast<int>(committed[static_cast<size_t>(j % store.bound())]);
      blocks.push_back(s);
      const auto v = column_of(store.read(s, ks - k + j + 1), P, s, c);
      values.insert(values.end(), v.data(), v.data() + v.size());
    }
    b.put_ints("store/blocks", blocks);
    b.put_doubles("store/values", values);
    stages.save(b, "stages");
    batches.save(b, "batches");
    noise.save(b, "noise");
    save_rules(b, "rules", rules[c]);
  }
  // every column from its own bag (all saved at the same update: one ensemble's checkpoint)
  void restore(const std::vector<const StateBag*>& bags) {
    k = bags[0]->get_int("k");
    const auto& blocks = bags[0]->get_ints("store/blocks");
    const int64_t W = static_cast<int64_t>(blocks.size());
    if (W != std::min<int64_t>(k, store.bound())) throw UserError("checkpoint: the version store's window does not match delay.max");
    std::vector<Vec> base(columns);
    for (int c = 0; c < columns; ++c) {
      if (bags[c]->get_int("k") != k || bags[c]->get_ints("store/blocks") != blocks)
        throw UserError("checkpoint: the columns of an ensemble were saved at different updates");
      base[c] = bags[c]->get_vec("store/base");
      if (base[c].size() != P.dim()) throw UserError("checkpoint: a corrupt version store");
    }
    store = VersionStore(wide, wide_of(base), store.bound());
    current = base;
    std::vector<size_t> at(columns, 0);
    Vec wide_block;
    for (int64_t t = 0; t < W; ++t) {
      const int s = static_cast<int>(blocks[t]);
      if (s < 0 || s >= P.stages()) throw UserError("checkpoint: a corrupt version store");
      wide_block.resize(wide.size(s));
      for (int c = 0; c < columns; ++c) {
        const auto& values = bags[c]->get_doubles("store/values");
        if (at[c] + P.size(s) > values.size()) throw UserError("checkpoint: a corrupt version store");
        const Eigen::Map<const Vec> v(values.data() + at[c], P.size(s));
        column_of(wide_block, P, s, c) = v;
        P.block(current[c], s) = v;
        at[c] += P.size(s);
      }
      store.commit(s, wide_block);
      committed[static_cast<size_t>((k - W + t) % store.bound())] = s;
    }
    stages.restore(*bags[0], "stages");
    batches.restore(*bags[0], "batches");
    noise.restore(*bags[0], "noise");
    for (int c = 0; c < columns; ++c) restore_rules(*bags[c], "rules", rules[c]);
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

  // a lone run is an ensemble of one column: the loop below with P = 1
  RunReport run(const Objective& f, const RunPlan& plan, Vec& w, RunObserver& obs) const override {
    std::vector<Vec> ws{std::move(w)};
    run_ensemble(f, plan, {this}, ws, {&obs});
    w = std::move(ws[0]);
    return {};
  }

  bool runs_ensembles() const override { return true; }

  // RPD over P columns that share every draw (delays, s_k, m_k, noise) and differ in γ: one
  // gradient call over the P mixed points (Objective::batch_block_grad_cols; with P = 1
  // the single call), each column its own update rules, observer and slice of the version store.
  std::vector<RunReport> run_ensemble(const Objective& f, const RunPlan& plan, const std::vector<const Method*>& columns,
                                      std::vector<Vec>& w, const std::vector<RunObserver*>& obs) const override {
    const int Pc = static_cast<int>(columns.size());
    STALE_CHECK(Pc >= 1 && columns[0] == this && w.size() == columns.size() && obs.size() == columns.size(),
                "one iterate and one observer per column, this method first");
    const auto& P = f.blocks();
    const int S = f.stages();
    std::vector<const Rpd*> col(Pc);
    std::vector<const MethodParams*> params(Pc);
    for (int p = 0; p < Pc; ++p) {
      col[p] = dynamic_cast<const Rpd*>(columns[p]);
      STALE_CHECK(col[p] != nullptr, "every column is rpd");
      params[p] = &col[p]->p_;
    }
    LoopState st(f, p_, params, w, store_bound(plan));
    const bool follow = !order_.stages.empty();
    STALE_CHECK(!follow || static_cast<int64_t>(order_.stages.size()) >= plan.updates, "the order covers every update");
    std::vector<int> active;
    for (int p = 0; p < Pc; ++p) active.push_back(p);
    // a resumed ensemble continues every column from its own run's checkpoint
    std::vector<const StateBag*> resume;
    for (int p = 0; p < Pc; ++p)
      if (const StateBag* b = obs[p]->resume_state()) resume.push_back(b);
    if (!resume.empty()) {
      if (static_cast<int>(resume.size()) != Pc) throw UserError("checkpoint: only some columns of the ensemble resume");
      st.restore(resume);
    } else {
      for (int p = 0; p < Pc; ++p) obs[p]->on_start(w[p]);
    }
    std::vector<int64_t> d(S);
    std::vector<const double*> then_at, column_at(static_cast<size_t>(S));
    Mat G;
    Vec wide_block, noise_draw;
    std::vector<Vec> deltas;
    std::vector<UpdateEvent> events;
    std::vector<double> stale_sq;
    for (int64_t& k = st.k; k < plan.updates;) {
      // a column stops where its run alone would: before the update after its observer said so
      active.erase(std::remove_if(active.begin(), active.end(), [&](int p) { return obs[p]->should_stop(); }),
                   active.end());
      if (active.empty()) break;
      const Index n = static_cast<Index>(active.size());
      delays_->delays(k, d);
      // z_k of every column read in place (valid until the commit below): no copy of the mixed
      // points; column p's block i lies at then_at[i] + p·d_i. Its stale distance is summed as
      // block_distance sums the blocks of a run alone.
      st.store.locate(d, then_at);
      stale_sq.resize(active.size());
      for (Index a = 0; a < n; ++a) {
        const Index p = active[a];
        for (int i = 0; i < S && p > 0; ++i) column_at[static_cast<size_t>(i)] = then_at[static_cast<size_t>(i)] + p * P.size(i);
        stale_sq[a] = stale_sq_distance(p > 0 ? column_at : then_at, st.iterate(p).data(), P, d);
      }
      const int s = follow ? order_.stages[k] : st.stages.next();
      const int m = follow ? order_.batches[k] : st.batches.next();
      if (Pc == 1) {
        // a lone run: the single-point call on the store's own pointers, which the column
        // call would reach through two dispatches (0.3 % of a quickstart run's instructions)
        G.resize(P.size(s), 1);
        f.batch_block_grad_blocks(then_at, m, s, G.col(0));
      } else {
        f.batch_block_grad_cols(then_at, active, m, s, G);
      }
      if (p_.grad_noise_std != 0) {
        // one draw for all columns: each run alone draws the same values from its own stream
        noise_draw.resize(P.size(s));
        st.noise.draw(noise_draw);
        for (Index c = 0; c < G.cols(); ++c) st.noise.add_drawn(G.col(c), noise_draw);
      }
      // every column's change is announced before any is reported: trackers shared between
      // the columns apply them as one product
      events.resize(active.size());
      deltas.resize(active.size());
      wide_block = st.wide.block(st.store.current(), s);  // stopped columns keep their value
      for (Index a = 0; a < n; ++a) {
        const int p = active[a];
        auto wb = LoopState::column_of(wide_block, P, s, p);
        st.rules[p][s]->step(wb, G.col(a), col[p]->p_.lr_schedule.at(k), deltas[a]);
        if (Pc > 1) P.block(st.current[p], s) = wb;
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
      st.commit(s, wide_block);
      for (Index a = 0; a < n; ++a) obs[active[a]]->on_update(events[a], deltas[a], st.iterate(active[a]));
      // an update boundary: when one column's checkpoint is due every column's is, so that
      // the ensemble resumes from one update (a column that stops without one, diverged, has none)
      bool due = false;
      for (int p : active) due = due || obs[p]->checkpoint_due();
      if (due)
        for (int p : active)
          if (obs[p]->checkpoint_due() || !obs[p]->should_stop()) {
            StateBag b;
            st.save(b, p);
            obs[p]->checkpoint(std::move(b));
          }
    }
    for (int p = 0; p < Pc; ++p) w[p] = st.iterate(p);
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
