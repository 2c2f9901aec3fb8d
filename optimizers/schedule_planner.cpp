// The planner of the schedule methods (schedule_planner.hpp): config translation, the search
// for the micro-batch count, the shared plan cache, and the run plan.
#include "optimizers/schedule_planner.hpp"

#include <algorithm>
#include <cmath>
#include <list>
#include <mutex>
#include <optional>
#include <sstream>

#include "objectives/batch_costs.hpp"
#include "src/config/config.hpp"
#include "src/core/error.hpp"

namespace stale {

namespace {

Schedule build(const PlanOptions& opt, int64_t M) {
  ScheduleParams p = opt.params;
  p.microbatches = M;
  return make_schedule(opt.schedule, p);
}

// micro-batch counts a schedule accepts are multiples of this (whole mini-batches)
int64_t granularity(const PlanOptions& opt) {
  if (!schedule_info(opt.schedule).flush) return 1;
  ScheduleParams p = opt.params;
  p.microbatches = 1;
  return resolve_schedule_params(opt.schedule, p).accumulation;
}

SimOptions timing_only() {
  SimOptions o;
  o.reads = false;
  o.updates = false;
  o.delay_stats = false;
  o.timeline = false;  // the makespan is kept without it (16 bytes an op not written)
  return o;
}

// updates a schedule of M micro-batches performs (all replicas)
int64_t updates_of(const Schedule& s) {
  int64_t n = 0;
  for (const Op& op : s.ops) n += op.updates();
  return n;
}

}  // namespace

std::vector<std::string> cost_settings(const Config& cfg) {
  auto list = [&](const std::string& key) {
    std::string out;
    for (double v : cfg.get_floats(key)) {
      std::ostringstream os;
      os.precision(17);
      os << v;
      out += (out.empty() ? "" : ",") + os.str();
    }
    return out;
  };
  auto num = [](double v) {
    std::ostringstream os;
    os.precision(17);
    os << v;
    return os.str();
  };
  const int64_t seed = cfg.get_int("costs.seed") >= 0 ? cfg.get_int("costs.seed") : cfg.get_int("seed");
  return {"forward=" + list("costs.forward"), "backward=" + list("costs.backward"), "weight=" + list("costs.weight"),
          "overlap=" + num(cfg.get_float("costs.overlap")), "latency=" + num(cfg.get_float("costs.latency")),
          "jitter=" + num(cfg.get_float("costs.jitter")),
          "straggler_prob=" + num(cfg.get_float("costs.straggler_prob")),
          "straggler_slowdown=" + num(cfg.get_float("costs.straggler_slowdown")),
          "pareto_alpha=" + num(cfg.get_float("costs.pareto_alpha")), "seed=" + std::to_string(seed)};
}

CostModel cost_model_from_config(const Config& cfg) {
  try {
    return CostModel::parse(cost_settings(cfg));
  } catch (const UserError& e) {
    throw UserError(std::string("config: [costs]: ") + e.what());
  }
}

PlanOptions PlanOptions::from_config(const Config& cfg, const std::string& schedule) {
  PlanOptions o;
  o.schedule = schedule;
  o.params.stages = static_cast<int>(cfg.get_int("objective.stages"));
  o.params.microbatches = cfg.get_int("method.microbatches");
  o.params.accumulation = static_cast<int>(cfg.get_int("method.accumulation"));
  const ScheduleInfo& info = schedule_info(schedule);
  if (info.replicated) {
    o.params.replicas = static_cast<int>(cfg.get_int("method.replicas"));
    o.params.local_steps = static_cast<int>(cfg.get_int("method.local_steps"));
  } else {
    for (const char* key : {"method.replicas", "method.local_steps"})
      if (cfg.get_int(key) != 0) config_error(key, "applies only to method.name = \"localsgd\"");
  }
  if (info.chunked) o.params.chunks = static_cast<int>(cfg.get_int("method.chunks"));
  else if (cfg.get_int("method.chunks") != 0) {
    std::string chunked;  // the schedules whose traits take chunks (their methods share the names)
    for (const ScheduleInfo& e : schedule_catalog())
      if (e.chunked) chunked += (chunked.empty() ? "" : ", ") + e.name;
    config_error("method.chunks", "applies only to the interleaved schedules' methods (" + chunked + ")");
  }
  if (o.params.chunks == 0 && info.chunked) o.params.chunks = 2;
  // a V-shaped schedule places two chunks per device: objective.stages counts both
  if (info.v_shape) o.params.chunks = 2;
  o.costs = cost_model_from_config(cfg);
  o.updates = cfg.get_int("method.updates");
  o.time_budget = cfg.get_float("method.time_budget");
  o.coupling = parse_coupling(cfg.get_string("costs.coupling"));
  o.coupling_scale = cfg.get_float("costs.coupling_scale");
  o.coupled = o.coupling != Coupling::None;
  if (o.coupled && o.time_budget > 0)
    config_error("method.time_budget", "needs durations known before the run; costs.coupling = \"" +
                                           cfg.get_string("costs.coupling") + "\" times ops as the run goes (use method.updates)");
  return o;
}

namespace {

// plan_schedule's search; with `full`, the search simulates its first guess of a time budget's
// schedule with those options and returns that simulation along with the schedule when the
// guess is the answer (makespans grow about linearly, so it usually is): the caller's own
// simulation of the planned schedule was a third of planning E4 at S = 128. The makespan does
// not depend on what a simulation records.
struct Searched {
  Schedule schedule;
  std::optional<SimResult> simulation;  // of `schedule` with `full`, when the search ran it
};
Searched search_schedule(const PlanOptions& opt, const SimOptions* full) {
  // searches run over n whole units of g micro-batches
  const int64_t g = granularity(opt);
  auto build_units = [&](int64_t n) { return build(opt, n * g); };
  if (opt.time_budget > 0) {
    auto makespan = [&](int64_t n) { return simulate(build_units(n), opt.costs, timing_only()).makespan; };
    auto fits = [&](int64_t n) { return makespan(n) <= opt.time_budget; };
    std::optional<std::pair<int64_t, Searched>> kept;  // the guess, simulated with `full`
    auto fits_keeping = [&](int64_t n) {
      if (!full) return fits(n);
      Searched s{build_units(n), std::nullopt};
      s.simulation = simulate(s.schedule, opt.costs, *full);
      const bool ok = s.simulation->makespan <= opt.time_budget;
      if (ok) kept.emplace(n, std::move(s));
      return ok;
    };
    const double m1 = makespan(1);
    if (!(m1 <= opt.time_budget))
      throw UserError("config: method.time_budget = " + std::to_string(opt.time_budget) +
                      " is shorter than one micro-batch's trip through the pipeline");
    const double m2 = makespan(2);
    if (!(m2 <= opt.time_budget)) return {build_units(1), std::nullopt};
    // The largest n that fits, as a doubling-and-bisection search over the (monotone) makespans
    // finds it, in fewer simulations: makespans grow about linearly in n (the fill, then a
    // steady period a unit), so the search starts at the n extrapolated from n = 1 and 2 and
    // gallops from there. E4 at S = 128 simulated ~21 schedules of up to ~1500 micro-batches.
    int64_t lo = 2, hi = 4;
    const double slope = m2 - m1;
    if (slope > 0) {
      const double extrapolated = 2.0 + std::floor((opt.time_budget - m2) / slope);
      const int64_t guess = static_cast<int64_t>(std::clamp(extrapolated, 2.0, 1e12));
      int64_t step = 1;
      if (fits_keeping(guess)) {
        lo = guess;
        while (fits(lo + step)) lo += step, step *= 2;
        hi = lo + step;
      } else {
        hi = guess;
        for (;;) {
          const int64_t c = std::max<int64_t>(2, hi - step);
          if (c == 2 || fits(c)) {
            lo = c;
            break;
          }
          hi = c;
          step *= 2;
        }
      }
    } else {
      while (fits(hi)) lo = hi, hi *= 2;
    }
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
    if (kept && kept->first == lo) return std::move(kept->second);
    return {build_units(lo), std::nullopt};
  }
  if (opt.params.microbatches > 0) return {build(opt, opt.params.microbatches), std::nullopt};
  // smallest M with at least K updates: updates grow with M, so search
  const int64_t K = opt.updates;
  int64_t lo = 0, hi = 1;
  while (updates_of(build_units(hi)) < K) lo = hi, hi *= 2;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (updates_of(build_units(mid)) >= K ? hi : lo) = mid;
  }
  return {build_units(hi), std::nullopt};
}

}  // namespace

