// The Nesterov update rule (optimizers/nesterov_rule.cpp), added as one file: two steps against
// the rule worked by hand, β = 0 is SGD bit for bit over a whole stale run, and the registry
// carries what every other file asks of it (method.optimizer's choices, the key it reads, its
// state for the resource estimate).
#include <doctest/doctest.h>

#include <cstring>

#include "optimizers/update_rule.hpp"
#include "src/checks/config_rules.hpp"
#include "src/run/run_in_memory.hpp"
#include "tests/support/rule_steps.hpp"
#include "tests/support/test_util.hpp"

using namespace stale;

TEST_SUITE("optimizers") {

TEST_CASE("TwoNesterovStepsFollowTheLookAheadRule") {
  // β = 0.5, γ = 0.1, w0 = (1, 1); g1 = (1, −2): v1 = (1, −2), step g1 + β v1 = (1.5, −3),
  // w1 = (0.85, 1.3); g2 = (3, 0): v2 = (3.5, −1), step (4.75, −0.5), w2 = (0.375, 1.35)
  const auto s = test::two_rule_steps("nesterov", 0.5, {1, 1}, {1, -2}, {3, 0}, 0.1);
  CHECK(s.w1(0) == doctest::Approx(0.85).epsilon(1e-15));
  CHECK(s.w1(1) == doctest::Approx(1.3).epsilon(1e-15));
  CHECK(s.w2(0) == doctest::Approx(0.375).epsilon(1e-15));
  CHECK(s.w2(1) == doctest::Approx(1.35).epsilon(1e-15));
  CHECK(s.delta2(1) == doctest::Approx(0.05).epsilon(1e-15));
}

TEST_CASE("NesterovWithZeroMomentumIsSgdBitForBitOverAStaleRun") {
  auto run = [](const std::string& rule) {
    Config c = test::small_config("[delay]\nname = \"uniform\"\nmax = 6\n");
    c.set("method.optimizer", ConfigValue(rule), "test");
    if (rule == "nesterov") c.set("method.momentum", ConfigValue(0.0), "test");
    return run_in_memory(c);
  };
  const auto nesterov = run("nesterov"), sgd = run("sgd");
  REQUIRE(nesterov.result.status == "ok");
  REQUIRE(nesterov.result.final_w.size() == sgd.result.final_w.size());
  CHECK(std::memcmp(nesterov.result.final_w.data(), sgd.result.final_w.data(),
                    sizeof(double) * sgd.result.final_w.size()) == 0);
}

TEST_CASE("TheRegistryCarriesNesterovsChoiceKeyAndState") {
  const UpdateRuleEntry& e = update_rule_entry("nesterov");
  CHECK(e.keys == std::vector<std::string>{"method.momentum"});
  CHECK(e.state_per_coordinate == 1.0);
  Config c = test::small_config();
  c.set("method.optimizer", ConfigValue(std::string("nesterov")), "test");
  c.set("method.momentum", ConfigValue(0.8), "test");
  CHECK(unread_keys(c).empty());  // method.momentum is read: nesterov's entry says so
  c.set("method.optimizer", ConfigValue(std::string("sgd")), "test");
  const auto unread = unread_keys(c);
  REQUIRE(unread.size() == 1);
  CHECK(unread[0].first == "method.momentum");
  CHECK(unread[0].second.find("method.optimizer = nesterov") != std::string::npos);
  CHECK_THROWS_WITH_AS(update_rule_entry("nadam"), doctest::Contains("nesterov"), UserError);
}

}  // TEST_SUITE
