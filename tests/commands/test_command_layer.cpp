// The command layer (src/commands/): the listings are the registries and the schema, row for
// row, whatever gets registered next; a run's request is decided once — the resume rules, the
// config, the checks of a run kept in memory — for both front ends. The front ends' own tests
// (tests/cli, tests/python/test_package.py) check that each prints or returns these.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "delays/delay_registry.hpp"
#include "objectives/objective_registry.hpp"
#include "optimizers/method_registry.hpp"
#include "optimizers/update_rule.hpp"
#include "src/commands/component_catalog.hpp"
#include "src/commands/config_keys.hpp"
#include "src/commands/output_schema.hpp"
#include "src/commands/run_config.hpp"
#include "src/commands/sweep_grid.hpp"
#include "src/io/metrics_schema.hpp"
#include "src/pipeline/schedule.hpp"
#include "tests/support/user_error.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("commands");

using namespace stale;
namespace fs = std::filesystem;

namespace {

template <class Entries>
std::vector<std::string> names_of(const Entries& entries) {
  std::vector<std::string> n;
  for (const auto& e : entries) n.push_back(e.name);
  return n;
}

std::vector<std::string> names_of(const ComponentFamily& f) {
  std::vector<std::string> n;
  for (const auto& r : f.rows) n.push_back(r.name);
  return n;
}

const ComponentFact* fact(const ComponentRow& r, const std::string& name) {
  for (const auto& [n, v] : r.facts)
    if (n == name) return &v;
  return nullptr;
}

const std::string kRun = test::small_run_toml({.dim = 16, .samples = 40, .batch_size = 4, .stages = 4, .updates = 40});

}  // namespace

TEST_CASE("TheCatalogIsEveryRegistryRowForRowInListingOrder") {
  const auto all = component_catalog();
  REQUIRE(all.size() == 5);
  CHECK(component_family_names() == std::vector<std::string>{"methods", "delays", "objectives", "schedules", "rules"});
  CHECK(names_of(all[0]) == names_of(MethodRegistry::entries()));
  CHECK(names_of(all[1]) == names_of(DelayRegistry::entries()));
  CHECK(names_of(all[2]) == names_of(ObjectiveRegistry::entries()));
  CHECK(names_of(all[3]) == names_of(schedule_catalog()));
  CHECK(names_of(all[4]) == names_of(UpdateRuleRegistry::entries()));
  // every method row carries its entry's facts as data, beside the line `stale list` prints
  for (size_t i = 0; i < all[0].rows.size(); ++i) {
    const ComponentRow& r = all[0].rows[i];
    const MethodEntry& e = MethodRegistry::entries()[i];
    CAPTURE(r.name);
    REQUIRE(fact(r, "kind"));
    CHECK(std::get<std::string>(*fact(r, "kind")) == method_kind_name(e.kind));
    CHECK(std::get<std::string>(*fact(r, "schedule")) == e.schedule);
    CHECK(std::get<bool>(*fact(r, "stash")) == e.stash);
    CHECK(std::get<bool>(*fact(r, "predict")) == e.predict);
    CHECK(r.keys == e.keys);
    CHECK(r.traits.rfind(method_kind_name(e.kind), 0) == 0);
  }
  for (const auto& r : all[2].rows) {
    const auto& gens = std::get<std::map<std::string, std::vector<std::string>>>(*fact(r, "generators"));
    CHECK(gens.size() == objective_entry(r.name).generators.size());
  }
  for (const auto& r : all[3].rows) CHECK(std::holds_alternative<bool>(*fact(r, "flush")));
}

TEST_CASE("OneFamilyOfTheCatalogOrALineNamingTheFamilies") {
  const auto methods = component_catalog("methods");
  REQUIRE(methods.size() == 1);
  CHECK(methods[0].name == "methods");
  CHECK(test::error_of([] { component_catalog("optimizers"); }) ==
        "unknown component family 'optimizers'; choose one of: methods, delays, objectives, schedules, rules");
}

TEST_CASE("TheKeyRowsAreTheSchemaAndAPrefixNoKeyStartsWithNamesTheClosest") {
  const auto all = config_key_rows();
  REQUIRE(all.size() == config_schema().size());
  for (size_t i = 0; i < all.size(); ++i) {
    CHECK(all[i].key == config_schema()[i].key);
    CHECK(all[i].choices == choices_of(config_schema()[i]));
  }
  const auto delay = config_key_rows("delay.");
  REQUIRE(!delay.empty());
  for (const auto& r : delay) CHECK(r.key.rfind("delay.", 0) == 0);
  const auto name = config_key_rows("method.name");
  REQUIRE(name.size() == 1);
  REQUIRE(name[0].choices.size() == MethodRegistry::entries().size());
  std::string listed;
  for (const auto& c : name[0].choices) listed += (listed.empty() ? "" : ", ") + c;
  CHECK(meaning_with_choices(name[0]) == name[0].meaning + " (one of: " + listed + ")");
  CHECK(std::holds_alternative<std::string>(name[0].fallback));
  const std::string e = test::error_of([] { config_key_rows("method.lrx", "stale.keys"); });
  CHECK(e.rfind("stale.keys: unknown config key 'method.lrx' (did you mean 'method.lr'?)", 0) == 0);
}

