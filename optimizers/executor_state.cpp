#include "optimizers/executor_state.hpp"

#include <algorithm>
#include <cmath>

#include "src/core/error.hpp"

namespace stale {

MicroState::MicroState(int J, Index dim, bool split_backward) {
  act.resize(J + 1);
  cache.resize(J);
  z = Vec::Zero(dim);
  if (split_backward) pending_w.resize(J);
  updates_at_forward.assign(J, 0);
}

ExecutorState::ExecutorState(const Objective& f, const UpdateRuleParams& rule, const MethodParams& p, int R,
                             const Vec& w0)
    : W(R, w0), w_avg(w0), rules(R), acc(R), acc_n(R), noise(p.grad_noise_std, p.seed),
      block_updates(R, std::vector<int64_t>(f.stages(), 0)), crossed(f.stages(), 0) {
  const auto& P = f.blocks();
  const int J = f.stages();
  for (int r = 0; r < R; ++r) {
    acc_n[r].assign(J, 0);
    for (int j = 0; j < J; ++j) {
      rules[r].push_back(make_block_optimizer(rule, P.size(j)));
      acc[r].push_back(Vec::Zero(P.size(j)));
    }
  }
  for (int j = 0; j < J; ++j) velocity.push_back(Vec::Zero(P.size(j)));
}

void ExecutorState::save(StateBag& b) const {
  const int R = static_cast<int>(W.size());
  b.put("k", k);
  b.put("update_index", update_index);
  b.put("ops_done", ops_done);
  b.put("w_avg", w_avg);
  b.put_ints("crossed", crossed);
  for (int r = 0; r < R; ++r) {
    const std::string p = "replica/" + std::to_string(r);
    b.put(p + "/w", W[r]);
    save_rules(b, p + "/rules", rules[r]);
    b.put_ints(p + "/block_updates", block_updates[r]);
    b.put_ints(p + "/acc_n", std::vector<int64_t>(acc_n[r].begin(), acc_n[r].end()));
    for (size_t j = 0; j < acc[r].size(); ++j) b.put(p + "/acc/" + std::to_string(j), acc[r][j]);
  }
  for (size_t j = 0; j < velocity.size(); ++j) b.put("velocity/" + std::to_string(j), velocity[j]);
  noise.save(b, "noise");
  std::vector<int64_t> ids;
  for (const auto& [mb, st] : live) ids.push_back(mb);
  std::sort(ids.begin(), ids.end());
  b.put_ints("live", ids);
  for (int64_t mb : ids) {
    const MicroState& st = live.at(mb);
    const std::string p = "mb/" + std::to_string(mb);
    b.put(p + "/z", st.z);
    b.put(p + "/grad", st.grad);
    b.put(p + "/loss", st.loss);
    b.put_ints(p + "/counts", {st.gradients_done, st.forwards, st.backwards});
    b.put_ints(p + "/updates_at_forward", st.updates_at_forward);
    for (size_t j = 0; j < st.pending_w.size(); ++j) b.put(p + "/pending_w/" + std::to_string(j), st.pending_w[j]);
  }
}

void ExecutorState::restore(const StateBag& b, const Objective& f, const std::vector<int>& batch_of, bool split) {
  const auto& P = f.blocks();
  const int R = static_cast<int>(W.size());
  const int J = f.stages();
  k = b.get_int("k");
  update_index = b.get_int("update_index");
  ops_done = b.get_int("ops_done");
  w_avg = b.get_vec("w_avg");
  crossed = b.get_ints("crossed");
  for (int r = 0; r < R; ++r) {
    const std::string p = "replica/" + std::to_string(r);
    W[r] = b.get_vec(p + "/w");
    restore_rules(b, p + "/rules", rules[r]);
    block_updates[r] = b.get_ints(p + "/block_updates");
    const auto& n = b.get_ints(p + "/acc_n");
    acc_n[r].assign(n.begin(), n.end());
    for (int j = 0; j < J; ++j) acc[r][j] = b.get_vec(p + "/acc/" + std::to_string(j));
  }
  for (int j = 0; j < J; ++j) velocity[j] = b.get_vec("velocity/" + std::to_string(j));
  noise.restore(b, "noise");
  live.clear();
  for (int64_t mb : b.get_ints("live")) {
    if (mb < 0 || mb >= static_cast<int64_t>(batch_of.size())) throw UserError("checkpoint: a corrupt micro-batch id");
    const std::string p = "mb/" + std::to_string(mb);
    MicroState& st = live.try_emplace(mb, J, f.dim(), split).first->second;
    st.z = b.get_vec(p + "/z");
    st.grad = b.get_mat(p + "/grad");
    st.loss = b.get_double(p + "/loss");
    const auto& c = b.get_ints(p + "/counts");
    if (c.size() != 3 || c[1] < 0 || c[1] > J || c[2] < 0 || c[2] > c[1]) throw UserError("checkpoint: corrupt micro-batch counts");
    st.gradients_done = static_cast<int>(c[0]);
    st.forwards = static_cast<int>(c[1]);
    st.backwards = static_cast<int>(c[2]);
    st.updates_at_forward = b.get_ints(p + "/updates_at_forward");
    for (size_t j = 0; j < st.pending_w.size(); ++j) st.pending_w[j] = b.get_vec(p + "/pending_w/" + std::to_string(j));
    // the forwards again, at the weights they read: the same activations and caches
    const int batch = batch_of[mb];
    if (st.forwards > 0) st.act[0] = f.input_activation(batch);
    for (int j = 0; j < st.forwards; ++j) {
      const Vec used = P.block(st.z, j);
      f.stage_forward(j, batch, st.act[j], used, st.act[j + 1], st.cache[j]);
      st.act[j] = Mat();
    }
    // what the backwards done so far consumed
    if (st.backwards > 0) st.act[J] = Mat();
    for (int j = J - st.backwards; j < J; ++j) st.cache[j].reset();
  }
}

}  // namespace stale
