#pragma once
// What a stage does with its gradient (as in ensmallen: an optimizer is a skeleton plus
// small policies). Hyperparameters come from the config; per-block state (velocity, Adam
// moments) is created when a run starts, one per block (and per replica), because every
// pipeline stage steps its own optimizer. Every rule registers itself (UpdateRuleRegistry,
// method.optimizer's choices): sgd, momentum and adamw here, others in their own files
// (optimizers/nesterov_rule.cpp).
//
//   sgd:       w ← w − γ_t g
//   momentum:  v ← β v + g;            w ← w − γ_t v                       (heavy ball)
//   adamw:     m ← β₁ m + (1−β₁) g;  v ← β₂ v + (1−β₂) g²;
//              w ← w − γ_t ( m̂ / (√v̂ + ε) + λ w ),  m̂ = m/(1−β₁ᵗ), v̂ = v/(1−β₂ᵗ)
//              (Loshchilov & Hutter 2019; PACI's paper trains with AdamW)
//
// Learning-rate schedules γ_t over the global block-update index k ∈ [0, K):
//   constant:  γ
//   cosine:    linear warm-up over the first `warmup` updates, then
//              γ_min + ½ (γ − γ_min)(1 + cos(π (k − warmup)/(K − warmup)))
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/core/registry.hpp"
#include "src/core/state_bag.hpp"
#include "src/core/types.hpp"

namespace stale {

class Config;

struct UpdateRuleParams {
  std::string optimizer = "sgd";  // a registered rule: sgd | momentum | adamw | nesterov | …
  double momentum = 0.9;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  // every other float key the chosen rule's entry reads (a rule with hyperparameters of its
  // own declares them in its file and reads them here)
  std::map<std::string, double> floats;
  static UpdateRuleParams from_config(const Config& cfg);
};

struct LrSchedule {
  std::string kind = "constant";  // constant | cosine
  double lr = 0.01, lr_min = 0.0;
  int64_t warmup = 0, total = 1;
  double at(int64_t k) const;
  // γ_k = γ for every k: what the §3 bound and the stability predictor assume
  bool constant() const { return kind == "constant" && warmup == 0; }
  // the run file's theory/lr_note: which γ the bound is evaluated at
  std::string bound_note() const;
  static LrSchedule from_config(const Config& cfg, int64_t total_updates);
};

class BlockOptimizer {
 public:
  virtual ~BlockOptimizer() = default;
  // w_block ← step(w_block, g) with step size lr; returns the applied change in `delta`
  virtual void step(VecRef w_block, ConstVecRef g, double lr, Vec& delta) = 0;
  // the rule's state (velocity, moments, step count) under `name` (checkpoints)
  virtual void save(StateBag&, const std::string& /*name*/) const {}
  virtual void restore(const StateBag&, const std::string& /*name*/) {}
};

// The state of the momentum rules (heavy ball, Nesterov): one velocity per coordinate, saved
// in checkpoints under name/v.
class VelocityRule : public BlockOptimizer {
 public:
  VelocityRule(double beta, Index n) : beta_(beta), v_(Vec::Zero(n)) {}
  void save(StateBag& b, const std::string& name) const override { b.put(name + "/v", v_); }
  void restore(const StateBag& b, const std::string& name) override { v_ = b.get_vec(name + "/v"); }

 protected:
  double beta_;
  Vec v_;
};

// A registered update rule: its keys (method.* it reads besides method.optimizer: the
// unread-key rule), the doubles of state it keeps per coordinate (velocity, moments: the
// resource estimate), and its factory for a block of n coordinates.
struct UpdateRuleEntry {
  std::string name;
  std::string summary;
  int rank = 0;
  std::vector<std::string> keys;
  double state_per_coordinate = 0;
  std::function<std::unique_ptr<BlockOptimizer>(const UpdateRuleParams&, Index n)> make;
};
using UpdateRuleRegistry = Registry<UpdateRuleEntry>;
// the entry of a registered rule, or a UserError naming method.optimizer and the valid rules
const UpdateRuleEntry& update_rule_entry(const std::string& name);

std::unique_ptr<BlockOptimizer> make_block_optimizer(const UpdateRuleParams& p, Index block_size);

// every rule of a list under name/0, name/1, … (one rule per block, and per replica)
void save_rules(StateBag& b, const std::string& name, const std::vector<std::unique_ptr<BlockOptimizer>>& rules);
void restore_rules(const StateBag& b, const std::string& name, std::vector<std::unique_ptr<BlockOptimizer>>& rules);

}  // namespace stale
