#include "optimizers/executor_state.hpp"

#include <algorithm>
#include <cmath>

#include "src/core/error.hpp"

namespace stale {

MicroState::MicroState(std::vector<int> c, int J, Index dim, bool split_backward) : cols(std::move(c)) {
  act.resize(J + 1);
  cache.resize(J);
  // not initialised (an O(d) pass per micro-batch spared): block j's rows are written by F(j),
  // before anything reads them — the updates' ‖z − w‖ follow every forward, and a checkpoint
  // writes zeros for the blocks not yet forwarded (ExecutorState::save)
  Z.resize(dim, static_cast<Index>(cols.size()));
  if (split_backward) pending_w.resize(J);
  updates_at_forward.assign(J, 0);
}

namespace {
// keep the slices of `width` columns of M at positions `keep`
void keep_slices(Mat& M, const std::vector<Index>& keep, Index width) {
  if (M.size() == 0) return;
  Mat out(M.rows(), static_cast<Index>(keep.size()) * width);
  for (size_t j = 0; j < keep.size(); ++j)
    out.middleCols(static_cast<Index>(j) * width, width) = M.middleCols(keep[j] * width, width);
  M.swap(out);
}

// column c's slice of M, whose |cols| slices are equally wide (empty: nothing computed yet)
Mat slice_of(const Mat& M, Index pos, Index columns) {
  if (M.size() == 0) return Mat();
  const Index width = M.cols() / columns;
  return M.middleCols(pos * width, width);
}
}  // namespace

void MicroState::drop_stopped(const std::vector<char>& running) {
  std::vector<Index> keep;
  for (size_t j = 0; j < cols.size(); ++j)
    if (running[cols[j]]) keep.push_back(static_cast<Index>(j));
  if (keep.size() == cols.size()) return;
  const Index n = static_cast<Index>(cols.size());
  std::vector<int> kept_cols;
  for (Index j : keep) kept_cols.push_back(cols[j]);
  // each matrix holds n equal slices (the input activation's may be narrower than the others')
  for (auto& a : act) keep_slices(a, keep, a.cols() / n);
  keep_slices(grad, keep, grad.cols() / n);
  keep_slices(Z, keep, 1);
  for (auto& g : pending_w) keep_slices(g, keep, 1);
  for (auto& c : cache) {
    if (c.empty()) continue;
    std::vector<std::unique_ptr<StageCache>> kept;
    for (Index j : keep) kept.push_back(std::move(c[j]));
    c.swap(kept);
  }
  if (loss.size() > 0) {
    Vec l(static_cast<Index>(keep.size()));
    for (size_t j = 0; j < keep.size(); ++j) l(static_cast<Index>(j)) = loss(keep[j]);
    loss.swap(l);
  }
  cols = kept_cols;
}

ExecutorState::ExecutorState(const Objective& f, const std::vector<const UpdateRuleParams*>& rule,
                             const MethodParams& p, int R, const std::vector<Vec>& w0)
    : columns(static_cast<int>(w0.size())), W(R, w0), w_avg(w0), rules(R), acc(R), acc_n(R),
      velocity(w0.size()), noise(p.grad_noise_std, p.seed), block_updates(R, std::vector<int64_t>(f.stages(), 0)),
      crossed(f.stages(), 0) {
  const auto& P = f.blocks();
  const int J = f.stages();
  for (int r = 0; r < R; ++r) {
    acc_n[r].assign(J, 0);
    rules[r].resize(columns);
    acc[r].resize(columns);
    for (int c = 0; c < columns; ++c)
      for (int j = 0; j < J; ++j) {
        rules[r][c].push_back(make_block_optimizer(*rule[c], P.size(j)));
        acc[r][c].push_back(Vec::Zero(P.size(j)));
      }
  }
  for (int c = 0; c < columns; ++c)
    for (int j = 0; j < J; ++j) velocity[c].push_back(Vec::Zero(P.size(j)));
}

void ExecutorState::save(StateBag& b, int c, const Objective& f) const {
  const int R = static_cast<int>(W.size());
  b.put("k", k);
  b.put("update_index", update_index);
  b.put("ops_done", ops_done);
  b.put("w_avg", w_avg[c]);
  b.put_ints("crossed", crossed);
  for (int r = 0; r < R; ++r) {
    const std::string p = "replica/" + std::to_string(r);
    b.put(p + "/w", W[r][c]);
    save_rules(b, p + "/rules", rules[r][c]);
    b.put_ints(p + "/block_updates", block_updates[r]);
    b.put_ints(p + "/acc_n", std::vector<int64_t>(acc_n[r].begin(), acc_n[r].end()));
    for (size_t j = 0; j < acc[r][c].size(); ++j) b.put(p + "/acc/" + std::to_string(j), acc[r][c][j]);
  }
  for (size_t j = 0; j < velocity[c].size(); ++j) b.put("velocity/" + std::to_string(j), velocity[c][j]);
  noise.save(b, "noise");
  std::vector<int64_t> ids;
  for (const auto& [mb, st] : live) ids.push_back(mb);
  std::sort(ids.begin(), ids.end());
  b.put_ints("live", ids);
  for (int64_t mb : ids) {
    const MicroState& st = live.at(mb);
    // a column still running ran at every in-flight micro-batch's first forward
    const auto at = std::find(st.cols.begin(), st.cols.end(), c);
    STALE_CHECK(at != st.cols.end(), "a running column is in every micro-batch in flight");
    const Index pos = at - st.cols.begin(), n = static_cast<Index>(st.cols.size());
    const std::string p = "mb/" + std::to_string(mb);
    Vec z = st.Z.col(pos);
    Index read = 0;  // the rows its forwards have written: blocks 0 .. forwards − 1
    for (int j = 0; j < st.forwards; ++j) read += velocity[c][static_cast<size_t>(j)].size();
    z.tail(z.size() - read).setZero();
    b.put(p + "/z", z);
    b.put(p + "/grad", slice_of(f.activation_values(st.grad), pos, n));
    b.put(p + "/loss", st.loss.size() > 0 ? st.loss(pos) : std::nan(""));
    b.put_ints(p + "/counts", {st.gradients_done, st.forwards, st.backwards});
    b.put_ints(p + "/updates_at_forward", st.updates_at_forward);
    for (size_t j = 0; j < st.pending_w.size(); ++j)
      b.put(p + "/pending_w/" + std::to_string(j), st.pending_w[j].size() ? Vec(st.pending_w[j].col(pos)) : Vec());
  }
}

void ExecutorState::restore(const std::vector<const StateBag*>& bags, const Objective& f,
                            const std::vector<int>& batch_of, bool split) {
  const auto& P = f.blocks();
  const int R = static_cast<int>(W.size());
  const int J = f.stages();
  STALE_CHECK(static_cast<int>(bags.size()) == columns, "one checkpoint per column");
  const StateBag& b = *bags[0];  // what the columns share: counts, order, streams
  k = b.get_int("k");
  update_index = b.get_int("update_index");
  ops_done = b.get_int("ops_done");
  crossed = b.get_ints("crossed");
  for (int c = 0; c < columns; ++c)
    if (bags[c]->get_int("k") != k || bags[c]->get_int("ops_done") != ops_done)
      throw UserError("checkpoint: the columns of an ensemble were saved at different updates");
  for (int r = 0; r < R; ++r) {
    const std::string p = "replica/" + std::to_string(r);
    block_updates[r] = b.get_ints(p + "/block_updates");
    const auto& n = b.get_ints(p + "/acc_n");
    acc_n[r].assign(n.begin(), n.end());
    for (int c = 0; c < columns; ++c) {
      W[r][c] = bags[c]->get_vec(p + "/w");
      restore_rules(*bags[c], p + "/rules", rules[r][c]);
      for (int j = 0; j < J; ++j) acc[r][c][j] = bags[c]->get_vec(p + "/acc/" + std::to_string(j));
    }
  }
  for (int c = 0; c < columns; ++c) {
    w_avg[c] = bags[c]->get_vec("w_avg");
    for (int j = 0; j < J; ++j) velocity[c][j] = bags[c]->get_vec("velocity/" + std::to_string(j));
  }
  noise.restore(b, "noise");
  live.clear();
  std::vector<int> all(columns);
  for (int c = 0; c < columns; ++c) all[c] = c;
  for (int64_t mb : b.get_ints("live")) {
    if (mb < 0 || mb >= static_cast<int64_t>(batch_of.size())) throw UserError("checkpoint: a corrupt micro-batch id");
    const std::string p = "mb/" + std::to_string(mb);
    MicroState& st = live.try_emplace(mb, all, J, f.dim(), split).first->second;
    const auto& counts = b.get_ints(p + "/counts");
    if (counts.size() != 3 || counts[1] < 0 || counts[1] > J || counts[2] < 0 || counts[2] > counts[1])
      throw UserError("checkpoint: corrupt micro-batch counts");
    st.gradients_done = static_cast<int>(counts[0]);
    st.forwards = static_cast<int>(counts[1]);
    st.backwards = static_cast<int>(counts[2]);
    st.updates_at_forward = b.get_ints(p + "/updates_at_forward");
    std::vector<Mat> grads;
    Index grad_cols = 0;
    for (int c = 0; c < columns; ++c) {
      const Vec z = bags[c]->get_vec(p + "/z");
      if (z.size() != f.dim()) throw UserError("checkpoint: a corrupt micro-batch");
      st.Z.col(c) = z;
      grads.push_back(bags[c]->get_mat(p + "/grad"));
      if (grads[c].rows() != grads[0].rows() || grads[c].cols() != grads[0].cols())
        throw UserError("checkpoint: a corrupt micro-batch");
      grad_cols += grads[c].cols();
    }
    st.grad.resize(grads[0].rows(), grad_cols);
    for (int c = 0; c < columns; ++c) st.grad.middleCols(c * grads[0].cols(), grads[0].cols()) = grads[c];
    if (st.backwards > 0) {
      st.loss.resize(columns);
      for (int c = 0; c < columns; ++c) st.loss(c) = bags[c]->get_double(p + "/loss");
    }
    for (size_t j = 0; j < st.pending_w.size(); ++j) {
      const std::string name = p + "/pending_w/" + std::to_string(j);
      if (b.get_vec(name).size() == 0) continue;
      st.pending_w[j].resize(P.size(static_cast<int>(j)), columns);
      for (int c = 0; c < columns; ++c) st.pending_w[j].col(c) = bags[c]->get_vec(name);
    }
    // the forwards again, at the weights they read: the same activations and caches
    const int batch = batch_of[mb];
    if (st.forwards > 0) {
      const Mat a0 = f.input_activation(batch);  // one slice per column, as wide as it is
      st.act[0].resize(a0.rows(), columns * a0.cols());
      for (int c = 0; c < columns; ++c) st.act[0].middleCols(c * a0.cols(), a0.cols()) = a0;
    }
    Mat used;
    for (int j = 0; j < st.forwards; ++j) {
      used = st.Z.middleRows(P.offset(j), P.size(j));
      f.stage_forward_cols(j, batch, st.act[j], used, st.act[j + 1], st.cache[j]);
      st.act[j] = Mat();
    }
    // what the backwards done so far consumed
    if (st.backwards > 0) st.act[J] = Mat();
    for (int j = J - st.backwards; j < J; ++j) st.cache[j].clear();
  }
}

}  // namespace stale