TEST_CASE("TheOutputSchemaRowsAreTheMetricsTable") {
  const auto m = metric_rows();
  REQUIRE(m.size() == metric_columns().size());
  for (size_t i = 0; i < m.size(); ++i) CHECK(m[i].name == metric_columns()[i].name);
  const auto ix = index_rows();
  REQUIRE(ix.size() == index_columns().size());
  CHECK(std::any_of(ix.begin(), ix.end(), [](const OutputColumnRow& r) { return r.source == "/metrics/subopt"; }));
}

TEST_CASE("AResumeTakesNothingElseAndFindsThePartialOfARunFile") {
  const auto dir = test::temp_dir("cmd-resume");
  RunRequest r;
  r.resume = (dir / "run.h5").string();
  r.out = (dir / "other.h5").string();
  CHECK(test::error_of([&] { prepare_run(r); }).find("continues that run with its own config and path") != std::string::npos);
  r.out.clear();
  r.overrides = {"method.lr=0.1"};
  CHECK(test::error_of([&] { prepare_run(r); }).find("give no config, key=value or --out") != std::string::npos);
  r.overrides.clear();
  CHECK(test::error_of([&] { prepare_run(r); }) ==
        "--resume " + r.resume + ": no such run file (" + r.resume + ".partial); a run keeps RUN.h5.partial until it finishes");
  r.arrays = true;
  CHECK(test::error_of([&] { prepare_run(r); }).find("X, y cannot be passed again") != std::string::npos);
  r.arrays = false;
  // RUN.h5 names its .partial; whatever is there is the runner's to read (under the run's lock)
  test::write_file(dir / "run.h5.partial", "not a run file");
  const PreparedRun p = prepare_run(r);
  CHECK(p.options.resume_from == r.resume + ".partial");
  CHECK(p.options.progress);
  CHECK_FALSE(p.in_memory);
}

TEST_CASE("AFreshRunNeedsAConfigUnlessItStartsFromTheDefaults") {
  RunRequest r;
  CHECK(test::error_of([&] { prepare_run(r); }) == "stale run needs a config file (or --resume RUN.h5.partial)");
  r.defaults = true;
  r.overrides = {"method.updates=7", "delay.max=3", "log.progress=false"};
  r.drop_unread = true;
  r.keep_in_memory = true;
  const PreparedRun p = prepare_run(r);
  CHECK(p.config.get_int("method.updates") == 7);
  CHECK_FALSE(p.options.progress);  // log.progress, as the request left it unset
  CHECK(p.in_memory);
  CHECK(p.options.overrides == r.overrides);
  // a model defined in Python is the objective: its stages, no batch size of the config's
  r.model_stages = 3;
  const PreparedRun m = prepare_run(r);
  CHECK(m.config.get_int("objective.stages") == 3);
  r.overrides.push_back("objective.batch_size=4");
  CHECK(test::error_of([&] { prepare_run(r); }).find("objective.batch_size") != std::string::npos);
  r.arrays = true;
  CHECK(test::error_of([&] { prepare_run(r); }) == "stale.run: pass arrays X, y or a model, not both");
}

// stale.run() without out= kept the run in memory past the rules between keys: a cosine
// schedule decaying "up" to an lr_min above lr ran there while `stale run` refused it
TEST_CASE("ARunKeptInMemoryRefusesWhatARunFileRefusesWithTheSameLine") {
  const auto dir = test::temp_dir("cmd-relations");
  test::write_file(dir / "c.toml", kRun);
  RunRequest r;
  r.config_path = (dir / "c.toml").string();
  r.overrides = {"method.lr_schedule=cosine", "method.lr_min=0.5"};
  r.out = (dir / "r.h5").string();
  const std::string to_file = test::error_of([&] { run_to_file(prepare_run(r)); });
  CHECK(to_file.find("method.lr_min: 0.5 is above method.lr = 0.01") != std::string::npos);
  r.out.clear();
  r.keep_in_memory = true;
  CHECK(test::error_of([&] { run_kept_in_memory(prepare_run(r)); }) == to_file);
  CHECK_FALSE(fs::exists(dir / "r.h5"));
}

TEST_CASE("TheSweepOptionsAreCheckedBeforeTheSweepFileIsRead") {
  SweepRequest r;
  r.path = "no_such_sweep.toml";
  r.options.jobs = -3;
  CHECK(test::error_of([&] { sweep_grid(r); }) ==
        "--jobs -3 (Python: jobs=): valid: 1 to 1024 runs at once, or 0 for one per core");
  r.options.jobs = 1025;
  CHECK(test::error_of([&] { sweep_grid(r); }).rfind("--jobs 1025", 0) == 0);
  r.options.jobs = 0;
  r.options.ensemble = 65;
  CHECK(test::error_of([&] { sweep_grid(r); }).rfind("--ensemble 65", 0) == 0);
  r.options.ensemble = 8;
  r.shard = "2/2";
  CHECK(test::error_of([&] { sweep_grid(r); }).rfind("--shard 2/2", 0) == 0);
  r.shard = "0/1";
  CHECK(test::error_of([&] { sweep_grid(r); }).find("no_such_sweep.toml") != std::string::npos);
}

TEST_SUITE_END();
