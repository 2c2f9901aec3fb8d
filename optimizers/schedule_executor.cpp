#include "optimizers/schedule_executor.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <list>
#include <mutex>
#include <unordered_map>

#include "objectives/batch_costs.hpp"
#include "optimizers/executor_state.hpp"
#include "optimizers/sampling.hpp"
#include "src/config/config.hpp"
#include "src/core/error.hpp"
#include "src/pipeline/coupled_timeline.hpp"
#include "src/pipeline/op_source.hpp"
#include "src/pipeline/simulator.hpp"

namespace stale {

namespace {

Schedule build(const ExecutorOptions& opt, int64_t M) {
  ScheduleParams p = opt.params;
  p.microbatches = M;
  return make_schedule(opt.schedule, p);
}

// micro-batch counts a schedule accepts are multiples of this (whole mini-batches)
int64_t granularity(const ExecutorOptions& opt) {
  if (!schedule_info(opt.schedule).flush) return 1;
  ScheduleParams p = opt.params;
  p.microbatches = 1;
  return resolve_schedule_params(opt.schedule, p).accumulation;
}

SimOptions timing_only() {
  SimOptions o;
  o.reads = false;
  o.updates = false;
  o.delay_stats = false;
  o.timeline = true;
  return o;
}

// updates a schedule of M micro-batches performs (all replicas)
int64_t updates_of(const Schedule& s) {
  int64_t n = 0;
  for (const Op& op : s.ops) n += op.updates();
  return n;
}

}  // namespace

std::vector<std::string> cost_settings(const Config& cfg) {
  auto list = [&](const std::string& key) {
    std::string out;
    for (double v : cfg.get_floats(key)) {
      std::ostringstream os;
      os.precision(17);
      os << v;
      out += (out.empty() ? "" : ",") + os.str();
    }
    return out;
  };
  auto num = [](double v) {
    std::ostringstream os;
    os.precision(17);
    os << v;
    return os.str();
  };
  const int64_t seed = cfg.get_int("costs.seed") >= 0 ? cfg.get_int("costs.seed") : cfg.get_int("seed");
  return {"forward=" + list("costs.forward"), "backward=" + list("costs.backward"), "weight=" + list("costs.weight"),
          "latency=" + num(cfg.get_float("costs.latency")), "jitter=" + num(cfg.get_float("costs.jitter")),
          "straggler_prob=" + num(cfg.get_float("costs.straggler_prob")),
          "straggler_slowdown=" + num(cfg.get_float("costs.straggler_slowdown")),
          "pareto_alpha=" + num(cfg.get_float("costs.pareto_alpha")), "seed=" + std::to_string(seed)};
}

CostModel cost_model_from_config(const Config& cfg) {
  try {
    return CostModel::parse(cost_settings(cfg));
  } catch (const UserError& e) {
    throw UserError(std::string("config: [costs]: ") + e.what());
  }
}

ExecutorOptions ExecutorOptions::from_config(const Config& cfg, const std::string& schedule) {
  ExecutorOptions o;
  o.schedule = schedule;
  o.params.stages = static_cast<int>(cfg.get_int("objective.stages"));
  o.params.microbatches = cfg.get_int("method.microbatches");
  o.params.accumulation = static_cast<int>(cfg.get_int("method.accumulation"));
  const ScheduleInfo& info = schedule_info(schedule);
  if (info.replicated) {
    o.params.replicas = static_cast<int>(cfg.get_int("method.replicas"));
    o.params.local_steps = static_cast<int>(cfg.get_int("method.local_steps"));
  } else {
    for (const char* key : {"method.replicas", "method.local_steps"})
      if (cfg.get_int(key) != 0) config_error(key, "applies only to method.name = \"localsgd\"");
  }
  if (info.chunked) o.params.chunks = static_cast<int>(cfg.get_int("method.chunks"));
  else if (cfg.get_int("method.chunks") != 0) config_error("method.chunks", "applies only to method.name = \"interleaved\"");
  if (o.params.chunks == 0 && info.chunked) o.params.chunks = 2;
  o.costs = cost_model_from_config(cfg);
  for (const auto& c : cost_settings(cfg)) o.costs_key += c + ";";
  o.method = MethodParams::from_config(cfg);
  o.rule = UpdateRuleParams::from_config(cfg);
  o.lr_schedule = cfg.get_string("method.lr_schedule");
  o.lr_min = cfg.get_float("method.lr_min");
  o.warmup = cfg.get_int("method.warmup");
  o.time_budget = cfg.get_float("method.time_budget");
  o.coupling = parse_coupling(cfg.get_string("costs.coupling"));
  o.coupling_scale = cfg.get_float("costs.coupling_scale");
  o.coupled = o.coupling != Coupling::None;
  o.moment_window = cfg.get_int("log.delay_window");
  if (o.coupled && o.time_budget > 0)
    config_error("method.time_budget", "needs durations known before the run; costs.coupling = \"" +
                                           cfg.get_string("costs.coupling") + "\" times ops as the run goes (use method.updates)");
  return o;
}

Schedule plan_schedule(const ExecutorOptions& opt) {
  // searches run over n whole units of g micro-batches
  const int64_t g = granularity(opt);
  auto build_units = [&](int64_t n) { return build(opt, n * g); };
  if (opt.time_budget > 0) {
    auto fits = [&](int64_t n) {
      return simulate(build_units(n), opt.costs, timing_only()).makespan <= opt.time_budget;
    };
    if (!fits(1))
      throw UserError("config: method.time_budget = " + std::to_string(opt.time_budget) +
                      " is shorter than one micro-batch's trip through the pipeline");
    int64_t lo = 1, hi = 2;
    while (fits(hi)) lo = hi, hi *= 2;
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
    return build_units(lo);
  }
  if (opt.params.microbatches > 0) return build(opt, opt.params.microbatches);
  // smallest M with at least K updates: updates grow with M, so search
  const int64_t K = opt.method.updates;
  int64_t lo = 0, hi = 1;
  while (updates_of(build_units(hi)) < K) lo = hi, hi *= 2;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (updates_of(build_units(mid)) >= K ? hi : lo) = mid;
  }
  return build_units(hi);
}

