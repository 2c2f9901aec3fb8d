#include "delays/delay_model.hpp"
#include "optimizers/method.hpp"
#include "optimizers/sampling.hpp"
#include "optimizers/schedule_executor.hpp"
#include "src/config/config.hpp"
#include "src/pipeline/simulator.hpp"

namespace stale {

std::unique_ptr<Method> make_sgd(const MethodParams& p);
std::unique_ptr<Method> make_bcd(const MethodParams& p);
std::unique_ptr<Method> make_rpd(const MethodParams& p, std::shared_ptr<const DelayModel> delays, RpdOrder order);
std::unique_ptr<Method> make_pipedream(const Config& cfg);
std::unique_ptr<Method> make_pipedream_nostash(const Config& cfg);
std::unique_ptr<Method> make_paci(const Config& cfg);
std::unique_ptr<Method> make_localsgd(const Config& cfg);
std::unique_ptr<Method> make_gpipe(const Config& cfg);
std::unique_ptr<Method> make_1f1b_flush(const Config& cfg);
std::unique_ptr<Method> make_2bw(const Config& cfg);
std::unique_ptr<Method> make_pipemare(const Config& cfg);
std::unique_ptr<Method> make_interleaved(const Config& cfg);
std::unique_ptr<Method> make_zero_bubble(const Config& cfg);

MethodParams MethodParams::from_config(const Config& cfg) {
  MethodParams p;
  p.lr = cfg.get_float("method.lr");
  p.updates = cfg.get_int("method.updates");
  p.seed = static_cast<uint64_t>(cfg.get_int("seed"));
  p.grad_noise_std = cfg.get_float("objective.grad_noise_std");
  const std::string& order = cfg.get_string("method.batch_order");
  const std::string& name = cfg.get_string("method.name");
  // auto: PD's cyclic order for anything that follows a schedule, RPD's uniform draws otherwise
  const bool follows_schedule = !(name == "sgd" || name == "bcd" || name == "rpd") ||
                                (name == "rpd" && cfg.get_string("delay.name") == "schedule" &&
                                 cfg.get_bool("delay.follow_order"));
  p.cyclic_batches = order == "cyclic" || (order == "auto" && follows_schedule);
  p.rule = UpdateRuleParams::from_config(cfg);
  p.lr_schedule = LrSchedule::from_config(cfg, p.updates);
  return p;
}

namespace {

// RPD tied to a schedule: with delay.name = "schedule" it replays the schedule's exact delay
// table (and, with follow_order, its stage and batch order); with method.time_budget > 0 it
// runs as many updates as the schedule fits into the budget and takes their simulated times
// (E4: RPD at PipeDream's time budget). Otherwise RPD draws from its delay model alone.
std::unique_ptr<Method> make_rpd_method(const Config& cfg, MethodParams p, int stages, int num_batches) {
  const bool replay = cfg.get_string("delay.name") == "schedule";
  const double budget = cfg.get_float("method.time_budget");
  if (!replay && budget <= 0) {
    if (cfg.get_bool("delay.follow_order")) config_error("delay.follow_order", "needs delay.name = \"schedule\"");
    return make_rpd(p, make_delay_model(cfg, stages, p.updates), {});
  }
  ExecutorOptions o = ExecutorOptions::from_config(cfg, cfg.get_string("delay.schedule"));
  o.params.stages = stages / std::max(1, o.params.chunks);
  auto sched_ptr = std::make_shared<const Schedule>(plan_schedule(o));
  const Schedule& sched = *sched_ptr;
  if (sched.replicas > 1) config_error("delay.schedule", "localsgd has one delay table per replica; RPD replays one model");
  SimOptions so;
  so.delay_table = replay;
  auto sim_ptr = std::make_shared<const SimResult>(simulate(sched, o.costs, so));
  const SimResult& sim = *sim_ptr;
  const int64_t rows = static_cast<int64_t>(sim.updates.size());
  if (budget > 0) p.updates = rows;
  if (rows < p.updates)
    config_error("method.updates", std::to_string(p.updates) + " updates but the schedule " + sched.name + " yields " +
                                       std::to_string(rows));
  RpdOrder order;
  order.schedule = sched_ptr;
  order.simulation = sim_ptr;
  for (const auto& u : sim.updates) order.times.push_back(u.end);
  if (replay && cfg.get_bool("delay.follow_order")) {
    if (sched.accumulation > 1)
      config_error("delay.follow_order", "needs a schedule that steps after every micro-batch (accumulation 1)");
    const auto batch_of = microbatch_batches(sched.microbatches, num_batches, p.cyclic_batches, p.seed);
    for (const auto& u : sim.updates) {
      order.stages.push_back(u.block);
      order.batches.push_back(batch_of[u.microbatch]);
    }
  } else if (cfg.get_bool("delay.follow_order")) {
    config_error("delay.follow_order", "needs delay.name = \"schedule\"");
  }
  std::shared_ptr<const DelayModel> delays =
      replay ? make_table_delay(sim.delay_table, rows, sim.blocks, "schedule " + sched.name)
             : make_delay_model(cfg, stages, p.updates);
  p.lr_schedule.total = p.updates;
  return make_rpd(p, std::move(delays), std::move(order));
}

}  // namespace

std::unique_ptr<Method> make_method(const Config& cfg, const Objective& f) {
  const MethodParams p = MethodParams::from_config(cfg);
  const std::string& name = cfg.get_string("method.name");
  if (name != "rpd" && cfg.get_string("delay.name") != "zero")
    config_error("delay.name", "\"" + cfg.get_string("delay.name") + "\" is set but method.name = \"" + name +
                                   "\" takes its delays from its schedule; delay models apply to method.name = \"rpd\"");
  if ((name == "sgd" || name == "bcd") && cfg.get_float("method.time_budget") > 0)
    config_error("method.time_budget", "applies to schedule methods and rpd, not to method.name = \"" + name + "\"");
  if (name == "sgd") return make_sgd(p);
  if (name == "bcd") return make_bcd(p);
  if (name == "rpd") return make_rpd_method(cfg, p, f.stages(), f.num_batches());
  if (cfg.get_bool("delay.follow_order")) config_error("delay.follow_order", "applies to method.name = \"rpd\"");
  if (name == "pipedream") return make_pipedream(cfg);
  if (name == "pipedream-nostash") return make_pipedream_nostash(cfg);
  if (name == "paci") return make_paci(cfg);
  if (name == "localsgd") return make_localsgd(cfg);
  if (name == "gpipe") return make_gpipe(cfg);
  if (name == "1f1b-flush") return make_1f1b_flush(cfg);
  if (name == "2bw") return make_2bw(cfg);
  if (name == "pipemare") return make_pipemare(cfg);
  if (name == "interleaved") return make_interleaved(cfg);
  if (name == "zb-h1") return make_zero_bubble(cfg);
  config_error("method.name", "\"" + name + "\" is not a known method");
}

}  // namespace stale