Schedule plan_schedule(const PlanOptions& opt) { return search_schedule(opt, nullptr).schedule; }

PlannedSchedule planned_schedule(const PlanOptions& opt, const SimOptions& so) {
  // the key is the typed options themselves, compared field by field (defaulted ==): a field
  // added to either struct is part of it, where a hand-listed key string could forget one
  struct Key {
    PlanOptions plan;
    SimOptions sim;
    bool operator==(const Key&) const = default;
  };
  const Key key{opt, so};
  static std::mutex m;
  static std::list<std::pair<Key, PlannedSchedule>> recent;  // most recent first
  constexpr size_t kKeep = 8;
  {
    std::lock_guard<std::mutex> lock(m);
    for (auto it = recent.begin(); it != recent.end(); ++it)
      if (it->first == key) {
        recent.splice(recent.begin(), recent, it);
        return recent.front().second;
      }
  }
  PlannedSchedule p;
  Searched searched = search_schedule(opt, &so);
  p.schedule = std::make_shared<const Schedule>(std::move(searched.schedule));
  p.simulation = searched.simulation ? std::make_shared<const SimResult>(std::move(*searched.simulation))
                                     : std::make_shared<const SimResult>(simulate(*p.schedule, opt.costs, so));
  std::lock_guard<std::mutex> lock(m);
  // another thread may have planned the same schedule meanwhile: every run shares one plan
  for (auto it = recent.begin(); it != recent.end(); ++it)
    if (it->first == key) {
      recent.splice(recent.begin(), recent, it);
      return recent.front().second;
    }
  recent.emplace_front(key, p);
  if (recent.size() > kKeep) recent.pop_back();
  return p;
}

