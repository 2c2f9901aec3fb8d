#include "optimizers/method_registry.hpp"
#include "src/config/config.hpp"
#include "src/core/error.hpp"

namespace stale {

MethodParams MethodParams::from_config(const Config& cfg) {
  MethodParams p;
  p.lr = cfg.get_float("method.lr");
  p.updates = cfg.get_int("method.updates");
  p.seed = static_cast<uint64_t>(cfg.get_int("seed"));
  p.grad_noise_std = cfg.get_float("objective.grad_noise_std");
  const std::string& order = cfg.get_string("method.batch_order");
  const MethodEntry& entry = method_entry(cfg.get_string("method.name"));
  // auto: PD's cyclic order for anything that follows a schedule, RPD's uniform draws otherwise
  const bool follows_schedule = entry.kind == MethodKind::ScheduleDriven ||
                                (entry.kind == MethodKind::DelayDriven && cfg.get_string("delay.name") == "schedule" &&
                                 cfg.get_bool("delay.follow_order"));
  p.cyclic_batches = order == "cyclic" || (order == "auto" && follows_schedule);
  p.rule = UpdateRuleParams::from_config(cfg);
  p.lr_schedule = LrSchedule::from_config(cfg, p.updates);
  return p;
}

std::vector<RunReport> Method::run_ensemble(const Objective&, const RunPlan&, const std::vector<const Method*>&,
                                           std::vector<Vec>&, const std::vector<RunObserver*>&) const {
  throw UserError("method.name = \"" + name() + "\" does not run as a lockstep ensemble");
}

std::unique_ptr<Method> make_method(const Config& cfg, const Objective& f) {
  const std::string& name = cfg.get_string("method.name");
  const MethodEntry& entry = method_entry(name);
  // a delay model set for a method that reads none is the unread-key rule's (src/checks/config_rules.cpp)
  if (entry.kind == MethodKind::Fresh && cfg.get_float("method.time_budget") > 0)
    config_error("method.time_budget", "applies to schedule methods and rpd, not to method.name = \"" + name + "\"");
  if (entry.kind != MethodKind::DelayDriven && cfg.get_bool("delay.follow_order"))
    config_error("delay.follow_order", "applies to method.name = \"rpd\"");
  return entry.make(cfg, MethodParams::from_config(cfg), f);
}

}  // namespace stale
