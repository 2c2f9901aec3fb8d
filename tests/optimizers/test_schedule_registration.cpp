// Adding a schedule is one file plus one test (README "Adding a component"): a schedule
// registered from this file alone — a trivial serial one, defined here — is listed, is a valid
// choice of delay.schedule, is planned by its name, and appears in the valid-name messages.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "objectives/objective_factory.hpp"
#include "optimizers/schedule_planner.hpp"
#include "src/config/config.hpp"
#include "src/core/error.hpp"
#include "src/pipeline/schedule.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/user_error.hpp"

using namespace stale;
using test::error_of;

namespace {

const std::string kName = "test-serial";

// one micro-batch at a time: device d runs F(d, mb), B(d, mb) for mb = 0, 1, …, and every B
// steps its block (naive with accumulation 1, written without the generators' helpers)
Schedule make_test_serial(const ScheduleParams& p) {
  Schedule s;
  s.name = kName;
  s.stages = p.stages;
  s.microbatches = p.microbatches;
  s.accumulation = p.accumulation;
  s.offsets.assign(s.stages + 1, 0);
  for (int d = 0; d < s.stages; ++d) {
    s.offsets[d + 1] = s.offsets[d] + 2 * s.microbatches;
    for (int64_t mb = 0; mb < s.microbatches; ++mb) {
      s.ops.push_back(Op{static_cast<int32_t>(mb), static_cast<uint16_t>(d), OpKind::Forward, 0});
      s.ops.push_back(Op{static_cast<int32_t>(mb), static_cast<uint16_t>(d), OpKind::Backward, op_flag::Update});
    }
  }
  s.inflight_bound.assign(s.stages, 1);
  return s;
}

const bool registered = ScheduleRegistry::add(
    {.name = kName, .summary = "a trivial serial schedule registered by a test", .rank = 1000,
     .default_accumulation = "1", .make = make_test_serial});

Config config(const std::string& schedule) {
  return Config::from_string(
      test::small_run_toml({.header = "seed = 1\nbackend = \"cpu\"\n", .dim = 16, .samples = 40, .batch_size = 4,
                            .stages = 4, .updates = 40,
                            .tables = "[delay]\nname = \"schedule\"\nschedule = \"" + schedule + "\"\n"}),
      "t.toml");
}

}  // namespace

TEST_SUITE_BEGIN("optimizers");

TEST_CASE("AScheduleRegisteredFromOneFileIsListedPlannedAndNamedInErrors") {
  REQUIRE(registered);
  // listed (stale list and the README table read the catalogue), last by its rank
  const auto& catalog = schedule_catalog();
  REQUIRE(!catalog.empty());
  CHECK(catalog.back().name == kName);
  const auto names = schedule_names();
  CHECK(std::count(names.begin(), names.end(), kName) == 1);
  CHECK(schedule_info(kName).summary == "a trivial serial schedule registered by a test");

  // a valid choice of delay.schedule, and planned by its name: 4 stages step once per
  // micro-batch each, so K = 40 needs exactly 10 micro-batches
  const Config cfg = config(kName);
  const PlanOptions opt = PlanOptions::from_config(cfg, cfg.get_string("delay.schedule"));
  const PlannedSchedule planned = planned_schedule(opt, SimOptions{});
  REQUIRE(planned.schedule);
  CHECK(planned.schedule->name == kName);
  CHECK(planned.schedule->microbatches == 10);
  CHECK(planned.simulation->total_updates == 40);
  check_schedule(*planned.schedule);
  auto f = make_objective(cfg, BackendKind::Cpu);
  const RunPlan plan = plan_schedule_run(opt, *f);
  CHECK(plan.updates == 40);
  CHECK(plan.delay_name == "schedule:" + kName);
  // it is naive with accumulation 1 written out: the same delays
  PlanOptions naive = opt;
  naive.schedule = "naive";
  naive.params.accumulation = 1;
  const RunPlan naive_plan = plan_schedule_run(naive, *f);
  CHECK(plan.delay_bound == naive_plan.delay_bound);
  CHECK(plan.delay_mean_steady == naive_plan.delay_mean_steady);
  CHECK(plan.delay_max_steady == naive_plan.delay_max_steady);

  // and named among the valid ones when a name is wrong
  CHECK(error_of([] { (void)schedule_info("no-such-schedule"); }).find(kName) != std::string::npos);
  CHECK(error_of([] { (void)config("no-such-schedule"); }).find(kName) != std::string::npos);
}

TEST_SUITE_END();
