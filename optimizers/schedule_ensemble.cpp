// The schedule executor (schedule_executor.cpp) over a lockstep ensemble: P runs of one
// schedule method that differ only in γ execute the same op stream together. Every op is the
// single run's op with its weights, activations and gradients widened to P columns:
//
//   F(j, mb):  A_{j+1} = stage_forward_j(A_j, W^(j)_read)       W^(j)_read: d_j × P
//   B(j, mb):  (G_j, Δ_j) = stage_backward_j(Δ_{j+1}, W^(j)_used, caches)
//   update:    column p steps block j's optimizer with its own γ_p; the micro-batch order,
//              the accumulation counts, the noise draws and the simulated clock are shared
//
// so each stage's forward and backward is one GEMM over P columns (Objective::*_cols). A
// column whose observer stops (diverged) is dropped from the micro-batches in flight at the
// next op, where its separate run would have stopped. The single run's loop stays the
// reference: tests/optimizers/test_ensemble.cpp checks every column against it.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "optimizers/sampling.hpp"
#include "optimizers/schedule_executor.hpp"
#include "src/pipeline/op_source.hpp"
#include "src/core/error.hpp"

namespace stale {

namespace {

// what one micro-batch carries between its ops, for the columns that were running at its
// first forward (cols); matrices hold one column (slice) per entry of cols
struct EnsembleMicroState {
  std::vector<int> cols;
  std::vector<Mat> act;                                          // [block] input activation of F(block)
  std::vector<std::vector<std::unique_ptr<StageCache>>> cache;   // [block][column]
  Mat Z;                                                         // d × |cols|: weights its forwards read
  Mat grad;                                                      // gradient flowing backward
  std::vector<Mat> pending_w;                                    // split backward: G_j waiting for W(j)
  Vec loss;
  int gradients_done = 0;
  std::vector<int64_t> updates_at_forward;
};

// keep the columns of M (slices of `width` columns) at positions `keep`
void keep_slices(Mat& M, const std::vector<Index>& keep, Index width) {
  if (M.size() == 0) return;
  Mat out(M.rows(), static_cast<Index>(keep.size()) * width);
  for (size_t j = 0; j < keep.size(); ++j)
    out.middleCols(static_cast<Index>(j) * width, width) = M.middleCols(keep[j] * width, width);
  M.swap(out);
}

// drop the columns of st that stopped since its last op
void drop_stopped(EnsembleMicroState& st, const std::vector<char>& running, Index width) {
  std::vector<Index> keep;
  for (size_t j = 0; j < st.cols.size(); ++j)
    if (running[st.cols[j]]) keep.push_back(static_cast<Index>(j));
  if (keep.size() == st.cols.size()) return;
  std::vector<int> cols;
  for (Index j : keep) cols.push_back(st.cols[j]);
  st.cols = cols;
  for (auto& a : st.act) keep_slices(a, keep, width);
  keep_slices(st.grad, keep, st.grad.size() ? st.grad.cols() / static_cast<Index>(st.loss.size() ? st.loss.size() : 1) : 1);
  keep_slices(st.Z, keep, 1);
  for (auto& g : st.pending_w) keep_slices(g, keep, 1);
  for (auto& c : st.cache) {
    if (c.empty()) continue;
    std::vector<std::unique_ptr<StageCache>> kept;
    for (Index j : keep) kept.push_back(std::move(c[j]));
    c.swap(kept);
  }
  if (st.loss.size() > 0) {
    Vec loss(static_cast<Index>(keep.size()));
    for (size_t j = 0; j < keep.size(); ++j) loss(static_cast<Index>(j)) = st.loss(keep[j]);
    st.loss.swap(loss);
  }
}

}  // namespace

std::vector<RunReport> ScheduleMethod::run_ensemble(const Objective& f, const RunPlan& plan,
                                                    const std::vector<const Method*>& columns, std::vector<Vec>& w,
                                                    const std::vector<RunObserver*>& obs) const {
  const int Pc = static_cast<int>(columns.size());
  STALE_CHECK(Pc >= 1 && columns[0] == this && w.size() == columns.size() && obs.size() == columns.size(),
              "one iterate and one observer per column, this method first");
  STALE_CHECK(plan.schedule && plan.simulation, "a schedule method runs its own plan");
  std::vector<const ScheduleMethod*> col(Pc);
  for (int p = 0; p < Pc; ++p) {
    col[p] = dynamic_cast<const ScheduleMethod*>(columns[p]);
    STALE_CHECK(col[p] != nullptr && col[p]->name() == name(), "every column runs this method");
  }
  const auto& P = f.blocks();
  const ExecutorOptions& opt = opt_;
  const int J = P.stages();
  const Schedule& sched = *plan.schedule;
  const SimResult& sim = *plan.simulation;
  const bool stash = sched.stash && opt.stash;
  const int R = sched.replicas;
  const Index width = f.activation_width();

  // run()'s serial order (a lockstep ensemble never runs a coupled timeline: its columns'
  // timelines would differ)
  const int64_t window = delay_moment_window(opt, plan);
  std::unique_ptr<OpSource> ops = precomputed_ops(sched, sim, window);
  DelayMoments moments(window, J);  // of the updates done so far (a frozen column keeps its own)
  const std::vector<int> batch_of =
      microbatch_batches(sched.microbatches, f.num_batches(), opt.method.cyclic_batches, opt.method.seed);

  // per column p: replica weights W[r][p], the replica average, update rules, accumulators,
  // PipeMare velocities and step sizes; the accumulation counts are shared
  std::vector<std::vector<Vec>> W(R, std::vector<Vec>(w.begin(), w.end()));
  std::vector<Vec> w_avg(w.begin(), w.end());
  std::vector<std::vector<std::vector<std::unique_ptr<BlockOptimizer>>>> rules(R);
  for (auto& per_replica : rules) per_replica.resize(Pc);
  std::vector<std::vector<std::vector<Vec>>> acc(R, std::vector<std::vector<Vec>>(Pc, std::vector<Vec>(J)));
  std::vector<std::vector<int>> acc_n(R, std::vector<int>(J, 0));
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < Pc; ++p)
      for (int j = 0; j < J; ++j) {
        rules[r][p].push_back(make_block_optimizer(opt.rule, P.size(j)));
        acc[r][p][j] = Vec::Zero(P.size(j));
      }
  std::vector<std::vector<Vec>> velocity(Pc, std::vector<Vec>(J));
  for (int p = 0; p < Pc; ++p)
    for (int j = 0; j < J; ++j) velocity[p][j] = Vec::Zero(P.size(j));
  const int64_t K = plan.updates;
  std::vector<LrSchedule> lr;
  for (int p = 0; p < Pc; ++p) lr.push_back(executor_lr_schedule(col[p]->opt_, plan));
  GradientNoise noise(opt.method.grad_noise_std, opt.method.seed);

