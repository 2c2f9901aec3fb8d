// The table delay model (delay.name = "table", README "Delay tables"): replay, the header rule,
// capping at k and periodic repetition (delay.table_repeat), each against what a researcher
// would otherwise build by hand — whole RPD runs compared bit for bit.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "delays/delay_model.hpp"
#include "src/io/h5.hpp"
#include "src/run/run_in_memory.hpp"
#include "src/run/runner.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("delays");

using namespace stale;

namespace {

constexpr int kStages = 5;

using Table = std::vector<std::vector<int64_t>>;

std::string csv(const Table& t, const std::string& header = "") {
  std::string s = header.empty() ? "" : header + "\n";
  for (const auto& row : t) {
    for (size_t i = 0; i < row.size(); ++i) s += (i ? "," : "") + std::to_string(row[i]);
    s += "\n";
  }
  return s;
}

// a per-stage pattern as measured in a pipeline's steady state: later stages wait less, and
// the first rows hold delays the first updates cannot have
Table measured_pattern() {
  return {{6, 4, 3, 1, 0}, {5, 4, 2, 1, 0}, {7, 3, 2, 0, 0}, {6, 5, 2, 1, 1},
          {6, 4, 3, 1, 0}, {8, 4, 2, 2, 0}, {6, 3, 2, 1, 0}, {7, 4, 3, 1, 0}};
}

// what a researcher does by hand today: tile the pattern over K rows, cap each entry at k
Table tile_and_cap(const Table& pattern, int64_t K) {
  Table t;
  for (int64_t k = 0; k < K; ++k) {
    auto row = pattern[static_cast<size_t>(k) % pattern.size()];
    for (auto& d : row) d = std::min(d, k);
    t.push_back(row);
  }
  return t;
}

int64_t entries_above_k(const Table& t, int64_t K) {
  int64_t n = 0;
  for (int64_t k = 0; k < K; ++k)
    for (int64_t d : t[static_cast<size_t>(k) % t.size()]) n += d > k;
  return n;
}

Config table_run(const std::string& path, int64_t updates, bool repeat) {
  std::string delay = "[delay]\nname = \"table\"\npath = \"" + path + "\"\n";
  if (repeat) delay += "table_repeat = true\n";
  return Config::from_string(
      test::small_run_toml({.header = "seed = 3\nbackend = \"cpu\"\n", .dim = 37, .samples = 60, .batch_size = 6,
                            .stages = kStages, .lr = "0.005", .updates = static_cast<int>(updates), .tables = delay}),
      "table.toml");
}

int64_t attribute(const InMemoryRun& r, const std::string& name) {
  for (const auto& [n, v] : r.theory.delay_attributes)
    if (n == name) return v;
  FAIL("no /theory attribute " << name);
  return -1;
}

// the same run: final iterate and /delays bit for bit, and the metrics series
void check_same_run(const InMemoryRun& a, const InMemoryRun& b) {
  REQUIRE(a.result.final_w.size() == b.result.final_w.size());
  CHECK(std::memcmp(a.result.final_w.data(), b.result.final_w.data(), sizeof(double) * a.result.final_w.size()) == 0);
  REQUIRE(a.delay_table_kept);
  REQUIRE(b.delay_table_kept);
  CHECK(a.delay_rows == b.delay_rows);
  CHECK(a.delays == b.delays);
  REQUIRE(a.metrics.size() == b.metrics.size());
  for (size_t i = 0; i < a.metrics.size(); ++i) {
    CHECK(std::memcmp(&a.metrics[i].loss, &b.metrics[i].loss, sizeof(double)) == 0);
    CHECK(std::memcmp(&a.metrics[i].grad_norm_sq, &b.metrics[i].grad_norm_sq, sizeof(double)) == 0);
  }
  CHECK(a.theory.delta == b.theory.delta);
}

}  // namespace

TEST_CASE("TableDelayReplaysCsvAndHdf5") {
  const auto dir = test::temp_dir("table");
  test::write_file(dir / "d.csv", "b0,b1\n0,0\n1,0\n2,1\n1,3\n");
  auto t = make_table_delay((dir / "d.csv").string(), 2);
  CHECK(t->horizon() == 4);
  CHECK(t->delay(3, 1) == 3);
  CHECK(t->bound() == 3);
  CHECK_THROWS_AS(make_table_delay((dir / "d.csv").string(), 3), UserError);  // column count

  test::write_file(dir / "neg.csv", "0,0\n0,-1\n");
  CHECK_THROWS_WITH_AS(make_table_delay((dir / "neg.csv").string(), 2), doctest::Contains("neg.csv:2:2"), UserError);

  {
    auto f = h5::create_file((dir / "d.h5").string());
    const int64_t tab[] = {0, 0, 1, 1, 2, 0};
    h5::write_matrix(f.id(), "delays", tab, 3, 2);
  }
  auto h = make_table_delay((dir / "d.h5").string(), 2);
  CHECK(h->delay(2, 0) == 2);
  CHECK(h->horizon() == 3);
}

