// The metrics table (src/io/metrics_schema.hpp) covers every MetricsRow member once, keeps the
// checkpoint's row layout, and is what the run file and the sweep index are written from.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "src/io/h5.hpp"
#include "src/io/metrics_schema.hpp"
#include "src/run/runner.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("io");

using namespace stale;

TEST_CASE("MetricsTableNamesEveryMetricsRowMemberOnce") {
  const auto& table = metric_columns();
  // every member is 8 bytes: a member the table leaves out makes the row larger than the table
  CHECK(sizeof(MetricsRow) == 8 * table.size());
  std::set<std::string> names;
  for (const auto& c : table) names.insert(c.name);
  CHECK(names.size() == table.size());
  // writing column i as the value i through the table reads back i from every column: no two
  // rows share a member
  MetricsRow row;
  for (size_t i = 0; i < table.size(); ++i) {
    if (table[i].type() == ColumnType::Int64) row.*std::get<0>(table[i].member) = static_cast<int64_t>(i);
    else row.*std::get<1>(table[i].member) = static_cast<double>(i);
  }
  for (size_t i = 0; i < table.size(); ++i) {
    CAPTURE(table[i].name);
    if (table[i].type() == ColumnType::Int64) CHECK(row.*std::get<0>(table[i].member) == static_cast<int64_t>(i));
    else CHECK(row.*std::get<1>(table[i].member) == static_cast<double>(i));
  }
}

TEST_CASE("SplitRowKeepsTheCheckpointLayoutAndJoinRowInvertsIt") {
  MetricsRow r;
  r.k = 7, r.stage = 2, r.batch = 5;
  r.time = 1.5, r.loss = 2.5, r.subopt = 3.5, r.grad_norm_sq = 4.5, r.grad_norm_sq_mean = 5.5, r.stale_dist = 6.5;
  r.bound = 7.5, r.bound_opt = 8.5, r.bound_stoch = 9.5, r.bound_stale = 10.5, r.G = 11.5, r.wall = 12.5;
  r.batch_loss = 13.5, r.val_loss = 14.5;
  std::vector<int64_t> ints;
  std::vector<double> reals;
  split_row(r, ints, reals);
  // the order MetricsRecorder::save (formerly MetricsObserver::checkpoint) has always written ("row_ints", "row")
  CHECK(ints == std::vector<int64_t>{7, 2, 5});
  CHECK(reals == std::vector<double>{1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5, 12.5, 13.5, 14.5});
  const MetricsRow back = join_row(ints, reals, "test");
  std::vector<int64_t> ints2;
  std::vector<double> reals2;
  split_row(back, ints2, reals2);
  CHECK(ints2 == ints);
  CHECK(reals2 == reals);
  reals.pop_back();
  CHECK_THROWS_AS(join_row(ints, reals, "test"), UserError);
}

TEST_CASE("IndexColumnsReadSeriesTheRunFileHas") {
  std::set<std::string> metrics;
  for (const auto& c : metric_columns()) metrics.insert(c.name);
  for (const auto& c : index_columns())
    if (c.metric) CHECK_MESSAGE(metrics.count(c.metric) == 1, c.name);
}

TEST_CASE("RunFileMetricsCarryTheTablesTypeUnitAndDescription") {
  const auto dir = test::temp_dir("metrics_schema");
  const std::string path = (dir / "r.h5").string();
  REQUIRE(run_experiment(test::small_config(), path, false).status == "ok");
  auto f = h5::open_file_readonly(path);
  for (const auto& c : metric_columns()) {
    CAPTURE(c.name);
    auto d = h5::open_dataset(f.id(), std::string("metrics/") + c.name);
    CHECK(h5::read_attr_string(d.id(), "unit") == c.unit);
    CHECK(h5::read_attr_string(d.id(), "description") == c.description);
    h5::Handle type(H5Dget_type(d.id()), H5Tclose, "H5Dget_type");
    CHECK(H5Tget_class(type.id()) == (c.type() == ColumnType::Int64 ? H5T_INTEGER : H5T_FLOAT));
  }
}