  std::vector<char> running(Pc, 1);
  std::vector<int> active(Pc);
  std::iota(active.begin(), active.end(), 0);
  std::unordered_map<int64_t, EnsembleMicroState> live;
  auto state = [&](int64_t mb) -> EnsembleMicroState& {
    auto it = live.find(mb);
    if (it != live.end()) return it->second;
    EnsembleMicroState& st = live[mb];
    st.cols = active;
    st.act.resize(J + 1);
    st.cache.resize(J);
    st.Z = Mat::Zero(f.dim(), static_cast<Index>(active.size()));
    if (sched.split_backward) st.pending_w.resize(J);
    st.updates_at_forward.assign(J, 0);
    return st;
  };

  std::vector<std::vector<int64_t>> block_updates(R, std::vector<int64_t>(J, 0));
  std::vector<RunReport> reports(Pc);
  std::vector<int64_t> crossed(J, 0);
  for (int p = 0; p < Pc; ++p) obs[p]->on_start(w[p]);
  int64_t k = 0;
  Vec g, delta, noise_draw;
  std::vector<Vec> deltas;
  std::vector<UpdateEvent> events;
  std::vector<int> stepped;
  Mat used, grad_W, grad_in, gradient;
  auto stop_columns = [&] {
    bool changed = false;
    for (int p : active)
      if (obs[p]->should_stop()) {
        running[p] = 0;
        reports[p].measured_crossed = crossed;
        reports[p].delay_moments = moments;
        reports[p].delay_moments.close();
        changed = true;
      }
    if (changed) active.erase(std::remove_if(active.begin(), active.end(), [&](int p) { return !running[p]; }), active.end());
  };
  for (int64_t idx; (idx = ops->next()) >= 0;) {
    stop_columns();
    if (k >= K || active.empty()) break;
    const Op& op = sched.ops[idx];
    const int j = op.block;
    const int64_t mb = op.microbatch;
    const int r = sched.replica_of(mb);
    const int batch = batch_of[mb];
    EnsembleMicroState& st = state(mb);
    drop_stopped(st, running, width);
    const Index n = static_cast<Index>(st.cols.size());
    const Index off = P.offset(j), dj = P.size(j);

    if (n > 0 && op.kind == OpKind::Forward) {
      if (j == 0) {
        const Mat a0 = f.input_activation(batch);
        st.act[0].resize(a0.rows(), n * width);
        for (Index c = 0; c < n; ++c) st.act[0].middleCols(c * width, width) = a0;
      }
      used.resize(dj, n);
      for (Index c = 0; c < n; ++c) {
        const int p = st.cols[c];
        used.col(c) = P.block(W[r][p], j);
        if (opt.predict) used.col(c) += static_cast<double>(sim.max_crossed[j]) * velocity[p][j];
      }
      st.Z.middleRows(off, dj) = used;
      st.updates_at_forward[j] = block_updates[r][j];
      f.stage_forward_cols(j, batch, st.act[j], used, st.act[j + 1], st.cache[j]);
      st.act[j] = Mat();
    } else if (n > 0 && op.kind == OpKind::Backward) {
      if (j == J - 1) {
        f.loss_forward_backward_cols(batch, st.act[J], st.grad, st.loss);
        st.act[J] = Mat();
      }
      if (stash) {
        used = st.Z.middleRows(off, dj);
      } else {
        used.resize(dj, n);
        for (Index c = 0; c < n; ++c) used.col(c) = P.block(W[r][st.cols[c]], j);
      }
      f.stage_backward_cols(j, batch, st.grad, used, st.cache[j], grad_W, grad_in);
      st.cache[j].clear();
      st.grad.swap(grad_in);
      if (sched.split_backward) st.pending_w[j] = grad_W;
    }
    if (op.kind == OpKind::Backward) crossed[j] = std::max(crossed[j], block_updates[r][j] - st.updates_at_forward[j]);
    const bool gradient_op = op.kind == sched.gradient_kind();
    if (gradient_op) {
      const Mat& gj = sched.split_backward ? st.pending_w[j] : grad_W;
      for (Index c = 0; c < n; ++c) acc[r][st.cols[c]][j] += gj.col(c);
      ++acc_n[r][j];
    }
    const OpTiming& timing = ops->finish(OpState{});  // precomputed: the timeline does not read the state
    if (op.updates()) {
      STALE_CHECK(gradient_op && acc_n[r][j] > 0, "an update without accumulated gradients");
      if (timing.delays) moments.add(*timing.delays);
      const double count = static_cast<double>(acc_n[r][j]);
      acc_n[r][j] = 0;
      if (opt.method.grad_noise_std != 0) {
        // one draw for all columns: each separate run draws the same values from its own stream
        noise_draw.resize(dj);
        noise.draw(noise_draw);
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
      events.clear();
      deltas.clear();
      stepped.clear();
      for (int p = 0; p < Pc; ++p) {
        if (!running[p]) continue;
        g = acc[r][p][j] / count;
        acc[r][p][j].setZero();
        if (opt.method.grad_noise_std != 0) noise.add_drawn(g, noise_draw);
        // the micro-batch's own column of p (a column running now ran at its first forward)
        const auto pos = std::find(st.cols.begin(), st.cols.end(), p) - st.cols.begin();
        STALE_CHECK(pos < n, "a running column is in every micro-batch in flight");
        auto wj = P.block(W[r][p], j);
        e.stale_dist = (st.Z.col(pos) - W[r][p]).norm();
        rules[r][p][j]->step(wj, g, lr[p].at(k - 1), delta);
        if (opt.predict) velocity[p][j] = opt.predict_decay * velocity[p][j] + (1 - opt.predict_decay) * delta;
        e.grad_norm = g.norm();
        e.batch_loss = st.loss.size() > 0 ? st.loss(pos) : std::nan("");
        if (R > 1) {
          delta /= static_cast<double>(R);
          P.block(w_avg[p], j) += delta;
        }
        obs[p]->prepare_update(e, delta);
        events.push_back(e);
        deltas.push_back(delta);
        stepped.push_back(p);
      }
      for (size_t c = 0; c < stepped.size(); ++c)
        obs[stepped[c]]->on_update(events[c], deltas[c], R == 1 ? W[0][stepped[c]] : w_avg[stepped[c]]);
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
    if (gradient_op && ++st.gradients_done == J) live.erase(mb);
  }
  moments.close();
  for (int p = 0; p < Pc; ++p) {
    if (running[p]) reports[p].measured_crossed = crossed, reports[p].delay_moments = moments;
    w[p] = R == 1 ? W[0][p] : w_avg[p];
  }
  return reports;
}

}  // namespace stale
