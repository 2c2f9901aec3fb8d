// Coupled-cost runs end to end (issue 16): the [costs] keys a setting does not read are
// errors naming what reads them; a coupled run writes /delay_moments, its measured δ in
// /theory and in the bound, and its own timeline in /schedule.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include "src/core/error.hpp"
#include "src/io/h5.hpp"
#include "src/checks/config_rules.hpp"
#include "src/run/runner.hpp"
#include "tests/support/test_util.hpp"

using namespace stale;

namespace {
std::string refusal(Config c, const std::vector<std::string>& overrides) {
  for (const auto& o : overrides) c.apply_override(o);
  try {
    check_unread_keys(c);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_SUITE("run") {

TEST_CASE("CostKeysASettingDoesNotReadAreErrorsNamingWhatReadsThem") {
  const Config pd = test::small_config();
  auto has = [](const std::string& msg, const std::string& a, const std::string& b) {
    return msg.find(a) != std::string::npos && msg.find(b) != std::string::npos;
  };
  CHECK(has(refusal(pd, {"method.name=pipedream", "costs.coupling_scale=2"}), "costs.coupling_scale", "costs.coupling = data"));
  CHECK(has(refusal(pd, {"method.name=pipedream", "costs.pareto_alpha=1.5"}), "costs.pareto_alpha", "straggler_prob > 0"));
  CHECK(has(refusal(pd, {"method.name=pipedream", "costs.straggler_prob=0.1", "costs.pareto_alpha=1.5",
                         "costs.straggler_slowdown=3"}),
            "costs.straggler_slowdown", "pareto_alpha = 0"));
  // rpd replays a schedule simulated before the run: its durations cannot follow the run
  CHECK(has(refusal(pd, {"delay.name=schedule", "costs.coupling=gradient"}), "costs.coupling", "schedule-driven"));
  CHECK(refusal(pd, {"method.name=paci", "costs.coupling=gradient", "costs.coupling_scale=2"}).empty());
  CHECK(refusal(pd, {"method.name=pipedream", "costs.straggler_prob=0.1", "costs.pareto_alpha=1.5"}).empty());
  CHECK(refusal(pd, {"delay.name=schedule", "costs.straggler_prob=0.1", "costs.pareto_alpha=2"}).empty());
}

TEST_CASE("ACoupledRunWritesItsDelayMomentsItsMeasuredDeltaAndItsOwnTimeline") {
  const std::string dir = test::temp_dir("coupled_run").string();
  Config c = test::small_config();
  c.apply_override("method.name=pipedream");
  c.apply_override("costs.coupling=gradient");
  c.apply_override("costs.coupling_scale=3");
  c.apply_override("log.delay_window=40");
  const RunResult r = run_experiment(c, dir + "/g.h5", false);
  Config fixed = test::small_config();
  fixed.apply_override("method.name=pipedream");
  fixed.apply_override("log.delay_window=40");
  const RunResult f = run_experiment(fixed, dir + "/f.h5", false);
  REQUIRE(r.status == "ok");
  auto file = h5::open_file_readonly(dir + "/g.h5");
  auto g = h5::open_group(file.id(), "delay_moments");
  const auto k_end = h5::read_vector_int(g.id(), "k_end");
  const auto running = h5::read_vector_int(g.id(), "running_max");
  REQUIRE(k_end.size() == 10);  // 400 updates in windows of 40
  CHECK(k_end.back() == 400);
  hsize_t rows = 0, cols = 0;
  const auto mx = h5::read_matrix_int(g.id(), "max", rows, cols);
  CHECK(rows == 10);
  CHECK(cols == 5);
  CHECK(running.back() == *std::max_element(mx.begin(), mx.end()));
  CHECK(std::is_sorted(running.begin(), running.end()));
  auto theory = h5::open_group(file.id(), "theory");
  CHECK(h5::read_attr_double(theory.id(), "delta") == static_cast<double>(running.back()));
  CHECK(h5::read_attr_string(theory.id(), "delay_model") == "coupled:pipedream:gradient");
  // the last bound was evaluated with the measured δ: its stale term is γ²L²δ²G²
  auto metrics = h5::open_group(file.id(), "metrics");
  const auto stale = h5::read_vector_double(metrics.id(), "bound_stale");
  const auto G = h5::read_vector_double(metrics.id(), "G");
  const double L = h5::read_attr_double(theory.id(), "L"), lr = 0.005, d = static_cast<double>(running.back());
  CHECK(stale.back() == doctest::Approx(lr * lr * L * L * d * d * G.back() * G.back()).epsilon(1e-12));
  // /schedule holds the coupled timeline, not the fixed-cost one
  auto sched = h5::open_group(file.id(), "schedule");
  auto fsched = h5::open_group(h5::open_file_readonly(dir + "/f.h5").id(), "schedule");
  CHECK(h5::read_vector_double(sched.id(), "end") != h5::read_vector_double(fsched.id(), "end"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("ACoupledRunRefusesATimeBudgetBeforeAnyFileExists") {
  const std::string dir = test::temp_dir("coupled_budget").string();
  Config c = test::small_config();
  c.apply_override("method.name=pipedream");
  c.apply_override("costs.coupling=gradient");
  c.apply_override("method.time_budget=100");
  CHECK_THROWS_WITH_AS(run_experiment(c, dir + "/b.h5", false), doctest::Contains("method.time_budget"), UserError);
  CHECK_FALSE(std::filesystem::exists(dir + "/b.h5.partial"));
  CHECK_FALSE(std::filesystem::exists(dir + "/b.h5"));
  std::filesystem::remove_all(dir);
}

}  // TEST_SUITE
