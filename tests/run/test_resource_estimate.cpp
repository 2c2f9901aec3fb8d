// The resource estimate (src/checks/resource_estimate.hpp): every committed experiment passes it
// on a modest budget (no false refusals), each driver of a large allocation is named when it
// alone exceeds the budget, and products of in-range keys never overflow.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <tuple>

#include "objectives/charlm/charlm.hpp"
#include "objectives/objective_registry.hpp"
#include "optimizers/method_registry.hpp"
#include "src/core/error.hpp"
#include "src/core/memory.hpp"
#include "src/pipeline/schedule.hpp"
#include "src/checks/resource_estimate.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("run");

using namespace stale;
namespace fs = std::filesystem;

namespace {
std::string refusal(const Config& cfg) {
  try {
    check_resources(cfg, (test::temp_dir("resources") / "r.h5").string());
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("EveryCommittedExperimentFitsAnEightGigabyteBudget") {
  setenv("STALE_MEMORY_LIMIT", "8G", 1);
  int checked = 0;
  for (const auto& e : fs::directory_iterator(fs::path(STALE_SOURCE_DIR) / "experiments")) {
    if (e.path().extension() != ".toml") continue;
    std::ifstream in(e.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find("base =") != std::string::npos) continue;  // a sweep file
    Config cfg;
    try {
      cfg = Config::from_file(e.path().string());
    } catch (const UserError&) {
      continue;  // a script's settings file (delay_scaling.toml), not a run config
    }
    INFO(e.path().filename().string());
    CHECK(refusal(cfg) == "");
    ++checked;
  }
  CHECK(checked >= 5);
  unsetenv("STALE_MEMORY_LIMIT");
}

TEST_CASE("EachLargeAllocationIsRefusedNamingItsKeys") {
  setenv("STALE_MEMORY_LIMIT", "1G", 1);
  const struct {
    const char* overrides[3];
    const char* must_name;
  } cases[] = {
      {{"objective.dim=40000", "", ""}, "objective.dim"},  // d × d Hessian: 3 × 1.6e9 × 8 B
      {{"delay.name=constant", "delay.max=100000000", ""}, "delay.max"},
      {{"method.name=localsgd", "method.replicas=100000000", ""}, "method.replicas"},
      {{"method.name=pipedream", "method.microbatches=100000000", ""}, "method.microbatches"},
      {{"objective.name=charlm", "objective.embedding=20000", "objective.heads=1"}, "objective.embedding"},
      {{"objective.name=charlm", "objective.context=100000", ""}, "objective.context"},
  };
  for (const auto& c : cases) {
    Config cfg = test::small_config();
    for (const char* o : c.overrides)
      if (*o) cfg.apply_override(o);
    const std::string msg = refusal(cfg);
    INFO(c.must_name << ": " << msg);
    CHECK(msg.find(c.must_name) != std::string::npos);
    CHECK(msg.find("STALE_MEMORY_LIMIT") != std::string::npos);
  }
  unsetenv("STALE_MEMORY_LIMIT");
}

TEST_CASE("EstimatesOfTheLargestInRangeKeysStayFinite") {
  // every integer key at its schema maximum: the estimate is a finite double (no int64
  // product), and it is refused
  Config cfg = test::small_config();
  for (const char* o : {"objective.dim=2147483647", "objective.samples=2147483647", "objective.stages=1000000",
                        "method.updates=1000000000000", "delay.name=uniform", "delay.max=1000000000000"})
    cfg.apply_override(o);
  const ResourceEstimate e = estimate_resources(cfg);
  CHECK(std::isfinite(e.memory_bytes()));
  CHECK(e.memory_bytes() > 1e20);
  CHECK(refusal(cfg).find("objective.dim") != std::string::npos);
}

TEST_CASE("MemoryLimitParsesBinaryUnitsAndRefusesGarbage") {
  CHECK(parse_bytes("4096") == 4096.0);
  CHECK(parse_bytes("8G") == 8.0 * 1024 * 1024 * 1024);
  CHECK(parse_bytes("512MiB") == 512.0 * 1024 * 1024);
  CHECK_FALSE(parse_bytes("lots").has_value());
  CHECK_FALSE(parse_bytes("-1G").has_value());
  setenv("STALE_MEMORY_LIMIT", "lots", 1);
  CHECK_THROWS_AS(memory_budget_bytes(), UserError);
  unsetenv("STALE_MEMORY_LIMIT");
}

TEST_SUITE_END();

// The estimate asks each component's registry entry (issue: a fresh-read method outside
// {sgd, bcd, rpd} was estimated as a schedule method, charlm's parameter count was re-derived in
// the estimate): every registered method is estimated by its kind, every objective has a
// footprint, and charlm's footprint counts the parameters its layouts allocate.
TEST_CASE("TheEstimateReadsEachComponentsRegistryEntry") {
  for (const auto& m : MethodRegistry::entries()) {
    Config cfg;
    cfg.apply_override("method.name=\"" + m.name + "\"");
    cfg.apply_override("log.delays=true");
    cfg.apply_override("delay.name=\"uniform\"");
    cfg.apply_override("delay.max=8");
    const ResourceEstimate e = estimate_resources(cfg);
    auto has = [&](const std::string& what) {
      for (const auto& i : e.memory)
        if (i.what == what) return true;
      return false;
    };
    INFO(m.name);
    CHECK(has("stashed weight versions") == (m.kind == MethodKind::ScheduleDriven));
    CHECK(has("simulated schedule") == (m.kind == MethodKind::ScheduleDriven));
    CHECK(has("delay table") == (m.kind != MethodKind::Fresh));
    CHECK(has("model replicas") == (m.kind == MethodKind::ScheduleDriven && schedule_info(m.schedule).replicated));
    CHECK(has("version store") == (m.kind == MethodKind::DelayDriven));
  }
  for (const auto& o : ObjectiveRegistry::entries()) {
    INFO(o.name);
    CHECK(static_cast<bool>(o.footprint));
  }
  for (const auto& [E, T, S] : {std::tuple{64, 32, 6}, {48, 16, 3}, {128, 64, 10}}) {
    Config cfg;
    cfg.apply_override("objective.name=\"charlm\"");
    cfg.apply_override("objective.embedding=" + std::to_string(E));
    cfg.apply_override("objective.context=" + std::to_string(T));
    cfg.apply_override("objective.stages=" + std::to_string(S));
    CharLmShape sh;
    sh.V = 256;  // the footprint's bound on a byte vocabulary
    sh.E = E;
    sh.T = T;
    sh.S = S;
    const ObjectiveFootprint fp = objective_entry("charlm").footprint(cfg, FootprintContext{});
    CHECK(fp.parameters == static_cast<double>(charlm_parameter_count(sh)));
  }
}

// The estimate takes a schedule's parameters as the planner reads them and with the defaults
// the schedule resolves, not from the keys again: a key left at 0 (interleaved's chunks, the
// replicas of a replicated schedule) is estimated as its resolved value, for every schedule
// method; and the schedule it sizes is the one the run builds: between the real schedule's op
// count and 1.5 times it (3 ops per block and micro-batch against F and B, or F, B and W).
TEST_CASE("TheEstimateResolvesScheduleDefaultsAsTheScheduleDoes") {
  auto bytes_of = [](const std::vector<std::string>& overrides) {
    Config cfg;
    for (const auto& o : overrides) cfg.apply_override(o);
    std::map<std::string, double> items;
    for (const auto& i : estimate_resources(cfg).memory) items[i.what] = i.bytes;
    return items;
  };
  int chunked = 0, replicated = 0;
  for (const auto& m : MethodRegistry::entries()) {
    if (m.kind != MethodKind::ScheduleDriven) continue;
    const ScheduleInfo& info = schedule_info(m.schedule);
    const std::vector<std::string> base = {"method.name=\"" + m.name + "\"", "objective.stages=4",
                                           "method.microbatches=16"};
    ScheduleParams p;
    p.stages = 4;
    p.microbatches = 16;
    const ScheduleParams resolved = resolve_schedule_params(m.schedule, p);
    auto explicit_keys = base;
    if (info.chunked) explicit_keys.push_back("method.chunks=" + std::to_string(resolved.chunks)), ++chunked;
    if (info.replicated) explicit_keys.push_back("method.replicas=" + std::to_string(resolved.replicas)), ++replicated;
    INFO(m.name);
    const auto items = bytes_of(base);
    CHECK(items == bytes_of(explicit_keys));
    ScheduleParams devices = resolved;
    devices.stages = 4 / resolved.chunks;  // objective.stages counts blocks: an interleaved device holds `chunks`
    const double ops = static_cast<double>(make_schedule(m.schedule, devices).ops.size());
    REQUIRE(items.count("simulated schedule") == 1);
    const double estimated_ops = items.at("simulated schedule") / kScheduleOpBytes;
    CHECK(estimated_ops >= ops);
    CHECK(estimated_ops <= 1.5 * ops);
  }
  CHECK(chunked >= 1);
  CHECK(replicated >= 1);
}

// Keys that name a component take their valid values from the registry alone (no list in
// src/config/schema.cpp to keep in step): with every layer linked, each has its registry's names.
TEST_CASE("KeysThatNameAComponentChooseFromItsRegistry") {
  int keys = 0;
  for (const auto& spec : config_schema()) {
    if (!spec.registry_choices) continue;
    INFO(spec.key);
    CHECK(spec.choices.empty());
    const auto names = choices_of(spec);
    CHECK(!names.empty());
    CHECK(std::find(names.begin(), names.end(), std::get<std::string>(spec.fallback)) != names.end());
    ++keys;
  }
  CHECK(keys == 6);  // objective.name, objective.generator, method.name, method.optimizer, delay.name, delay.schedule
  Config cfg;
  CHECK_THROWS_WITH_AS(cfg.apply_override("method.name=\"pipedreem\""), doctest::Contains("pipedream"), UserError);
  CHECK_THROWS_WITH_AS(cfg.apply_override("method.optimizer=\"adam\""), doctest::Contains("sgd, momentum, nesterov, adamw"),
                       UserError);
}