PlannedSchedule planned_schedule(const ExecutorOptions& opt, const SimOptions& so) {
  // everything plan_schedule and simulate read
  std::ostringstream key;
  key << opt.schedule << '|' << opt.params.stages << ',' << opt.params.microbatches << ',' << opt.params.accumulation << ','
      << opt.params.replicas << ',' << opt.params.local_steps << ',' << opt.params.chunks << '|' << opt.costs_key << '|'
      << opt.method.updates << '|';
  key.precision(17);
  key << opt.time_budget << '|' << so.timeline << so.reads << so.updates << so.delay_table << so.delay_stats
      << so.delay_pairs << ',' << so.steady_margin;
  static std::mutex m;
  static std::list<std::pair<std::string, PlannedSchedule>> recent;  // most recent first
  constexpr size_t kKeep = 8;
  {
    std::lock_guard<std::mutex> lock(m);
    for (auto it = recent.begin(); it != recent.end(); ++it)
      if (it->first == key.str()) {
        recent.splice(recent.begin(), recent, it);
        return recent.front().second;
      }
  }
  PlannedSchedule p;
  p.schedule = std::make_shared<const Schedule>(plan_schedule(opt));
  p.simulation = std::make_shared<const SimResult>(simulate(*p.schedule, opt.costs, so));
  std::lock_guard<std::mutex> lock(m);
  // another thread may have planned the same schedule meanwhile: every run shares one plan
  for (auto it = recent.begin(); it != recent.end(); ++it)
    if (it->first == key.str()) {
      recent.splice(recent.begin(), recent, it);
      return recent.front().second;
    }
  recent.emplace_front(key.str(), p);
  if (recent.size() > kKeep) recent.pop_back();
  return p;
}

