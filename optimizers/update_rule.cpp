#include "optimizers/update_rule.hpp"

#include <cmath>

#include "src/config/config.hpp"
#include "src/core/error.hpp"

namespace stale {

UpdateRuleParams UpdateRuleParams::from_config(const Config& cfg) {
  UpdateRuleParams p;
  p.optimizer = cfg.get_string("method.optimizer");
  p.momentum = cfg.get_float("method.momentum");
  p.beta1 = cfg.get_float("method.beta1");
  p.beta2 = cfg.get_float("method.beta2");
  p.eps = cfg.get_float("method.eps");
  p.weight_decay = cfg.get_float("method.weight_decay");
  for (const auto& k : update_rule_entry(p.optimizer).keys)
    if (const KeySpec* s = find_key(k); s && s->type == KeyType::Float) p.floats[k] = cfg.get_float(k);
  return p;
}

const UpdateRuleEntry& update_rule_entry(const std::string& name) {
  if (const auto* e = UpdateRuleRegistry::find(name)) return *e;
  config_error("method.optimizer", "\"" + name + "\" is not a registered update rule; choose one of: " +
                                       UpdateRuleRegistry::names_text());
}

LrSchedule LrSchedule::from_config(const Config& cfg, int64_t total_updates) {
  LrSchedule s;
  s.kind = cfg.get_string("method.lr_schedule");
  s.lr = cfg.get_float("method.lr");
  s.lr_min = cfg.get_float("method.lr_min");
  s.warmup = cfg.get_int("method.warmup");
  s.total = std::max<int64_t>(1, total_updates);
  return s;
}

std::string LrSchedule::bound_note() const {
  return constant() ? "constant"
                    : "peak of the " + kind + " schedule (warm-up " + std::to_string(warmup) +
                          "); the bound assumes a constant step";
}

double LrSchedule::at(int64_t k) const {
  if (warmup > 0 && k < warmup) return lr * static_cast<double>(k + 1) / static_cast<double>(warmup);
  if (kind == "constant") return lr;
  const double span = static_cast<double>(std::max<int64_t>(1, total - warmup));
  const double t = std::min(1.0, static_cast<double>(k - warmup) / span);
  return lr_min + 0.5 * (lr - lr_min) * (1.0 + std::cos(M_PI * t));
}

namespace {

class Sgd final : public BlockOptimizer {
 public:
  void step(VecRef w, ConstVecRef g, double lr, Vec& delta) override {
    delta = -lr * g;
    w += delta;
  }
};

class Momentum final : public VelocityRule {
 public:
  using VelocityRule::VelocityRule;
  void step(VecRef w, ConstVecRef g, double lr, Vec& delta) override {
    v_ = beta_ * v_ + g;
    delta = -lr * v_;
    w += delta;
  }
};

class AdamW final : public BlockOptimizer {
 public:
  AdamW(const UpdateRuleParams& p, Index n) : p_(p), m_(Vec::Zero(n)), v_(Vec::Zero(n)) {}
  void step(VecRef w, ConstVecRef g, double lr, Vec& delta) override {
    ++t_;
    m_ = p_.beta1 * m_ + (1 - p_.beta1) * g;
    v_ = p_.beta2 * v_ + (1 - p_.beta2) * g.cwiseAbs2();
    const double c1 = 1 - std::pow(p_.beta1, t_), c2 = 1 - std::pow(p_.beta2, t_);
    delta = -lr * ((m_ / c1).array() / ((v_ / c2).array().sqrt() + p_.eps)).matrix();
    if (p_.weight_decay != 0) delta -= lr * p_.weight_decay * w;
    w += delta;
  }
  void save(StateBag& b, const std::string& name) const override {
    b.put(name + "/m", m_);
    b.put(name + "/v", v_);
    b.put(name + "/t", t_);
  }
  void restore(const StateBag& b, const std::string& name) override {
    m_ = b.get_vec(name + "/m");
    v_ = b.get_vec(name + "/v");
    t_ = b.get_int(name + "/t");
  }

 private:
  UpdateRuleParams p_;
  Vec m_, v_;
  int64_t t_ = 0;
};

}  // namespace

void save_rules(StateBag& b, const std::string& name, const std::vector<std::unique_ptr<BlockOptimizer>>& rules) {
  for (size_t i = 0; i < rules.size(); ++i) rules[i]->save(b, name + "/" + std::to_string(i));
}
void restore_rules(const StateBag& b, const std::string& name, std::vector<std::unique_ptr<BlockOptimizer>>& rules) {
  for (size_t i = 0; i < rules.size(); ++i) rules[i]->restore(b, name + "/" + std::to_string(i));
}

std::unique_ptr<BlockOptimizer> make_block_optimizer(const UpdateRuleParams& p, Index n) {
  return update_rule_entry(p.optimizer).make(p, n);
}

namespace {
const bool choices = set_choice_source("method.optimizer", [] { return UpdateRuleRegistry::names(); });
const bool sgd = UpdateRuleRegistry::add(
    {"sgd", "w <- w - lr g", 0, {}, 0.0, [](const UpdateRuleParams&, Index) { return std::make_unique<Sgd>(); }});
const bool momentum = UpdateRuleRegistry::add(
    {"momentum", "heavy ball: v <- beta v + g; w <- w - lr v (method.momentum = beta)", 1, {"method.momentum"}, 1.0,
     [](const UpdateRuleParams& p, Index n) { return std::make_unique<Momentum>(p.momentum, n); }});
const bool adamw = UpdateRuleRegistry::add(
    {"adamw", "AdamW with bias correction and decoupled weight decay (Loshchilov & Hutter 2019)", 3,
     {"method.beta1", "method.beta2", "method.eps", "method.weight_decay"}, 2.0,
     [](const UpdateRuleParams& p, Index n) { return std::make_unique<AdamW>(p, n); }});
}  // namespace

}  // namespace stale
