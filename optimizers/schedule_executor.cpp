#include "optimizers/schedule_executor.hpp"

// The executor of the schedule methods (schedule_executor.hpp): runs a plan's ops.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <unordered_map>

#include "objectives/batch_costs.hpp"
#include "optimizers/executor_state.hpp"
#include "optimizers/sampling.hpp"
#include "src/config/config.hpp"
#include "src/config/log_params.hpp"
#include "src/core/error.hpp"
#include "src/pipeline/coupled_timeline.hpp"
#include "src/pipeline/op_source.hpp"

namespace stale {

ExecutorOptions ExecutorOptions::from_config(const Config& cfg, const std::string& schedule, MethodParams method) {
  ExecutorOptions o;
  static_cast<PlanOptions&>(o) = PlanOptions::from_config(cfg, schedule);
  o.method = std::move(method);
  o.moment_window = LogParams::from_config(cfg).delay_window;
  return o;
}

ExecutorOptions ExecutorOptions::from_config(const Config& cfg, const std::string& schedule) {
  return from_config(cfg, schedule, MethodParams::from_config(cfg));
}

int64_t delay_moment_window(const ExecutorOptions& opt, const RunPlan& plan) {
  return opt.moment_window > 0 ? opt.moment_window : std::max<int64_t>(1, (plan.updates + 49) / 50);
}

LrSchedule executor_lr_schedule(const ExecutorOptions& opt, const RunPlan& plan) {
  LrSchedule lr = opt.method.lr_schedule;  // over the plan's K, not method.updates
  lr.total = plan.updates;
  return lr;
}

RunPlan ScheduleMethod::plan(const Objective& f) const { return plan_schedule_run(opt_, f); }

// a lone run is an ensemble of one column: the loop below with P = 1
RunReport ScheduleMethod::run(const Objective& f, const RunPlan& plan, Vec& w, RunObserver& obs) const {
  std::vector<Vec> ws{std::move(w)};
  std::vector<RunReport> reports = run_ensemble(f, plan, {this}, ws, {&obs});
  w = std::move(ws[0]);
  return std::move(reports[0]);
}

// The executor over P columns that differ only in γ and execute the same op stream together.
// Every op is a lone run's op with its weights, activations and gradients widened to P columns:
//
//   F(j, mb):  A_{j+1} = stage_forward_j(A_j, W^(j)_read)       W^(j)_read: d_j × P
//   B(j, mb):  (G_j, Δ_j) = stage_backward_j(Δ_{j+1}, W^(j)_used, caches)
//   update:    column p steps block j's optimizer with its own γ_p; the micro-batch order,
//              the accumulation counts, the noise draws and the simulated clock are shared
//
// so each stage's forward and backward is one product over P columns (Objective::*_cols; with
// P = 1 the single-point calls). A column whose observer stops (diverged) is dropped from the
// micro-batches in flight at the next op, where its run alone would have stopped.
std::vector<RunReport> ScheduleMethod::run_ensemble(const Objective& f, const RunPlan& plan,
                                                    const std::vector<const Method*>& columns, std::vector<Vec>& w,
                                                    const std::vector<RunObserver*>& obs) const {
  const int Pc = static_cast<int>(columns.size());
  STALE_CHECK(Pc >= 1 && columns[0] == this && w.size() == columns.size() && obs.size() == columns.size(),
              "one iterate and one observer per column, this method first");
  STALE_CHECK(plan.schedule && plan.simulation, "a schedule method runs its own plan");
  std::vector<const ScheduleMethod*> col(Pc);
  std::vector<const UpdateRuleParams*> rule(Pc);
  for (int p = 0; p < Pc; ++p) {
    col[p] = dynamic_cast<const ScheduleMethod*>(columns[p]);
    STALE_CHECK(col[p] != nullptr && col[p]->name() == name(), "every column runs this method");
    rule[p] = &col[p]->opt_.method.rule;
  }
  const auto& P = f.blocks();
  const ExecutorOptions& opt = opt_;
  const int J = P.stages();
  const Schedule& sched = *plan.schedule;
  const SimResult& sim = *plan.simulation;
  const bool stash = sched.stash && opt.stash;
  const int R = sched.replicas;
  // a coupled timeline follows the run's own state: one column
  STALE_CHECK(!opt.coupled || Pc == 1, "a coupled timeline runs one column");

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
  // of the updates done so far: a column that stops while others go on keeps its own (one
  // column's are the source's)
  const bool own_moments = Pc > 1;
  DelayMoments moments(window, J);

  // the loop's state, bundled for checkpoints (executor_state.hpp); the names below are its parts
  ExecutorState es(f, rule, opt.method, R, w);
  std::vector<const StateBag*> resume;
  for (int p = 0; p < Pc; ++p)
    if (const StateBag* b = obs[p]->resume_state()) resume.push_back(b);
  if (!resume.empty()) {
    if (static_cast<int>(resume.size()) != Pc) throw UserError("checkpoint: only some columns of the ensemble resume");
    es.restore(resume, f, batch_of, sched.split_backward);
    ops->restore(*resume[0]);  // a coupled timeline's durations (one column); nothing for a precomputed order
  } else {
    for (int p = 0; p < Pc; ++p) obs[p]->on_start(w[p]);
  }
  auto& W = es.W;  // [replica][column]
  auto& w_avg = es.w_avg;
  auto& rules = es.rules;
  auto& acc = es.acc;
  auto& acc_n = es.acc_n;
  // PipeMare: per-block velocity (EMA of the change per update) and the block's delay in its
  // own updates between F and B (the crossing count of the schedule)
  auto& velocity = es.velocity;
  auto& live = es.live;
  auto& block_updates = es.block_updates;
  auto& crossed = es.crossed;
  int64_t& k = es.k;
  const int64_t K = plan.updates;
  std::vector<LrSchedule> lr;
  for (int p = 0; p < Pc; ++p) lr.push_back(executor_lr_schedule(col[p]->opt_, plan));

  std::vector<char> running(Pc, 1);
  std::vector<int> active(Pc);
  std::iota(active.begin(), active.end(), 0);
  auto state = [&](int64_t mb) -> MicroState& {
    return live.try_emplace(mb, active, J, f.dim(), sched.split_backward).first->second;
  };
  std::vector<RunReport> reports(Pc);
  auto stop_columns = [&] {
    bool changed = false;
    for (int p : active)
      if (obs[p]->should_stop()) {
        running[p] = 0;
        reports[p].measured_crossed = crossed;
        if (own_moments) reports[p].delay_moments = moments, reports[p].delay_moments.close();
        changed = true;
      }
    if (changed) active.erase(std::remove_if(active.begin(), active.end(), [&](int p) { return !running[p]; }), active.end());
  };

  Vec g, noise_draw, coupled_gradient;
  std::vector<Vec> deltas(Pc);
  std::vector<UpdateEvent> events(Pc);
  std::vector<int> stepped;
  Mat used, grad_W, grad_in;
  // One column reads its block where it lies (Z's segment, or W's block without stashing)
  // through the single-point stage call instead of copying it into `used` for the column call.
  // Bit for bit the same: the column calls' defaults with P = 1 are that single call, and an
  // objective with its own column calls (batches_columns) keeps them; the block's address is
  // aligned as `used`'s own allocation is, so that vectorised code splits its loops alike.
  const bool single_calls = !f.batches_columns();
  auto in_place = [&](Index n, const double* block) {
    return single_calls && n == 1 && reinterpret_cast<std::uintptr_t>(block) % EIGEN_DEFAULT_ALIGN_BYTES == 0;
  };
  // a resumed run passes the ops it had done through the op source without executing them,
  // so that the source's update count, delay rows and moments continue where they were (a
  // coupled timeline replays the durations its checkpoint recorded: they followed the run's state)
  for (int64_t done = 0; done < es.ops_done; ++done) {
    const int64_t idx = ops->next();
    STALE_CHECK(idx >= 0, "a checkpoint within the schedule");
    const OpTiming& timing = ops->finish(OpState{});
    if (own_moments && sched.ops[idx].updates() && timing.delays) moments.add(*timing.delays);
  }
  int64_t op_pos = es.ops_done;  // ops handed out by the source, this one included
  for (int64_t idx; (idx = ops->next()) >= 0;) {
    ++op_pos;
    stop_columns();
    if (k >= K || active.empty()) break;
    const Op& op = sched.ops[idx];
    const int j = op.block;
    const int64_t mb = op.microbatch;
    const int r = sched.replica_of(mb);
    const int batch = batch_of[mb];
    MicroState& st = state(mb);
    // a micro-batch holds more columns than run only when one of its own stopped since
    if (st.cols.size() > active.size()) st.drop_stopped(running);
    const Index n = static_cast<Index>(st.cols.size());
    const Index off = P.offset(j), dj = P.size(j);

    if (n > 0 && op.kind == OpKind::Forward) {
      if (j == 0) {
        if (n == 1) {
          st.act[0] = f.input_activation(batch);
        } else {
          const Mat a0 = f.input_activation(batch);  // one slice per column, as wide as it is
          st.act[0].resize(a0.rows(), n * a0.cols());
          for (Index c = 0; c < n; ++c) st.act[0].middleCols(c * a0.cols(), a0.cols()) = a0;
        }
      }
      st.updates_at_forward[j] = block_updates[r][j];
      if (!opt.predict && in_place(n, st.Z.col(0).data() + off)) {
        // the block as read goes into Z (the stash, stale_dist, checkpoints). The stage reads it
        // where its backward will read it again: Z's copy with stashing, else the live block
        // (the same values now; the steps before the backward change them in place), so that
        // it may keep views of its weights instead of a copy (stage_forward_pinned)
        auto z = st.Z.col(0).segment(off, dj);
        const auto live_block = P.block(W[r][st.cols[0]], j);
        z = live_block;
        st.cache[j].resize(1);
        if (stash) f.stage_forward_pinned(j, batch, st.act[j], z, st.act[j + 1], st.cache[j][0]);
        else if (in_place(n, live_block.data()))
          f.stage_forward_pinned(j, batch, st.act[j], live_block, st.act[j + 1], st.cache[j][0]);
        else f.stage_forward(j, batch, st.act[j], z, st.act[j + 1], st.cache[j][0]);
      } else {
        used.resize(dj, n);
        for (Index c = 0; c < n; ++c) {
          const int p = st.cols[c];
          used.col(c) = P.block(W[r][p], j);
          // PipeMare: extrapolate by the updates block j will see before this micro-batch's
          // backward: J − 1 − j for asynchronous 1F1B (docs/theory.md §5)
          if (opt.predict) used.col(c) += static_cast<double>(sim.max_crossed[j]) * velocity[p][j];
          st.Z.col(c).segment(off, dj) = used.col(c);  // column by column: a contiguous copy each
        }
        f.stage_forward_cols(j, batch, st.act[j], used, st.act[j + 1], st.cache[j]);
      }
      st.act[j] = Mat();  // the caches keep what backward needs
      ++st.forwards;
    } else if (n > 0 && op.kind == OpKind::Backward) {
      if (j == J - 1) {
        f.loss_forward_backward_cols(batch, st.act[J], n, st.grad, st.loss);
        st.act[J] = Mat();
      }
      const double* read = stash ? st.Z.col(0).data() + off : P.block(W[r][st.cols[0]], j).data();
      if (in_place(n, read)) {
        STALE_CHECK(st.cache[j].size() == 1, "one cache per column");
        grad_W.resize(dj, 1);
        f.stage_backward(j, batch, st.grad, Eigen::Map<const Vec>(read, dj), st.cache[j][0].get(), grad_W.col(0),
                         grad_in);
      } else {
        used.resize(dj, n);
        for (Index c = 0; c < n; ++c) {
          if (stash) used.col(c) = st.Z.col(c).segment(off, dj);
          else used.col(c) = P.block(W[r][st.cols[c]], j);
        }
        f.stage_backward_cols(j, batch, st.grad, used, st.cache[j], grad_W, grad_in);
      }
      st.cache[j].clear();
      st.grad.swap(grad_in);
      if (sched.split_backward) st.pending_w[j] = grad_W;
      ++st.backwards;
    }
    if (op.kind == OpKind::Backward) crossed[j] = std::max(crossed[j], block_updates[r][j] - st.updates_at_forward[j]);
    const bool gradient_op = op.kind == sched.gradient_kind();
    const Mat& gj = sched.split_backward && gradient_op ? st.pending_w[j] : grad_W;
    // a gradient that is its update's only one (accumulation 1) is not accumulated: the update
    // takes it from gj (below)
    const bool single = gradient_op && op.updates() && acc_n[r][j] == 0;
    if (gradient_op) {
      if (!single)
        for (Index c = 0; c < n; ++c) acc[r][st.cols[c]][j] += gj.col(c);
      ++acc_n[r][j];
    }
    // the op's end on the timeline (a coupled one's duration depends on what the op just
    // computed: the one column's gradient and weights) and, for an update, its delays
    OpState measured;
    if (opt.coupled) {
      auto wj = P.block(W[r][0], j);
      if (gradient_op) coupled_gradient = gj.col(0);
      measured = {batch, gradient_op ? &coupled_gradient : nullptr, wj.data(), wj.size()};
    }
    const OpTiming& timing = ops->finish(measured);
    if (op.updates()) {
      STALE_CHECK(gradient_op && acc_n[r][j] > 0, "an update without accumulated gradients");
      if (own_moments && timing.delays) moments.add(*timing.delays);
      const double count = static_cast<double>(acc_n[r][j]);
      acc_n[r][j] = 0;
      if (opt.method.grad_noise_std != 0) {
        // one draw for all columns: each run alone draws the same values from its own stream
        noise_draw.resize(dj);
        es.noise.draw(noise_draw);
      }
      UpdateEvent e;
      ++k;
      ++block_updates[r][j];
      e.k = k;
      e.stage = j;
      e.batch = batch;
      e.time = timing.end;
      e.delays = timing.delays;
      // every column's change is announced before any is reported: trackers shared between
      // the columns apply them as one product
      stepped.clear();
      for (int p = 0; p < Pc; ++p) {
        if (!running[p]) continue;
        // the micro-batch's own column of p (a column running now ran at its first forward)
        const auto pos = std::find(st.cols.begin(), st.cols.end(), p) - st.cols.begin();
        STALE_CHECK(pos < n, "a running column is in every micro-batch in flight");
        if (single) {
          // (0 + x) / 1, the accumulated path's value, is x + 0 bit for bit (IEEE addition
          // commutes; x / 1 = x exactly): x itself but at x = −0, which becomes +0 — a sign
          // that can reach the run (SGD's −γ·g, then w + that at w = −0), so it is kept
          g = gj.col(pos).array() + 0.0;
        } else {
          g = acc[r][p][j] / count;
          acc[r][p][j].setZero();
        }
        if (opt.method.grad_noise_std != 0) es.noise.add_drawn(g, noise_draw);
        auto wj = P.block(W[r][p], j);
        Vec& delta = deltas[p];
        e.grad_norm = g.norm();  // the rule reads g only
        // ‖z − w‖ over all of d, before the step: only where the observer records it, and at a
        // non-finite gradient (the divergence it records at once)
        e.stale_dist = !std::isfinite(e.grad_norm) || obs[p]->records_update(k) ? (st.Z.col(pos) - W[r][p]).norm()
                                                                                 : std::nan("");
        rules[r][p][j]->step(wj, g, lr[p].at(k - 1), delta);
        if (opt.predict) velocity[p][j] = opt.predict_decay * velocity[p][j] + (1 - opt.predict_decay) * delta;
        e.batch_loss = st.loss.size() > 0 ? st.loss(pos) : std::nan("");
        if (R > 1) {
          delta /= static_cast<double>(R);
          P.block(w_avg[p], j) += delta;
        }
        obs[p]->prepare_update(e, delta);
        events[p] = e;
        stepped.push_back(p);
      }
      for (int p : stepped) obs[p]->on_update(events[p], deltas[p], R == 1 ? W[0][p] : w_avg[p]);
    }
    if (op.averages() && R > 1) {
      for (int p = 0; p < Pc; ++p) {
        if (!running[p]) continue;
        Vec mean = Vec::Zero(dj);
        for (int q = 0; q < R; ++q) mean += P.block(W[q][p], j);
        mean /= static_cast<double>(R);
        for (int q = 0; q < R; ++q) P.block(W[q][p], j) = mean;
        P.block(w_avg[p], j) = mean;
      }
    }
    if (gradient_op && ++st.gradients_done == J) live.erase(mb);  // its last op
    // an update boundary: when one column's checkpoint is due every column's is, so that the
    // ensemble resumes from one update (a column that stops without one, diverged, has none);
    // a coupled timeline's checkpoint holds the durations it gave (OpSource::save)
    if (op.updates()) {
      bool due = false;
      for (int p : active) due = due || obs[p]->checkpoint_due();
      if (due) {
        es.ops_done = op_pos;
        for (int p : active)
          if (obs[p]->checkpoint_due() || !obs[p]->should_stop()) {
            StateBag b;
            es.save(b, p, f);
            ops->save(b);
            obs[p]->checkpoint(std::move(b));
          }
      }
    }
  }
  const DelayMoments all = ops->moments();
  for (int p = 0; p < Pc; ++p) {
    if (running[p]) reports[p].measured_crossed = crossed;
    if (running[p] || !own_moments) reports[p].delay_moments = all;
    reports[p].simulation = ops->timeline();  // a coupled timeline's (one column), else null
    w[p] = R == 1 ? W[0][p] : w_avg[p];
  }
  return reports;
}

}  // namespace stale