RunPlan ScheduleMethod::plan(const Objective& f) const {
  const int J = f.stages();  // blocks of w = virtual stages of the schedule
  ExecutorOptions opt = opt_;
  const int chunks = std::max(1, opt.params.chunks);
  if (J % chunks != 0)
    throw UserError("config: objective.stages = " + std::to_string(J) + " must be a multiple of method.chunks = " +
                    std::to_string(chunks));
  opt.params.stages = J / chunks;
  PlannedSchedule planned = planned_schedule(opt, SimOptions{});
  auto schedule = planned.schedule;
  auto sim = planned.simulation;
  STALE_CHECK(schedule->blocks() == J, "schedule blocks = objective blocks");
  RunPlan pl;
  pl.executes_schedule = true;
  pl.delay_bound = sim->delays.max_overall();
  pl.delay_mean = sim->steady_delays.updates() > 0 ? sim->steady_delays.mean_overall() : sim->delays.mean_overall();
  pl.delay_name = "schedule:" + opt.schedule;
  if (opt.coupled) {
    // the delays come from the coupled timeline as the run goes: δ is measured along the run
    // (the running maximum the metrics observer and /theory use), not planned
    pl.delay_bound = 0;
    pl.delay_name = std::string("coupled:") + opt.schedule + ":" + coupling_name(opt.coupling);
    if (opt.coupling == Coupling::Data) (void)batch_data_costs(f);  // a UserError before the run file exists
  }
  if (opt.time_budget > 0) {
    pl.updates = sim->total_updates;
    pl.note = "method.time_budget: every update of the micro-batches whose timeline fits the budget";
  } else {
    if (sim->total_updates < opt.method.updates)
      config_error("method.microbatches", std::to_string(schedule->microbatches) + " micro-batches of " +
                                              schedule->name + " perform " + std::to_string(sim->total_updates) +
                                              " block updates, fewer than method.updates = " +
                                              std::to_string(opt.method.updates) +
                                              " (use method.microbatches = 0 to take the fewest that reach K)");
    pl.updates = opt.method.updates;
  }
  pl.schedule = std::move(schedule);
  pl.simulation = std::move(sim);
  return pl;
}