TEST_CASE("TableEntriesAreCappedAtKAndARepeatedTableReadsRowKModP") {
  const auto dir = test::temp_dir("table-cap");
  test::write_file(dir / "p.csv", "3,0\n1,2\n");
  auto once = make_table_delay((dir / "p.csv").string(), 2);
  CHECK(once->delay(0, 0) == 0);  // min(3, 0): nothing to read before w_0
  CHECK(once->delay(1, 1) == 1);  // min(2, 1)
  CHECK(once->bound() == 1);      // the largest delay it delivers
  CHECK(once->horizon() == 2);

  auto rep = make_table_delay((dir / "p.csv").string(), 2, true);
  CHECK(rep->horizon() == INT64_MAX);
  CHECK(rep->bound() == 3);
  CHECK(rep->steady_state_mean() == doctest::Approx(1.5));
  const int64_t expect[6][2] = {{0, 0}, {1, 1}, {2, 0}, {1, 2}, {3, 0}, {1, 2}};
  std::vector<int64_t> d(2);
  for (int64_t k = 0; k < 6; ++k) {
    rep->delays(k, d);
    for (int i = 0; i < 2; ++i) {
      CHECK(rep->delay(k, i) == expect[k][i]);
      CHECK(d[static_cast<size_t>(i)] == expect[k][i]);
    }
  }
  const auto attrs = rep->run_attributes(6);
  REQUIRE(attrs.size() == 4);
  CHECK(attrs[0] == std::pair<std::string, int64_t>{"delay_table_rows", 2});
  CHECK(attrs[1] == std::pair<std::string, int64_t>{"delay_table_repeat", 1});
  CHECK(attrs[2] == std::pair<std::string, int64_t>{"delay_table_capped", 1});
  CHECK(attrs[3] == std::pair<std::string, int64_t>{"delay_table_capped_entries", 3});  // (0,0), (1,1), (2,0)
  // a schedule's table is exact: its run file records nothing beyond the model's name
  CHECK(make_table_delay(std::vector<int64_t>{0, 0}, 1, 2, "schedule")->run_attributes(1).empty());
  // and a delay above k in it is a simulator bug, not a pattern to cap
  CHECK_THROWS_AS(make_table_delay(std::vector<int64_t>{0, 1}, 1, 2, "schedule"), UserError);
}

TEST_CASE("HeaderOnlyWhenEveryCellIsANameAndAHalfNumericFirstRowIsAnError") {
  const auto dir = test::temp_dir("table-header");
  auto load = [&](const std::string& name, const std::string& text) {
    test::write_file(dir / name, text);
    return make_table_delay((dir / name).string(), 3);
  };
  CHECK(load("names.csv", "# measured on 3 stages\nstage0, stage1 ,\"stage 2\"\n0,0,0\n1,0,1\n")->horizon() == 2);
  CHECK(load("plain.csv", "0,0,0\n1,0,1\n")->horizon() == 2);
  // a corrupt first delay row was silently taken as a header: now file:row:column
  CHECK_THROWS_WITH_AS(load("corrupt.csv", "0,x1,0\n1,0,1\n"), doctest::Contains("corrupt.csv:1:2:"), UserError);
  CHECK_THROWS_WITH_AS(load("first.csv", "\n# c\nzz,0,0\n1,0,1\n"), doctest::Contains("first.csv:3:2:"), UserError);
  // a header with a number in it
  CHECK_THROWS_WITH_AS(load("stray.csv", "stage0,stage1,2\n0,0,0\n"), doctest::Contains("stray.csv:1:3:"), UserError);
  // numbers in words are numbers: "nan" and "inf" are no names
  CHECK_THROWS_WITH_AS(load("nan.csv", "nan,nan,nan\n0,0,0\n"), doctest::Contains("nan.csv:1:1:"), UserError);
  // one header at most, and only first
  CHECK_THROWS_WITH_AS(load("two.csv", "a,b,c\na,b,c\n0,0,0\n"), doctest::Contains("two.csv:2:1:"), UserError);
  CHECK_THROWS_WITH_AS(load("semi.csv", "0;0;0\n"), doctest::Contains("separated by commas"), UserError);
  // Excel's "CSV UTF-8" begins with a byte-order mark: the same table, its first row kept
  const auto bom = load("bom.csv", "\xEF\xBB\xBF" "0,1,0\n1,0,1\n");
  const auto plain = load("nobom.csv", "0,1,0\n1,0,1\n");
  REQUIRE(bom->horizon() == 2);
  for (int64_t k = 0; k < 2; ++k)
    for (int b = 0; b < 3; ++b) CHECK(bom->delay(k, b) == plain->delay(k, b));
  CHECK_THROWS_WITH_AS(load("nul.csv", std::string("0,0,0\n0,\0,0\n", 12)), doctest::Contains("NUL byte"), UserError);
}

