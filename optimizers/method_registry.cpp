#include "optimizers/method_registry.hpp"

#include "optimizers/schedule_executor.hpp"
#include "src/config/config.hpp"
#include "src/core/error.hpp"

namespace stale {

namespace {
const bool choices = set_choice_source("method.name", [] { return MethodRegistry::names(); });
}  // namespace

const MethodEntry& method_entry(const std::string& name) {
  if (const MethodEntry* e = MethodRegistry::find(name)) return *e;
  config_error("method.name", "\"" + name + "\" is not a known method; choose one of: " + MethodRegistry::names_text());
}

ExecutorOptions schedule_executor_options(const Config& cfg, const std::string& schedule, bool stash, bool predict,
                                          const MethodParams& p) {
  ExecutorOptions o = ExecutorOptions::from_config(cfg, schedule, p);
  o.stash = stash;
  o.predict = predict && cfg.get_bool("method.prediction");
  return o;
}

std::function<std::unique_ptr<Method>(const Config&, const MethodParams&, const Objective&)> schedule_method_factory(
    const std::string& name, const std::string& schedule, bool stash, bool predict) {
  return [name, schedule, stash, predict](const Config& cfg, const MethodParams& p, const Objective&) {
    return std::unique_ptr<Method>(
        std::make_unique<ScheduleMethod>(name, schedule_executor_options(cfg, schedule, stash, predict, p)));
  };
}

std::string method_kind_name(MethodKind k) {
  switch (k) {
    case MethodKind::Fresh: return "fresh reads";
    case MethodKind::DelayDriven: return "delay model";
    case MethodKind::ScheduleDriven: return "schedule";
  }
  return "";
}

}  // namespace stale
