#include "src/checks/resource_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "delays/delay_registry.hpp"
#include "objectives/objective_registry.hpp"
#include "optimizers/method_registry.hpp"
#include "optimizers/schedule_planner.hpp"
#include "optimizers/update_rule.hpp"
#include "src/config/log_params.hpp"
#include "src/core/error.hpp"
#include "src/core/memory.hpp"
#include "src/pipeline/schedule.hpp"

namespace stale {

namespace {

constexpr double kDouble = 8.0;
constexpr double kBytesPerOp = kScheduleOpBytes;
constexpr double kMetricSeries = 24.0;       // /metrics/* columns, 8 bytes each per row
constexpr double kMaxDelayEntries = 1e7;     // RunLog::kMaxDelayEntries

std::string num(double x) { return format_count(x); }

// the memory a run needs for the largest items, for messages: "a (keys): 1.2 GiB"
std::string describe(const std::vector<ResourceItem>& items, double total) {
  std::vector<ResourceItem> sorted = items;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  std::string out;
  int shown = 0;
  for (const auto& it : sorted) {
    if (shown == 3 || (shown > 0 && it.bytes < 0.1 * total)) break;
    out += (shown ? "; " : "") + it.what + " (" + it.keys + "): " + format_bytes(it.bytes);
    ++shown;
  }
  return out;
}

std::string key_names(const std::vector<ResourceItem>& items) {
  // the keys of the largest item, for the advice: "reduce objective.samples or objective.dim"
  const auto it = std::max_element(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  std::string keys = it->keys.substr(0, it->keys.find(" = "));
  for (size_t p = keys.find(" / "); p != std::string::npos; p = keys.find(" / ")) keys.replace(p, 3, " × ");
  std::string out;
  size_t pos = 0;
  while (pos < keys.size()) {
    const size_t next = keys.find(" × ", pos);
    std::string k = keys.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    if (const auto sq = k.find("²"); sq != std::string::npos) k.erase(sq);
    if (k.find('.') != std::string::npos && out.find(k) == std::string::npos) out += (out.empty() ? "" : " or ") + k;
    if (next == std::string::npos) break;
    pos = next + std::string(" × ").size();
  }
  return out;
}

}  // namespace

double ResourceEstimate::memory_bytes() const {
  double s = 0;
  for (const auto& i : memory) s += i.bytes;
  return s;
}
double ResourceEstimate::disk_bytes() const {
  double s = 0;
  for (const auto& i : disk) s += i.bytes;
  return s;
}

ResourceEstimate estimate_resources(const Config& cfg, double parameters) {
  ResourceEstimate e;
  // everything in double: products of keys up to 2^31 overflow no integer here. What each
  // component takes comes from its registry entry: the objective's footprint, the method's
  // kind and schedule, the delay model's versions.
  const MethodEntry& method = method_entry(cfg.get_string("method.name"));
  const DelayEntry& delay = delay_entry(cfg.get_string("delay.name"));
  const MethodParams method_params = MethodParams::from_config(cfg);
  const double K = static_cast<double>(method_params.updates);
  const double S = static_cast<double>(cfg.get_int("objective.stages"));
  const bool schedule_method = method.kind == MethodKind::ScheduleDriven;
  const bool delay_driven = method.kind == MethodKind::DelayDriven;
  const bool simulates = schedule_method || (delay_driven && delay.simulates_schedule);
  // the schedule's parameters as the planner reads them, with the defaults the schedule
  // resolves (replicas 0: one per stage; interleaved's chunks 0: 2). M stays as configured
  // (0: the planner's choice, estimated from K below; too many: the memory it would take is
  // the refusal to give), so the defaults are resolved at M = 1.
  PlanOptions plan;
  ScheduleParams sp;
  if (simulates) {
    plan = PlanOptions::from_config(cfg, schedule_method ? method.schedule : cfg.get_string("delay.schedule"));
    ScheduleParams p = plan.params;
    p.microbatches = 1;
    sp = resolve_schedule_params(plan.schedule, p);
    sp.microbatches = plan.params.microbatches;
  }

  const ObjectiveEntry& objective = objective_entry(cfg.get_string("objective.name"));
  ObjectiveFootprint fp;
  if (objective.footprint) fp = objective.footprint(cfg, FootprintContext{schedule_method ? S : 1.0});
  if (fp.parameters <= 0 && parameters > 0) {
    // a model whose size the config does not tell (a Python model): its weights, float64 in the
    // harness's storage, once as the iterate
    fp.parameters = parameters;
    fp.parameter_keys = "the model's parameters";
    fp.memory.push_back({"iterate", "the model's parameters = " + num(parameters), parameters * kDouble});
  }
  const double d = fp.parameters;
  const double elem = fp.element_bytes;
  const std::string& d_keys = fp.parameter_keys;
  e.memory.insert(e.memory.end(), fp.memory.begin(), fp.memory.end());

  if (d > 0) {
    const double state = update_rule_entry(method_params.rule.optimizer).state_per_coordinate;
    if (delay_driven && delay.versions_held) {
      const double versions = delay.versions_held(cfg, S);
      e.memory.push_back({"version store",
                          (delay.simulates_schedule ? "objective.stages × " : "delay.max × ") + d_keys + " = " +
                              num(delay.simulates_schedule ? S : versions - 1) + " × " + num(d),
                          versions * d * elem});
    }
    if (schedule_method) {
      e.memory.push_back({"stashed weight versions", "objective.stages × " + d_keys + " = " + num(S) + " × " + num(d),
                          (S + 1 + state) * d * elem});
      if (schedule_info(method.schedule).replicated) {
        const double R = sp.replicas;
        e.memory.push_back({"model replicas", "method.replicas × " + d_keys + " = " + num(R) + " × " + num(d),
                            R * (2 + state) * d * elem});
      }
    }
  }

  // the schedule as data: at most 3 ops (F, B, W) per block per micro-batch — S counts the
  // blocks, an interleaved device's chunks included; K updates need about K / S micro-batches
  // of S blocks each when M is left to the executor
  if (simulates) {
    const double M = static_cast<double>(sp.microbatches);
    const double budget = plan.time_budget;
    if (budget > 0) {
      // a time budget runs every micro-batch that fits: each stage spends at least t_F + t_B
      // per micro-batch (a chunk's op takes 1/chunks of its device's stage cost, the
      // simulator's rule), so M ≤ budget / min(t_F + t_B); the search builds up to twice that
      // (the cost model refuses a duration ≤ 0, so the budget always runs out)
      const double per_mb = plan.costs.min_forward_backward();
      const double M_budget = budget / per_mb;
      e.memory.push_back({"simulated schedule",
                          "method.time_budget / (costs.forward + costs.backward) = " + num(budget) + " / " + num(per_mb),
                          2 * 3 * M_budget * S * kBytesPerOp});
    } else {
      const double ops = M > 0 ? 3 * M * S : 3 * K;
      e.memory.push_back({"simulated schedule",
                          M > 0 ? "method.microbatches × objective.stages = " + num(M) + " × " + num(S)
                                : "method.updates = " + num(K),
                          ops * kBytesPerOp});
    }
  }
  // a coupled timeline keeps the factor of every op it timed, for its checkpoints (OpSource::save):
  // one double per op, at most 3 ops per block update
  if (schedule_method && cfg.get_string("costs.coupling") != "none")
    e.memory.push_back({"coupled timeline's op factors", "3 × method.updates = 3 × " + num(K), 3 * K * kDouble});
  const bool stale_reads = method.kind != MethodKind::Fresh;
  const LogParams log = LogParams::from_config(cfg);
  if (stale_reads && log.delays)
    e.memory.push_back({"delay table", "method.updates × objective.stages = " + num(K) + " × " + num(S),
                        std::min(K * S, kMaxDelayEntries) * kDouble});

  // the run file
  const double every = static_cast<double>(log.every);
  e.disk.push_back({"metrics", "method.updates / log.every = " + num(K) + " / " + num(every),
                    (std::floor(K / every) + 2) * kMetricSeries * kDouble});
  if (d > 0 && log.iterates_every != 0) {
    const double cadence = static_cast<double>(log.iterate_cadence(static_cast<int64_t>(d)));
    e.disk.push_back({"iterates", "method.updates / log.iterates_every × " + d_keys + " = " + num(K) + " / " +
                                      num(cadence) + " × " + num(d),
                      (std::floor(K / cadence) + 2) * d * kDouble});
  }
  if (stale_reads && log.delays)
    e.disk.push_back({"delay table", "method.updates × objective.stages = " + num(K) + " × " + num(S),
                      std::min(K * S, kMaxDelayEntries) * kDouble});
  return e;
}

void check_resources_of(const Config& cfg, const std::string& run_path, int64_t parameters) {
  const ObjectiveEntry& entry = objective_entry(cfg.get_string("objective.name"));
  if (entry.footprint && entry.footprint(cfg, FootprintContext{}).parameters > 0) return;  // checked from the config
  check_resources(cfg, run_path, static_cast<double>(parameters));
}

void check_resources(const Config& cfg, const std::string& run_path, double parameters) {
  const ResourceEstimate e = estimate_resources(cfg, parameters);
  const double mem = e.memory_bytes();
  const double budget = memory_budget_bytes();
  if (!e.memory.empty() && !(mem <= budget))
    throw UserError("config: this run needs about " + format_bytes(mem) + " of memory but " + memory_budget_source() +
                    ": " + describe(e.memory, mem) + "; reduce " + key_names(e.memory));

  namespace fs = std::filesystem;
  std::string path = run_path;
  if (path.empty()) path = LogParams::from_config(cfg).out;
  if (path.empty()) path = "runs/run.h5";
  // the nearest folder that exists: the run's folder may be created later
  fs::path dir = fs::absolute(fs::path(path)).parent_path();
  std::error_code ec;
  while (!dir.empty() && !fs::exists(dir, ec) && dir != dir.root_path()) dir = dir.parent_path();
  const auto space = fs::space(dir, ec);
  const double disk = e.disk_bytes();
  // a streamed run finishes by writing a compact copy of its .partial beside it (RunFile::
  // end_streaming): for that moment the disk holds the run file twice
  if (!ec && !e.disk.empty() && 2 * disk > static_cast<double>(space.available))
    throw UserError("config: the run file would take about " + format_bytes(disk) + " and finishing it a copy as large (" +
                    format_bytes(2 * disk) + " in all) but " + dir.string() + " has " +
                    format_bytes(static_cast<double>(space.available)) + " free: " + describe(e.disk, disk) +
                    "; reduce " + key_names(e.disk) + " (or raise the cadence: log.every, log.iterates_every)");
}

}  // namespace stale
