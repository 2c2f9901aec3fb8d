#include "optimizers/schedule_executor.hpp"

// The executor of the schedule methods (schedule_executor.hpp): runs a plan's ops.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "objectives/batch_costs.hpp"
#include "optimizers/executor_state.hpp"
#include "optimizers/sampling.hpp"
#include "src/config/config.hpp"
#include "src/core/error.hpp"
#include "src/pipeline/coupled_timeline.hpp"
#include "src/pipeline/op_source.hpp"

namespace stale {

ExecutorOptions ExecutorOptions::from_config(const Config& cfg, const std::string& schedule) {
  ExecutorOptions o;
  static_cast<PlanOptions&>(o) = PlanOptions::from_config(cfg, schedule);
  o.method = MethodParams::from_config(cfg);
  o.rule = UpdateRuleParams::from_config(cfg);
  o.lr_schedule = cfg.get_string("method.lr_schedule");
  o.lr_min = cfg.get_float("method.lr_min");
  o.warmup = cfg.get_int("method.warmup");
  o.moment_window = cfg.get_int("log.delay_window");
  return o;
}

int64_t delay_moment_window(const ExecutorOptions& opt, const RunPlan& plan) {
  return opt.moment_window > 0 ? opt.moment_window : std::max<int64_t>(1, (plan.updates + 49) / 50);
}

LrSchedule executor_lr_schedule(const ExecutorOptions& opt, const RunPlan& plan) {
  LrSchedule lr{opt.lr_schedule, opt.method.lr, opt.lr_min, opt.warmup, 1};
  lr.total = plan.updates;
  return lr;
}

RunPlan ScheduleMethod::plan(const Objective& f) const { return plan_schedule_run(opt_, f); }

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
  const int64_t window = delay_moment_window(opt, plan);
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

  const LrSchedule lr = executor_lr_schedule(opt, plan);
  const int64_t K = plan.updates;
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
      obs.checkpoint(std::move(b));
    }
  }
  w = R == 1 ? W[0] : w_avg;
  report.measured_crossed = crossed;
  report.delay_moments = ops->moments();
  report.simulation = ops->timeline();
  return report;
}

}  // namespace stale