RunPlan plan_schedule_run(const PlanOptions& options, const Objective& f) {
  const int J = f.stages();  // blocks of w = virtual stages of the schedule
  PlanOptions opt = options;
  const int chunks = std::max(1, opt.params.chunks);
  if (J % chunks != 0)
    throw UserError("config: objective.stages = " + std::to_string(J) + " must be a multiple of method.chunks = " +
                    std::to_string(chunks));
  opt.params.stages = J / chunks;
  PlannedSchedule planned = planned_schedule(opt, SimOptions{});
  auto schedule = planned.schedule;
  auto sim = planned.simulation;
  STALE_CHECK(schedule->blocks() == J, "schedule blocks = objective blocks");
  RunPlan pl;
  pl.executes_schedule = true;
  pl.clock = true;
  // the whole run's largest delay, warm-up and drain included: every read the run makes is
  // one the simulation made (docs/theory.md §3); the steady state's values are reports
  pl.delay_bound = sim->delays.max_overall();
  const DelayStats& steady = sim->steady_delays.updates() > 0 ? sim->steady_delays : sim->delays;
  pl.delay_max_steady = steady.max_overall();
  pl.delay_mean_steady = steady.mean_overall();
  pl.delay_name = "schedule:" + opt.schedule;
  if (opt.coupled) {
    // the delays come from the coupled timeline as the run goes: δ is measured along the run
    // (the running maximum the metrics observer and /theory use), not planned
    pl.delay_bound = 0;
    pl.delay_name = std::string("coupled:") + opt.schedule + ":" + coupling_name(opt.coupling);
    if (opt.coupling == Coupling::Data) (void)batch_data_costs(f);  // a UserError before the run file exists
  }
  if (opt.time_budget > 0) {
    pl.updates = sim->total_updates;
    pl.note = "method.time_budget: every update of the micro-batches whose timeline fits the budget";
  } else {
    if (sim->total_updates < opt.updates)
      config_error("method.microbatches", std::to_string(schedule->microbatches) + " micro-batches of " +
                                              schedule->name + " perform " + std::to_string(sim->total_updates) +
                                              " block updates, fewer than method.updates = " +
                                              std::to_string(opt.updates) +
                                              " (use method.microbatches = 0 to take the fewest that reach K)");
    pl.updates = opt.updates;
  }
  pl.schedule = std::move(schedule);
  pl.simulation = std::move(sim);
  return pl;
}

}  // namespace stale
