// The schedule file (HDF5) and the Chrome trace read back what the simulator produced.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/io/h5.hpp"
#include "src/io/schedule_file.hpp"
#include "src/pipeline/chrome_trace.hpp"
#include "tests/support/pipeline_test_util.hpp"

TEST_SUITE_BEGIN("pipeline");

using namespace stale;

namespace {
std::filesystem::path temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "stale_test_pipeline";
  std::filesystem::create_directories(dir);
  return dir / name;
}
}  // namespace

TEST_CASE("the schedule file holds the op table, per-stage memory and bubbles, and the delay tables") {
  const Schedule s = make_schedule("paci", {4, 20, 2});
  const SimResult r = simulate(s, {}, {.delay_table = true, .delay_pairs = true});
  const auto path = temp_path("paci.h5");
  ScheduleFileOptions o;
  o.costs = CostModel{}.describe();
  write_schedule_file(path.string(), s, r, o);
  CHECK_FALSE(std::filesystem::exists(path.string() + ".partial"));

  h5::Handle f = h5::open_file_readonly(path.string());
  CHECK(h5::read_attr_string(f.id(), "schedule") == "paci");
  CHECK(h5::read_attr_int(f.id(), "stages") == 4);
  h5::Handle g = h5::open_group(f.id(), "schedule");
  CHECK(h5::read_attr_double(g.id(), "makespan") == r.makespan);
  CHECK(h5::read_attr_double(g.id(), "bubble_fraction") == r.bubble_overall);
  CHECK(h5::read_vector_double(g.id(), "start") == r.start);
  CHECK(h5::read_vector_double(g.id(), "end") == r.end);
  const auto kind = h5::read_vector_int(g.id(), "kind");
  const auto mb = h5::read_vector_int(g.id(), "microbatch");
  const auto stage = h5::read_vector_int(g.id(), "stage");
  REQUIRE(static_cast<int64_t>(kind.size()) == s.size());
  for (int64_t i = 0; i < s.size(); ++i) {
    CHECK(kind[i] == static_cast<int64_t>(s.ops[i].kind));
    CHECK(mb[i] == s.ops[i].microbatch);
    CHECK(stage[i] == s.device_of(s.ops[i].block));
  }
  CHECK(h5::read_vector_int(g.id(), "peak_inflight") == r.peak_inflight);
  CHECK(h5::read_vector_int(g.id(), "peak_versions") == r.peak_versions);
  CHECK(h5::read_vector_double(g.id(), "bubble_fraction") == r.bubble);

  hsize_t rows = 0, cols = 0;
  CHECK(h5::read_matrix_int(f.id(), "delays", rows, cols) == r.delay_table);
  CHECK(rows == static_cast<hsize_t>(r.total_updates));
  CHECK(cols == 4);
  CHECK(h5::read_matrix_int(f.id(), "delays_backward", rows, cols) == r.delay_table_backward);
  h5::Handle d = h5::open_group(f.id(), "delay_summary");
  CHECK(h5::read_attr_int(d.id(), "max_delay") == r.delays.max_overall());
  CHECK(h5::read_attr_double(d.id(), "steady_mean_delay") == doctest::Approx(r.steady_delays.mean_overall()));
  CHECK(h5::read_vector_int(d.id(), "max_crossed") == r.max_crossed);
  CHECK(h5::read_matrix_int(d.id(), "max", rows, cols) == r.delays.pair_max);
  CHECK(h5::read_vector_int(d.id(), "steady_max_by_read_block") == r.steady_delays.read_max);
}

TEST_CASE("a stash schedule's file has no backward table, and tables over the size limit are left out") {
  const Schedule s = make_schedule("pipedream", {3, 12});
  const SimResult r = simulate(s, {}, {.delay_table = true});
  const auto path = temp_path("pd.h5");
  ScheduleFileOptions o;
  o.max_table_entries = 10;
  write_schedule_file(path.string(), s, r, o);
  h5::Handle f = h5::open_file_readonly(path.string());
  CHECK_FALSE(h5::exists(f.id(), "delays"));
  CHECK_FALSE(h5::exists(f.id(), "delays_backward"));
  CHECK(h5::exists(f.id(), "delay_summary/max_by_read_block"));
  CHECK_FALSE(h5::exists(f.id(), "delay_summary/max"));  // the pair matrix was not kept
  CHECK(h5::read_attr_string(f.id(), "omitted") == "delays,reads");
}

TEST_CASE("a failed schedule-file write leaves neither the file nor its .partial") {
  const Schedule s = make_schedule("gpipe", {2, 2});
  const SimResult r = simulate(s);
  const std::string path = "/nonexistent-dir-for-stale-tests/x.h5";
  CHECK_THROWS_AS(write_schedule_file(path, s, r), UserError);
  CHECK_FALSE(std::filesystem::exists(path + ".partial"));
}

TEST_CASE("the chrome trace has one complete event per op named F3/B3/W3, on tid = stage, in microseconds") {
  CostModel c;
  c.set("weight=1");
  const Schedule s = make_schedule("zb-h1", {3, 4});
  const SimResult r = simulate(s, c);
  std::ostringstream os;
  write_chrome_trace(os, s, r, 1000.0);
  const std::string j = os.str();
  CHECK(j.find("\"traceEvents\"") != std::string::npos);
  size_t events = 0;
  for (size_t p = j.find("\"ph\":\"X\""); p != std::string::npos; p = j.find("\"ph\":\"X\"", p + 1)) ++events;
  CHECK(events == s.ops.size());
  // the first op of stage 2 is F0 at slot 2: 2000 microseconds, 1000 long
  CHECK(j.find("{\"name\":\"F0\",\"cat\":\"F\",\"ph\":\"X\",\"pid\":0,\"tid\":2,\"ts\":2000.000000,\"dur\":1000.000000") !=
        std::string::npos);
  CHECK(j.find("\"name\":\"W3\"") != std::string::npos);
  const auto path = temp_path("trace.json");
  write_chrome_trace(path.string(), s, r);
  std::ifstream in(path);
  std::stringstream back;
  back << in.rdbuf();
  CHECK(back.str() == j);
}

TEST_SUITE_END();