RunReport ScheduleMethod::run(const Objective& f, const RunPlan& plan, Vec& w, RunObserver& obs) const {
  STALE_CHECK(plan.schedule && plan.simulation, "a schedule method runs its own plan");
  const auto& P = f.blocks();
  const ExecutorOptions& opt = opt_;
  const int J = P.stages();
  const Schedule& sched = *plan.schedule;
  const SimResult& sim = *plan.simulation;
  const bool stash = sched.stash && opt.stash;
  const int R = sched.replicas;

  // data order: PD reads batches cyclically; uniform draws one batch per micro-batch
  const std::vector<int> batch_of =
      microbatch_batches(sched.microbatches, f.num_batches(), opt.method.cyclic_batches, opt.method.seed);

  // the ops in the serial order (start, device, position in the device's program): the
  // plan's simulation, or a coupled timeline made as the run goes
  const int64_t window = opt.moment_window > 0 ? opt.moment_window : std::max<int64_t>(1, (plan.updates + 49) / 50);
  std::unique_ptr<OpSource> ops =
      opt.coupled ? std::unique_ptr<OpSource>(std::make_unique<CoupledTimeline>(
                        sched, opt.costs,
                        StateCosts(opt.coupling, opt.coupling_scale, J,
                                   opt.coupling == Coupling::Data ? batch_data_costs(f) : std::vector<double>{}),
                        batch_of, window))
                  : precomputed_ops(sched, sim, window);

  // the loop's state, bundled for checkpoints (executor_state.hpp); the names below are its parts
  ExecutorState es(f, opt.rule, opt.method, R, w);
  if (const StateBag* resume = obs.resume_state()) es.restore(*resume, f, batch_of, sched.split_backward);
  else obs.on_start(w);
  std::vector<Vec>& W = es.W;  // replica weights
  Vec& w_avg = es.w_avg;
  auto& rules = es.rules;
  auto& acc = es.acc;
  auto& acc_n = es.acc_n;
  // PipeMare: per-block velocity (EMA of the change per update) and the block's delay in its
  // own updates between F and B (the crossing count of the schedule)
  std::vector<Vec>& velocity = es.velocity;

  LrSchedule lr{opt.lr_schedule, opt.method.lr, opt.lr_min, opt.warmup, 1};
  const int64_t K = plan.updates;
  lr.total = K;
  GradientNoise& noise = es.noise;

  std::unordered_map<int64_t, MicroState>& live = es.live;
  auto state = [&](int64_t mb) -> MicroState& {
    return live.try_emplace(mb, J, f.dim(), sched.split_backward).first->second;
  };

  auto& block_updates = es.block_updates;
  RunReport report;
  std::vector<int64_t>& crossed = es.crossed;
  int64_t& k = es.k;
  Vec g, delta, grad_w;
  Mat grad_in;
  // a resumed run passes the ops it had done through the op source without executing them,
  // so that the source's update count, delay rows and moments continue where they were
  // (a coupled timeline writes no checkpoints: its op durations followed the run's state)
  for (int64_t done = 0; done < es.ops_done; ++done) {
    STALE_CHECK(ops->next() >= 0, "a checkpoint within the schedule");
    ops->finish(OpState{});
  }
  int64_t op_pos = es.ops_done;  // ops handed out by the source, this one included
  for (int64_t idx; (idx = ops->next()) >= 0;) {
    ++op_pos;
    if (k >= K || obs.should_stop()) break;
    const Op& op = sched.ops[idx];
    const int j = op.block;
    const int64_t mb = op.microbatch;
    const int r = sched.replica_of(mb);
    const int batch = batch_of[mb];
    MicroState& st = state(mb);
    auto wj = P.block(W[r], j);

    if (op.kind == OpKind::Forward) {
      if (j == 0) st.act[0] = f.input_activation(batch);
      Vec used = wj;
      if (opt.predict) {
        // extrapolate by the updates block j will see before this micro-batch's backward:
        // J − 1 − j for asynchronous 1F1B (docs/theory.md §5)
        used += static_cast<double>(sim.max_crossed[j]) * velocity[j];
      }
      P.block(st.z, j) = used;
      st.updates_at_forward[j] = block_updates[r][j];
      f.stage_forward(j, batch, st.act[j], used, st.act[j + 1], st.cache[j]);
      st.act[j] = Mat();  // the cache keeps what backward needs
      ++st.forwards;
    } else if (op.kind == OpKind::Backward) {
      if (j == J - 1) {
        st.loss = f.loss_forward_backward(batch, st.act[J], st.grad);
        st.act[J] = Mat();
      }
      crossed[j] = std::max(crossed[j], block_updates[r][j] - st.updates_at_forward[j]);
      const Vec used = stash ? Vec(P.block(st.z, j)) : Vec(wj);
      grad_w.resize(P.size(j));
      f.stage_backward(j, batch, st.grad, used, st.cache[j].get(), grad_w, grad_in);
      st.cache[j].reset();
      st.grad.swap(grad_in);
      if (sched.split_backward) st.pending_w[j] = grad_w;
      ++st.backwards;
    }
    const bool gradient_op = op.kind == sched.gradient_kind();
    if (gradient_op) {
      const Vec& gj = sched.split_backward ? st.pending_w[j] : grad_w;
      acc[r][j] += gj;
      ++acc_n[r][j];
    }
    // the op's end on the timeline (its duration may depend on what it just computed) and,
    // for an update, its delays
    const OpTiming& timing = ops->finish(
        {batch, gradient_op ? (sched.split_backward ? &st.pending_w[j] : &grad_w) : nullptr, wj.data(), wj.size()});
    if (op.updates()) {
      STALE_CHECK(gradient_op && acc_n[r][j] > 0, "an update without accumulated gradients");
      g = acc[r][j] / static_cast<double>(acc_n[r][j]);
      acc[r][j].setZero();
      acc_n[r][j] = 0;
      noise.add(g);
      UpdateEvent e;
      e.stale_dist = (st.z - W[r]).norm();
      rules[r][j]->step(wj, g, lr.at(k), delta);
      if (opt.predict) velocity[j] = opt.predict_decay * velocity[j] + (1 - opt.predict_decay) * delta;
      ++k;
      ++block_updates[r][j];
      e.k = k;
      e.stage = j;
      e.batch = batch;
      e.grad_norm = g.norm();
      e.time = timing.end;
      e.batch_loss = st.loss;
      e.delays = timing.delays;
      if (R == 1) {
        obs.on_update(e, delta, W[0]);
      } else {
        const Vec d_avg = delta / static_cast<double>(R);
        P.block(w_avg, j) += d_avg;
        obs.on_update(e, d_avg, w_avg);
      }
    }
    if (op.averages() && R > 1) {
      Vec mean = Vec::Zero(P.size(j));
      for (int q = 0; q < R; ++q) mean += P.block(W[q], j);
      mean /= static_cast<double>(R);
      for (int q = 0; q < R; ++q) P.block(W[q], j) = mean;
      P.block(w_avg, j) = mean;
    }
    if (gradient_op && ++st.gradients_done == J) live.erase(mb);  // its last op
    if (op.updates() && !opt.coupled && obs.checkpoint_due()) {  // an update boundary
      es.ops_done = op_pos;
      StateBag b;
      es.save(b);
      obs.checkpoint(b);
    }
  }
  w = R == 1 ? W[0] : w_avg;
  report.measured_crossed = crossed;
  report.delay_moments = ops->moments();
  report.simulation = ops->timeline();
  return report;
}

}  // namespace stale