TEST_CASE("ATooShortTableNamesDelayTableRepeat") {
  const auto dir = test::temp_dir("table-short");
  test::write_file(dir / "p.csv", csv(measured_pattern()));
  const Config cfg = table_run((dir / "p.csv").string(), 24, false);
  CHECK_THROWS_WITH_AS(make_delay_model(cfg, kStages, 24), doctest::Contains("delay.table_repeat = true"), UserError);
  CHECK(make_delay_model(table_run((dir / "p.csv").string(), 24, true), kStages, 24)->horizon() == INT64_MAX);
}

TEST_CASE("APeriodicTableRepeatedOverThreePeriodsEqualsTheHandTiledTableBitForBit") {
  const auto dir = test::temp_dir("table-repeat");
  const Table pattern = measured_pattern();
  const int64_t K = 3 * static_cast<int64_t>(pattern.size());
  test::write_file(dir / "pattern.csv", csv(pattern, "stage0,stage1,stage2,stage3,stage4"));
  test::write_file(dir / "tiled.csv", csv(tile_and_cap(pattern, K)));

  const auto repeated = run_in_memory(table_run((dir / "pattern.csv").string(), K, true));
  const auto tiled = run_in_memory(table_run((dir / "tiled.csv").string(), K, false));
  REQUIRE(repeated.result.status == "ok");
  check_same_run(repeated, tiled);
  CHECK(repeated.delay_rows == K);
  CHECK(repeated.theory.delta == 8.0);

  CHECK(attribute(repeated, "delay_table_rows") == 8);
  CHECK(attribute(repeated, "delay_table_repeat") == 1);
  CHECK(attribute(repeated, "delay_table_capped") == 1);
  CHECK(attribute(repeated, "delay_table_capped_entries") == entries_above_k(pattern, K));
  CHECK(attribute(tiled, "delay_table_capped") == 0);
  CHECK(attribute(tiled, "delay_table_capped_entries") == 0);
  CHECK(attribute(tiled, "delay_table_rows") == K);
}

TEST_CASE("AnUncappedTableEqualsTheHandCappedTableAndTheRunFileSaysSo") {
  const auto dir = test::temp_dir("table-capped");
  const int64_t K = 24;
  const Table pattern = measured_pattern();
  Table raw;  // the pattern tiled by hand but not capped: today an error, now capped like min(δ, k)
  for (int64_t k = 0; k < K; ++k) raw.push_back(pattern[static_cast<size_t>(k) % pattern.size()]);
  test::write_file(dir / "raw.csv", csv(raw));
  test::write_file(dir / "capped.csv", csv(tile_and_cap(pattern, K)));

  const auto a = run_in_memory(table_run((dir / "raw.csv").string(), K, false));
  const auto b = run_in_memory(table_run((dir / "capped.csv").string(), K, false));
  check_same_run(a, b);

  // the run file records it: /theory delay_table_capped, delay_table_capped_entries
  const auto path = (dir / "raw.h5").string();
  const auto r = run_experiment(table_run((dir / "raw.csv").string(), K, false), path, false);
  CHECK(std::memcmp(r.final_w.data(), a.result.final_w.data(), sizeof(double) * r.final_w.size()) == 0);
  auto f = h5::open_file_readonly(path);
  auto th = h5::open_group(f.id(), "theory");
  CHECK(h5::read_attr_int(th.id(), "delay_table_capped") == 1);
  CHECK(h5::read_attr_int(th.id(), "delay_table_capped_entries") == entries_above_k(raw, K));
  CHECK(h5::read_attr_int(th.id(), "delay_table_repeat") == 0);
  CHECK(h5::read_attr_int(th.id(), "delay_table_rows") == K);
}

TEST_CASE("ARepeatedOneRowTableIsTheConstantModelBitForBit") {
  // capping as the built-in models do: a one-row table of δ repeated is delay.name = "constant"
  const auto dir = test::temp_dir("table-constant");
  test::write_file(dir / "c.csv", "7,7,7,7,7\n");
  const auto table = run_in_memory(table_run((dir / "c.csv").string(), 40, true));
  Config cfg = Config::from_string(
      test::small_run_toml({.header = "seed = 3\nbackend = \"cpu\"\n", .dim = 37, .samples = 60, .batch_size = 6,
                            .stages = kStages, .lr = "0.005", .updates = 40,
                            .tables = "[delay]\nname = \"constant\"\nmax = 7\n"}),
      "constant.toml");
  const auto constant = run_in_memory(cfg);
  check_same_run(table, constant);
  CHECK(attribute(table, "delay_table_capped_entries") == 7 * kStages);  // k = 0..6, every block
}

TEST_CASE("ARepeatedTableWithAHugeDelayRunsInAWindowOfTheRunsLength") {
  // the version store keeps min(bound, K) updates, not a bound beyond any read of the run
  const auto dir = test::temp_dir("table-huge");
  test::write_file(dir / "h.csv", "5000000000,0,1,0,2\n3,1,0,0,0\n");
  const auto huge = run_in_memory(table_run((dir / "h.csv").string(), 30, true));
  CHECK(huge.result.status == "ok");
  CHECK(huge.theory.delta == 28.0);  // update 28 reads row 0: w_0
  CHECK(huge.theory.delta_steady == 5000000000.0);
}

TEST_SUITE_END();
