// Periodic delay patterns from the simulator's read tables and from constant delays
// (stability_pattern.hpp).
#include "src/theory/stability_pattern.hpp"

#include <algorithm>
#include <sstream>
#include <string>

#include "delays/delay_registry.hpp"
#include "objectives/objective_registry.hpp"
#include "optimizers/method_registry.hpp"
#include "optimizers/schedule_executor.hpp"
#include "src/core/error.hpp"
#include "src/pipeline/simulator.hpp"

namespace stale {

int64_t DelayPattern::max_delay() const {
  int64_t m = 0;
  for (const auto& u : period)
    for (const auto& row : u.delays)
      for (int64_t d : row) m = std::max(m, d);
  return m;
}

bool DelayPattern::uniform_all_block() const {
  for (const auto& u : period) {
    if (u.block != -1) return false;
    for (const auto& row : u.delays)
      for (int64_t d : row)
        if (d != row.front()) return false;
  }
  return true;
}

DelayPattern constant_delay_pattern(int blocks, int64_t delta, bool all_blocks, double step_scale) {
  STALE_CHECK(blocks >= 1 && delta >= 0, "constant pattern: blocks >= 1, delta >= 0");
  DelayPattern p;
  p.blocks = blocks;
  p.step_scale = step_scale;
  const std::vector<int64_t> row(blocks, delta);
  if (all_blocks) {
    p.period.push_back({-1, {row}});
  } else {
    for (int a = 0; a < blocks; ++a) p.period.push_back({a, {row}});
  }
  std::ostringstream os;
  os << "constant delay " << delta << ", " << (all_blocks ? "all blocks per update" : "cyclic block order")
     << (step_scale != 1.0 ? ", step scale " : "");
  if (step_scale != 1.0) os << step_scale;
  p.description = os.str();
  return p;
}

namespace {

// One update as read off the simulation: its block and the delay rows of its micro-batches.
struct Signature {
  int block = 0;
  std::vector<std::vector<int64_t>> delays;
  bool operator==(const Signature& o) const { return block == o.block && delays == o.delays; }
};

std::vector<Signature> signatures(const Schedule& s, const SimResult& r) {
  const int J = r.blocks;
  // the micro-batches each step applies: the gradient ops of the block since its previous
  // step, in the program of the block's device (only that device runs the block's ops, so its
  // program order is the serial order; flush schedules need not run them in micro-batch order)
  std::vector<std::vector<std::vector<int64_t>>> groups(J);  // [block][step] micro-batches
  std::vector<std::vector<int64_t>> open(J);
  const OpKind g = s.gradient_kind();
  for (int d = 0; d < s.stages; ++d)
    for (const Op& op : s.program(d)) {
      if (op.kind != g) continue;
      open[op.block].push_back(op.microbatch);
      if (op.updates()) groups[op.block].push_back(std::move(open[op.block])), open[op.block].clear();
    }
  std::vector<size_t> next(J, 0);
  std::vector<Signature> out;
  out.reserve(r.updates.size());
  for (const Update& u : r.updates) {
    STALE_CHECK(next[u.block] < groups[u.block].size(), "every update has its micro-batches");
    const auto& mbs = groups[u.block][next[u.block]++];
    STALE_CHECK(!mbs.empty() && *std::min_element(mbs.begin(), mbs.end()) == u.oldest,
                "a step's oldest micro-batch is the simulator's");
    Signature sig;
    sig.block = u.block;
    for (int64_t mb : mbs) {
      std::vector<int64_t> row(J);
      for (int j = 0; j < J; ++j) row[j] = u.index - r.forward_read[mb * J + j];
      sig.delays.push_back(std::move(row));
    }
    // the step applies the mean, so the order of its micro-batches does not matter
    std::sort(sig.delays.begin(), sig.delays.end());
    out.push_back(std::move(sig));
  }
  return out;
}

}  // namespace

DelayPattern schedule_pattern(const std::string& schedule, ScheduleParams params, const CostModel& costs) {
  SimOptions opt;
  opt.timeline = true;
  opt.reads = true;
  opt.updates = true;
  opt.delay_stats = true;
  const int64_t blocks = static_cast<int64_t>(params.stages) * std::max(1, params.chunks);
  const int64_t acc = std::max(1, params.accumulation);
  for (int64_t M = 8 * blocks + 8 * acc * blocks; M <= (int64_t{1} << 16); M *= 2) {
    ScheduleParams p = params;
    p.microbatches = M;
    const Schedule s = make_schedule(schedule, p);
    if (s.replicas > 1)
      throw UserError("schedule " + schedule + ": " + std::to_string(s.replicas) +
                      " replicas train separate copies; the stability predictor follows one model");
    costs.check_stages(s.stages);
    const SimResult r = simulate(s, costs, opt);
    const std::vector<Signature> sig = signatures(s, r);
    // the steady window: updates whose micro-batches lie in [margin, M − margin)
    int64_t lo = -1, hi = -1;
    for (size_t i = 0; i < r.updates.size(); ++i) {
      const Update& u = r.updates[i];
      if (u.oldest >= r.steady_margin && u.microbatch < M - r.steady_margin) {
        if (lo < 0) lo = static_cast<int64_t>(i);
        hi = static_cast<int64_t>(i) + 1;
      }
    }
    if (lo < 0) continue;
    const int64_t n = hi - lo;
    for (int64_t P = 1; 3 * P <= n; ++P) {
      bool periodic = true;
      for (int64_t i = lo; i + P < hi && periodic; ++i) periodic = sig[i] == sig[i + P];
      if (!periodic) continue;
      DelayPattern pat;
      pat.blocks = static_cast<int>(blocks);
      pat.start = lo;
      pat.microbatches_per_period = r.updates[lo + P].microbatch - r.updates[lo].microbatch;
      for (int64_t i = lo; i < lo + P; ++i) pat.period.push_back({sig[i].block, sig[i].delays});
      std::ostringstream os;
      os << "schedule " << schedule << " S=" << s.stages;
      if (s.chunks > 1) os << " chunks=" << s.chunks;
      os << " a=" << s.accumulation << ": steady state of M=" << M << " micro-batches, period " << P
         << " updates (" << pat.microbatches_per_period << " micro-batches) from k=" << lo
         << ", max delay " << pat.max_delay();
      pat.description = os.str();
      return pat;
    }
  }
  throw UserError("schedule " + schedule + ": no periodic steady state within 65536 micro-batches (random stage "
                  "costs, costs.jitter or stragglers, make the delays a-periodic)");
}

void check_stability_objective(const Config& cfg) {
  if (!objective_entry(cfg.get_string("objective.name")).fixed_hessian) {
    std::string valid;
    for (const auto& e : ObjectiveRegistry::entries())
      if (e.fixed_hessian) valid += (valid.empty() ? "" : ", ") + e.name;
    config_error("objective.name", "\"" + cfg.get_string("objective.name") +
                                       "\": the stability predictor needs a quadratic (its recursion is linear); valid: " +
                                       valid);
  }
  if (const double reg = cfg.get_float("objective.nonconvex_reg"); reg != 0) {
    std::ostringstream v;
    v.precision(15);  // as written (0.2, not 0.20000000000000001) where 15 digits round-trip
    v << reg;
    if (std::stod(v.str()) != reg) v.str(""), v.precision(17), v << reg;
    config_error("objective.nonconvex_reg", v.str() +
                                                " makes the objective nonconvex; the stability predictor needs a quadratic "
                                                "(its recursion is linear): valid here is 0");
  }
}

DelayPattern pattern_from_config(const Config& cfg, const std::string& order) {
  if (order != "cyclic" && order != "expected")
    throw UserError("stability: --order \"" + order + "\" is not valid; choose cyclic or expected");
  const MethodParams method = MethodParams::from_config(cfg);
  if (method.rule.optimizer != "sgd")
    config_error("method.optimizer", "\"" + method.rule.optimizer +
                                         "\": the stability predictor covers the plain gradient step (sgd)");
  if (!method.lr_schedule.constant())
    config_error("method.lr_schedule", "the stability predictor needs a constant step size (lr_schedule = \"constant\", warmup = 0)");
  const std::string& name = cfg.get_string("method.name");
  const int S = static_cast<int>(cfg.get_int("objective.stages"));
  const bool expected = order == "expected";
  const double scale = expected ? 1.0 / S : 1.0;
  // the method's and the delay model's registry traits, not their names
  const MethodEntry& entry = method_entry(name);
  if (entry.kind == MethodKind::Fresh)
    return entry.steps_all_blocks ? constant_delay_pattern(S, 0, true, 1.0) : constant_delay_pattern(S, 0, expected, scale);
  if (entry.kind == MethodKind::DelayDriven) {
    const std::string& delay = cfg.get_string("delay.name");
    const DelayEntry& model = delay_entry(delay);
    if (model.fixed_delay) return constant_delay_pattern(S, model.fixed_delay(cfg), expected, scale);
    if (model.simulates_schedule) {
      if (!cfg.get_bool("delay.follow_order"))
        config_error("delay.follow_order", "false: " + name + " draws stages uniformly, so its schedule delays form no "
                                           "periodic recursion; set delay.follow_order = true (PipeDream's own order)");
      ExecutorOptions o = ExecutorOptions::from_config(cfg, cfg.get_string("delay.schedule"));
      o.params.stages = S / std::max(1, o.params.chunks);
      return schedule_pattern(o.schedule, o.params, o.costs);
    }
    std::string valid;
    for (const auto& e : DelayRegistry::entries())
      if (e.fixed_delay || e.simulates_schedule) valid += (valid.empty() ? "" : ", ") + e.name;
    config_error("delay.name", "\"" + delay + "\" draws varying delays, which form no periodic recursion; use one of: " +
                                   valid + " (a simulated schedule with delay.follow_order)");
  }
  // a schedule method over one model: its registered schedule
  if (schedule_info(entry.schedule).replicated) {
    std::string valid;
    for (const auto& e : MethodRegistry::entries())
      if (e.kind != MethodKind::ScheduleDriven || !schedule_info(e.schedule).replicated)
        valid += (valid.empty() ? "" : ", ") + e.name;
    config_error("method.name", "\"" + name + "\" trains replicas, which the stability predictor does not model; choose "
                                              "one of: " + valid);
  }
  const std::string& schedule = entry.schedule;
  ExecutorOptions o = schedule_executor_options(cfg, schedule, entry.stash, entry.predict, method);
  if (o.predict)
    config_error("method.prediction", "true: PipeMare's weight prediction adds the velocity to the recursion, which "
                                      "the predictor does not model (set it false: PipeDream without stashing)");
  if (S % std::max(1, o.params.chunks) != 0)
    config_error("objective.stages", std::to_string(S) + " is not a multiple of method.chunks = " +
                                         std::to_string(o.params.chunks));
  o.params.stages = S / std::max(1, o.params.chunks);
  return schedule_pattern(schedule, o.params, o.costs);
}

}  // namespace stale
