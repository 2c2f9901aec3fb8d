// δ of the bound (docs/theory.md §3) is the largest delay any read of the run had, warm-up and
// drain included: for every registered method, /theory/delta, the run's summary line and the
// sweep index's delta column equal the largest entry of the run's own /delays (0 without one).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "optimizers/method_registry.hpp"
#include "src/io/h5.hpp"
#include "src/pipeline/schedule.hpp"
#include "src/run/runner.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/test_util.hpp"

using namespace stale;

namespace {

constexpr int kStages = 4;
constexpr int kUpdates = 96;

// a short run of `entry` that every method accepts; a delay-driven method draws uniform delays
// with δ far beyond what 96 updates reach, so its largest delay is what it drew, not delay.max
Config config_for(const MethodEntry& entry, const std::string& extra = "") {
  std::string tables;
  if (entry.kind == MethodKind::DelayDriven) tables += "[delay]\nname = \"uniform\"\nmax = 1000\n";
  Config c = Config::from_string(test::small_run_toml({.header = "seed = 5\nbackend = \"cpu\"\n", .dim = 24,
                                                       .samples = 48, .batch_size = 4, .stages = kStages,
                                                       .method = entry.name, .lr = "0.01", .updates = kUpdates,
                                                       .tables = tables}) + extra,
                                 "bound-delay.toml");
  // one replica: the run writes /delays (LocalSGD's R = S case is checked below)
  if (entry.kind == MethodKind::ScheduleDriven && schedule_info(entry.schedule).replicated)
    c.apply_override("method.replicas=1");
  return c;
}

int64_t largest_delay_in_file(hid_t file) {
  if (!h5::exists(file, "delays")) return 0;  // fresh reads: no table
  hsize_t rows = 0, cols = 0;
  const auto d = h5::read_matrix_int(file, "delays", rows, cols);
  REQUIRE(rows > 0);
  return *std::max_element(d.begin(), d.end());
}

}  // namespace

TEST_SUITE("run") {

TEST_CASE("EveryMethodsDeltaIsTheLargestDelayOfItsRunsOwnDelays") {
  const auto dir = test::temp_dir("bound-delay");
  for (const MethodEntry& entry : MethodRegistry::entries()) {
    CAPTURE(entry.name);
    Config c = config_for(entry);
    const std::string path = (dir / (entry.name + ".h5")).string();
    const RunResult r = run_experiment(c, path, false);
    REQUIRE(r.status == "ok");
    auto f = h5::open_file_readonly(path);
    const int64_t measured = largest_delay_in_file(f.id());
    auto theory = h5::open_group(f.id(), "theory");
    CHECK(h5::read_attr_double(theory.id(), "delta") == static_cast<double>(measured));
    CHECK(r.delta == measured);
    CHECK(run_summary_line(r).find(" delta=" + std::to_string(measured) + " ") != std::string::npos);
    // the steady state's values are named apart and never exceed the whole run's
    CHECK(h5::read_attr_double(theory.id(), "delta_steady") >= 0);
    if (entry.kind == MethodKind::ScheduleDriven)
      CHECK(h5::read_attr_double(theory.id(), "delta_steady") <= static_cast<double>(measured));
    if (entry.kind == MethodKind::DelayDriven) CHECK(measured < 1000);  // below delay.max: drawn, not assumed
  }
}

TEST_CASE("ConstantDelaysGiveMinOfDeltaAndKMinusOneAndLocalSgdItsPerReplicaMaximum") {
  const auto dir = test::temp_dir("bound-delay-more");
  for (const MethodEntry& entry : MethodRegistry::entries()) {
    CAPTURE(entry.name);
    if (entry.kind == MethodKind::DelayDriven) {
      // update k reads min(δ, k) old: the run's largest is min(δ, K − 1)
      for (int d : {7, 500}) {
        Config c = config_for(entry);
        c.apply_override("delay.name=constant");
        c.apply_override("delay.max=" + std::to_string(d));
        const RunResult r = run_experiment(c, (dir / (entry.name + std::to_string(d) + ".h5")).string(), false);
        CHECK(r.delta == std::min(d, kUpdates - 1));
      }
    }
    if (entry.kind == MethodKind::ScheduleDriven && schedule_info(entry.schedule).replicated) {
      // R = S replicas: no /delays (the rows are per replica); δ is the simulated per-replica
      // maximum, S − 1: a replica's micro-batch steps blocks S−1 … 0, all from what its F read
      Config c = config_for(entry);
      c.apply_override("method.replicas=" + std::to_string(kStages));
      const RunResult r = run_experiment(c, (dir / (entry.name + "R.h5")).string(), false);
      CHECK(r.delta == kStages - 1);
    }
  }
}

TEST_CASE("TheSweepIndexHasEachRunsDeltaFromMemoryAndFromItsFile") {
  const auto dir = test::temp_dir("bound-delay-index");
  {
    std::ofstream(dir / "base.toml") << test::small_run_toml({.header = "seed = 5\n", .dim = 24, .samples = 48,
                                                              .batch_size = 4, .stages = kStages, .method = "sgd",
                                                              .lr = "0.01", .updates = kUpdates});
    std::ofstream(dir / "sweep.toml") << "base = \"base.toml\"\n[grid]\n\"method.name\" = [\"sgd\", \"gpipe\", "
                                          "\"pipedream\", \"pipedream-capped\"]\n";
  }
  const std::string cmd = test::stale_bin() + " sweep " + (dir / "sweep.toml").string() + " -q --jobs 1 --out " +
                          (dir / "o").string();
  std::string out;
  REQUIRE(test::run_command(cmd, out) == 0);
  auto read_index = [&] {
    std::ifstream in(dir / "o" / "index.csv");
    std::string line;
    std::getline(in, line);
    std::vector<std::string> header;
    std::stringstream hs(line);
    for (std::string c; std::getline(hs, c, ',');) header.push_back(c);
    const auto col = [&](const std::string& n) { return std::find(header.begin(), header.end(), n) - header.begin(); };
    std::vector<std::pair<std::string, std::string>> rows;  // (path, delta)
    while (std::getline(in, line)) {
      std::vector<std::string> cells;
      std::stringstream ls(line);
      for (std::string c; std::getline(ls, c, ',');) cells.push_back(c);
      rows.emplace_back(cells.at(col("path")), cells.at(col("delta")));
    }
    return rows;
  };
  const auto from_memory = read_index();
  REQUIRE(from_memory.size() == 4);
  for (const auto& [path, delta] : from_memory) {
    CAPTURE(path);
    const auto file = std::filesystem::path(path).is_absolute() ? std::filesystem::path(path) : dir / "o" / path;
    auto f = h5::open_file_readonly(file.string());
    CHECK(std::stod(delta) == static_cast<double>(largest_delay_in_file(f.id())));
  }
  REQUIRE(test::run_command(cmd + " --index-only", out) == 0);
  CHECK(read_index() == from_memory);
}

}  // TEST_SUITE
