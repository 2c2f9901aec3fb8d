// The per-block delay profile (delay.name = "profile", delays/stage_profile_delay.cpp): a whole
// RPD run equals, bit for bit, the same profile replayed as a one-row periodic table; a profile
// of the wrong length is a one-line error naming delay.profile; and its key, declared in its
// own file, is a schema key like any other that renames no existing run.
#include <doctest/doctest.h>

#include <cstring>

#include "delays/delay_model.hpp"
#include "delays/delay_registry.hpp"
#include "src/run/run_in_memory.hpp"
#include "src/sweep/sweep.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("delays");

using namespace stale;

namespace {
constexpr int kStages = 5;

Config profile_run(const std::string& delay_table, int updates) {
  return Config::from_string(
      test::small_run_toml({.header = "seed = 3\nbackend = \"cpu\"\n", .dim = 37, .samples = 60, .batch_size = 6,
                            .stages = kStages, .lr = "0.005", .updates = updates, .tables = delay_table}),
      "profile.toml");
}
}  // namespace

TEST_CASE("AProfileRunIsTheSameProfileReplayedAsAPeriodicOneRowTableBitForBit") {
  const auto dir = test::temp_dir("profile");
  test::write_file(dir / "row.csv", "6,4,3,1,0\n");
  const int K = 300;
  const auto profile = run_in_memory(profile_run("[delay]\nname = \"profile\"\nprofile = [6, 4, 3, 1, 0]\n", K));
  const auto table = run_in_memory(profile_run(
      "[delay]\nname = \"table\"\npath = \"" + (dir / "row.csv").string() + "\"\ntable_repeat = true\n", K));
  REQUIRE(profile.result.status == "ok");
  REQUIRE(profile.result.final_w.size() == table.result.final_w.size());
  CHECK(std::memcmp(profile.result.final_w.data(), table.result.final_w.data(),
                    sizeof(double) * profile.result.final_w.size()) == 0);
  REQUIRE(profile.metrics.size() == table.metrics.size());
  for (size_t i = 0; i < profile.metrics.size(); ++i)
    CHECK(std::memcmp(&profile.metrics[i].grad_norm_sq, &table.metrics[i].grad_norm_sq, sizeof(double)) == 0);
  CHECK(profile.delays == table.delays);
  CHECK(profile.theory.delta == 6.0);  // δ of the bound: the largest entry

  const auto m = make_delay_model(profile_run("[delay]\nname = \"profile\"\nprofile = [6, 4, 3, 1, 0]\n", K), kStages, K);
  CHECK(m->delay(2, 0) == 2);  // capped at k: update 2 cannot read before w_0
  CHECK(m->delay(100, 0) == 6);
  CHECK(m->delay(100, 4) == 0);
  CHECK(m->steady_state_mean() == doctest::Approx(2.8));
  CHECK(m->bound() == 6);
}

TEST_CASE("AProfileOfTheWrongLengthIsOneLineNamingTheKey") {
  const Config c = profile_run("[delay]\nname = \"profile\"\nprofile = [6, 4, 3]\n", 50);
  CHECK_THROWS_WITH_AS(make_delay_model(c, kStages, 50),
                       doctest::Contains("delay.profile: has 3 entries but the run has objective.stages = 5"),
                       UserError);
  // negative entries are refused where the config is read, like every numeric key
  CHECK_THROWS_WITH_AS(profile_run("[delay]\nname = \"profile\"\nprofile = [6, -1, 3, 1, 0]\n", 50),
                       doctest::Contains("delay.profile"), UserError);
}

TEST_CASE("AKeyDeclaredInAComponentsFileIsASchemaKeyAndRenamesNoRun") {
  const KeySpec* spec = find_key("delay.profile");
  REQUIRE(spec != nullptr);
  CHECK(spec->component_owned);
  CHECK(spec->type == KeyType::IntList);
  // placed with its section, after schema.cpp's own delay.* keys
  const auto& schema = config_schema();
  size_t at = 0, last_delay = 0;
  for (size_t i = 0; i < schema.size(); ++i) {
    if (schema[i].key == "delay.profile") at = i;
    if (schema[i].key.rfind("delay.", 0) == 0) last_delay = i;
  }
  CHECK(at == last_delay);
  CHECK(delay_entry("profile").keys == std::vector<std::string>{"delay.profile"});
  // The sweep's run name of a config that leaves delay.profile at its default is the name it had
  // before the key existed (pinned with the binary of commit 090f6e9, `stale sweep` of
  // experiments/quickstart.toml with method.updates=3, seed 0). A new key in schema.cpp's own
  // table renames every run (src/sweep/sweep_spec.cpp, kRunNameVersion): update the pin then.
  Config q = Config::from_file(std::string(STALE_SOURCE_DIR) + "/experiments/quickstart.toml");
  q.set("method.updates", ConfigValue(int64_t{3}), "test");
  CHECK(config_hash(q) == "a75759b66472eef8");
}
