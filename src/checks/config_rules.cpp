#include "src/checks/config_rules.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "delays/delay_registry.hpp"
#include "objectives/data/data_file.hpp"
#include "objectives/data/libsvm.hpp"
#include "objectives/objective_registry.hpp"
#include "optimizers/method_registry.hpp"
#include "optimizers/update_rule.hpp"
#include "src/core/error.hpp"
#include "src/pipeline/schedule.hpp"

namespace stale {

namespace {

// keys every run reads whatever it runs (log.* are output settings, never errors)
const std::set<std::string> kAlwaysRead = {
    "seed", "backend", "precision", "objective.name", "objective.stages", "objective.batch_size",
    "objective.grad_noise_std", "method.name", "method.lr", "method.updates", "method.batch_order",
    "method.optimizer", "method.lr_schedule", "method.warmup",
};

// the [costs] keys that shape a run's clock; `executes` = the method runs the schedule's ops
// itself (only then can durations follow the run's state: costs.coupling)
void add_cost_keys(const Config& cfg, bool executes, std::set<std::string>& read) {
  static const std::set<std::string> kConditional = {"costs.coupling", "costs.coupling_scale", "costs.pareto_alpha",
                                                     "costs.straggler_slowdown", "costs.overlap"};
  for (const auto& spec : config_schema())
    if (spec.key.rfind("costs.", 0) == 0 && !kConditional.count(spec.key)) read.insert(spec.key);
  const bool straggles = cfg.get_float("costs.straggler_prob") > 0;
  if (straggles) read.insert(cfg.get_float("costs.pareto_alpha") > 0 ? "costs.pareto_alpha" : "costs.straggler_slowdown");
  // a slowdown at prob 0 was always accepted; only the Pareto tail replaces it
  if (!straggles) read.insert("costs.straggler_slowdown");
  if (executes) {
    read.insert("costs.coupling");
    if (cfg.get_string("costs.coupling") != "none") read.insert("costs.coupling_scale");
  }
}

// the update rules whose registry entry reads `key`
std::vector<std::string> update_rules_reading(const std::string& key) {
  std::vector<std::string> out;
  for (const auto& e : UpdateRuleRegistry::entries())
    if (std::count(e.keys.begin(), e.keys.end(), key)) out.push_back(e.name);
  return out;
}

void add_schedule_keys(const Config& cfg, const std::string& schedule, bool executes, std::set<std::string>& read) {
  const ScheduleInfo& s = schedule_info(schedule);
  read.insert({"method.microbatches", "method.time_budget"});
  if (s.accumulates) read.insert("method.accumulation");
  if (s.replicated) read.insert({"method.replicas", "method.local_steps"});
  if (s.chunked) read.insert("method.chunks");
  if (s.overlapped_pairs) read.insert("costs.overlap");
  add_cost_keys(cfg, executes, read);
}

// what reads `key`, for the message: "delay.name = constant, uniform, geometric"
std::string readers_of(const Config& cfg, const std::string& key) {
  std::string out;
  auto add = [&](const std::string& what) { out += (out.empty() ? "" : ", ") + what; };
  if (key.rfind("delay.", 0) == 0) {
    for (const auto& e : DelayRegistry::entries())
      for (const auto& k : e.keys)
        if (k == key) add("delay.name = " + e.name);
  } else if (key.rfind("objective.", 0) == 0) {
    for (const auto& e : ObjectiveRegistry::entries()) {
      for (const auto& k : e.keys)
        if (k == key) add("objective.name = " + e.name);
      for (const auto& g : e.generators)
        for (const auto& k : g.keys)
          if (k == key) add("objective.generator = " + g.name + " (" + e.name + ")");
    }
  } else if (const auto rules = update_rules_reading(key); !rules.empty()) {
    for (const auto& r : rules) add("method.optimizer = " + r);
  } else if (key == "method.lr_min") {
    add("method.lr_schedule = cosine");
  } else if (key == "costs.coupling") {
    add("the schedule-driven methods (rpd replays a schedule simulated before the run)");
  } else if (key == "costs.coupling_scale") {
    add("costs.coupling = data, gradient, weight");
  } else if (key == "costs.pareto_alpha") {
    add("costs.straggler_prob > 0");
  } else if (key == "costs.straggler_slowdown" && cfg.get_float("costs.pareto_alpha") > 0) {
    add("costs.pareto_alpha = 0 (a Pareto tail replaces the fixed slowdown)");
  } else if ((key.rfind("costs.", 0) == 0 && key != "costs.overlap") || key == "method.microbatches") {
    add("the schedule-driven methods and rpd over a schedule");
  } else {
    for (const auto& e : MethodRegistry::entries()) {
      bool reads = std::find(e.keys.begin(), e.keys.end(), key) != e.keys.end();
      if (e.kind == MethodKind::ScheduleDriven) {
        std::set<std::string> r;
        add_schedule_keys(cfg, e.schedule, true, r);
        reads |= r.count(key) > 0;
      }
      if (reads) add(e.name);
    }
    if (!out.empty()) out = "method.name = " + out;
  }
  return out.empty() ? "nothing" : out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> unread_keys(const Config& cfg) {
  std::set<std::string> read = kAlwaysRead;
  std::string chosen;
  // the objective and its generator
  const ObjectiveEntry& obj = objective_entry(cfg.get_string("objective.name"));
  read.insert(obj.keys.begin(), obj.keys.end());
  chosen = "objective.name = " + obj.name;
  if (!obj.generators.empty()) {
    const std::string& gen = cfg.get_string("objective.generator");
    for (const auto& g : obj.generators)
      if (g.name == gen) read.insert(g.keys.begin(), g.keys.end());
    chosen += ", objective.generator = " + gen;
  }
  // the method, and what it runs over
  const MethodEntry& m = method_entry(cfg.get_string("method.name"));
  read.insert(m.keys.begin(), m.keys.end());
  chosen += ", method.name = " + m.name;
  if (m.kind == MethodKind::ScheduleDriven) add_schedule_keys(cfg, m.schedule, true, read);
  if (m.kind == MethodKind::DelayDriven) {
    read.insert("delay.name");  // the other methods read no delay model: delay.name is theirs to leave at zero
    const DelayEntry& d = delay_entry(cfg.get_string("delay.name"));
    read.insert(d.keys.begin(), d.keys.end());
    chosen += ", delay.name = " + d.name;
    // rpd over a schedule: its delays, or its clock under a time budget
    if (d.name == "schedule" || cfg.get_float("method.time_budget") > 0) {
      read.insert("delay.schedule");
      add_schedule_keys(cfg, cfg.get_string("delay.schedule"), false, read);
    }
  }
  // the update rule and the step-size schedule
  const UpdateRuleEntry& rule = update_rule_entry(cfg.get_string("method.optimizer"));
  read.insert(rule.keys.begin(), rule.keys.end());
  if (cfg.get_string("method.lr_schedule") == "cosine") read.insert("method.lr_min");

  // the true reason where there is one: a method that reads no delay model at all
  std::string no_delay_model;
  if (m.kind == MethodKind::ScheduleDriven)
    no_delay_model = "method.name = " + m.name + " reads no delay model (its delays come from its schedule)";
  else if (m.kind == MethodKind::Fresh)
    no_delay_model = "method.name = " + m.name + " reads no delay model (it reads every block fresh)";

  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& spec : config_schema()) {
    if (spec.key.rfind("log.", 0) == 0 || read.count(spec.key) || !cfg.is_set(spec.key)) continue;
    if (cfg.value_text(spec.key) == value_to_string(spec.fallback)) continue;  // at its default: changes nothing
    if (spec.key.rfind("delay.", 0) == 0 && !no_delay_model.empty())
      out.emplace_back(spec.key, "is set but not read: " + no_delay_model);
    else
      out.emplace_back(spec.key,
                       "is set but not read by this run (" + chosen + "); it applies to " + readers_of(cfg, spec.key));
  }
  return out;
}

void check_unread_keys(const Config& cfg) {
  const auto unread = unread_keys(cfg);
  if (unread.empty()) return;
  const std::string fix = "; remove " + std::string(unread.size() == 1 ? "it" : "them") +
                          ", unset each with ~KEY (Python: KEY=None), or pass --drop-unread (Python: "
                          "drop_unread=True; sweeps: unread = \"drop\")";
  if (unread.size() == 1) config_error(unread.front().first, unread.front().second + fix);
  std::string msg = std::to_string(unread.size()) + " keys are set but not read by this run: ";
  for (size_t i = 0; i < unread.size(); ++i) {
    std::string why = unread[i].second;  // "is set but not read: …" or "… by this run (…); it applies to …"
    const std::string lead = "is set but not read";
    if (why.rfind(lead, 0) == 0) why = why.substr(lead.size() + (why.compare(lead.size(), 1, ":") == 0 ? 2 : 1));
    msg += (i ? "; " : "") + unread[i].first + " — " + why;
  }
  throw UserError("config: " + msg + fix);
}

void check_key_relations(const Config& cfg) {
  // a cosine schedule from lr down to lr_min: lr_min above lr would raise the rate as it "decays"
  if (cfg.get_string("method.lr_schedule") == "cosine" && cfg.get_float("method.lr_min") > cfg.get_float("method.lr"))
    config_error("method.lr_min", cfg.value_text("method.lr_min") + " is above method.lr = " + cfg.value_text("method.lr") +
                                      "; valid: 0 <= method.lr_min <= method.lr (the cosine schedule decays from lr to lr_min)");
}

void check_input_files(const Config& cfg) {
  // after check_unread_keys, a key set away from its default is one the run reads
  const std::string& data = cfg.get_string("objective.data");
  if (!data.empty()) {
    std::vector<std::string> parts{data};
    if (data_file_format(data) == "npy") {
      parts.clear();
      for (size_t a = 0, b; a <= data.size(); a = b + 1) {
        b = std::min(data.find(',', a), data.size());
        parts.push_back(data.substr(a, b - a));
      }
    }
    for (const auto& p : parts)
      if (!p.empty()) resolve_data_file(p, cfg.get_string("objective.data_dir"));
  }
  const std::string& table = cfg.get_string("delay.path");
  std::error_code ec;
  if (!table.empty() && !std::filesystem::exists(table, ec))
    config_error("delay.path", "\"" + table + "\": file not found (relative paths are looked up from the working directory)");
}

std::vector<std::string> drop_unread_keys(Config& cfg) {
  std::vector<std::string> dropped;
  for (const auto& [key, why] : unread_keys(cfg)) {
    cfg.reset(key);
    dropped.push_back(key);
  }
  return dropped;
}

}  // namespace stale
