// The fresh-read loop (fresh_read.hpp). sgd (sgd.cpp) steps all of w at once on the whole
// gradient; bcd (bcd.cpp) steps the block s_k drawn on its own stream. Both draw the batch m_k
// and the gradient noise ξ_k on the streams RPD draws them on (sampling.hpp), so bcd is RPD
// with the zero delay model bit for bit (tests/optimizers/test_rpd.cpp).
//
// sgd steps the whole vector with one rule over all d coordinates (not S block rules): the
// same arithmetic as a block rule per block only where the compiler contracts both alike, and
// its run files are kept bit for bit (tests/golden).
#include "optimizers/fresh_read.hpp"

#include "optimizers/sampling.hpp"
#include "src/core/state_bag.hpp"

namespace stale {
namespace {

// what the loop carries between updates (checkpoints save and restore it, with the iterate):
// the batch, noise and (drawn block) stage streams, the rules (one over all of w, or one per
// block) and k
struct LoopState {
  StageSampler stages;
  BatchSampler batches;
  GradientNoise noise;
  std::vector<std::unique_ptr<BlockOptimizer>> rules;
  bool all_blocks;
  int64_t k = 0;
  LoopState(const Objective& f, const MethodParams& p, FreshStep step)
      : stages(f.stages(), p.seed), batches(f.num_batches(), p.cyclic_batches, p.seed),
        noise(p.grad_noise_std, p.seed), all_blocks(step == FreshStep::AllBlocks) {
    if (all_blocks) rules.push_back(make_block_optimizer(p.rule, f.dim()));
    else
      for (int s = 0; s < f.stages(); ++s) rules.push_back(make_block_optimizer(p.rule, f.blocks().size(s)));
  }
  // the layout each method's own loop wrote before they shared this one (sgd: one rule under
  // "rule", no stage stream; bcd: "stages" and "rules"), so that a .partial of either resumes
  void save(StateBag& b, const Vec& w) const {
    b.put("k", k);
    b.put("w", w);
    batches.save(b, "batches");
    noise.save(b, "noise");
    if (all_blocks) {
      rules[0]->save(b, "rule");
    } else {
      stages.save(b, "stages");
      save_rules(b, "rules", rules);
    }
  }
  void restore(const StateBag& b, Vec& w) {
    k = b.get_int("k");
    w = b.get_vec("w");
    batches.restore(b, "batches");
    noise.restore(b, "noise");
    if (all_blocks) {
      rules[0]->restore(b, "rule");
    } else {
      stages.restore(b, "stages");
      restore_rules(b, "rules", rules);
    }
  }
};

class FreshRead final : public Method {
 public:
  FreshRead(const char* name, MethodParams p, FreshStep step) : name_(name), p_(p), step_(step) {}
  std::string name() const override { return name_; }
  // K rounds up to whole steps (an all-blocks step is S block updates)
  RunPlan plan(const Objective& f) const override {
    RunPlan pl;
    const int64_t per_update = all() ? f.stages() : 1;
    pl.updates = (p_.updates + per_update - 1) / per_update * per_update;
    if (pl.updates != p_.updates)
      pl.note = "method.updates = " + std::to_string(p_.updates) + " rounded up to whole SGD steps of S = " +
                std::to_string(per_update) + " block updates";
    return pl;
  }
  RunReport run(const Objective& f, const RunPlan& plan, Vec& w, RunObserver& obs) const override {
    const auto& P = f.blocks();
    LoopState st(f, p_, step_);
    const bool whole = all();
    Vec g(whole ? f.dim() : P.max_size()), delta;
    if (const StateBag* resume = obs.resume_state()) st.restore(*resume, w);
    else obs.on_start(w);
    for (int64_t& k = st.k; k < plan.updates && !obs.should_stop();) {
      UpdateEvent e;
      e.stage = whole ? -1 : st.stages.next();  // −1: every block
      e.batch = st.batches.next();
      const Index offset = whole ? 0 : P.offset(e.stage), size = whole ? f.dim() : P.size(e.stage);
      auto gs = g.head(size);
      if (whole) e.batch_loss = f.batch_value_grad(w, e.batch, g);
      else f.batch_block_grad(w, e.batch, e.stage, gs);
      st.noise.add(gs);
      st.rules[whole ? 0 : static_cast<size_t>(e.stage)]->step(w.segment(offset, size), gs, p_.lr_schedule.at(k), delta);
      k += whole ? f.stages() : 1;
      e.k = k;
      e.grad_norm = gs.norm();
      obs.update_done(e, delta, w, [&](StateBag& b) { st.save(b, w); });
    }
    return {};
  }

 private:
  std::string name_;
  MethodParams p_;
  FreshStep step_;
  bool all() const { return step_ == FreshStep::AllBlocks; }
};

}  // namespace

std::unique_ptr<Method> make_fresh_read_method(const char* name, const MethodParams& p, FreshStep step) {
  return std::make_unique<FreshRead>(name, p, step);
}

}  // namespace stale
