// Nothing is silently ignored: a key that the chosen objective, generator, method, schedule,
// delay model or update rule does not read is an error naming it; every committed experiment
// config and every grid point of every committed sweep passes the rule.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "src/core/error.hpp"
#include "src/checks/config_rules.hpp"
#include "src/sweep/sweep.hpp"
#include "tests/support/test_util.hpp"

using namespace stale;
namespace fs = std::filesystem;

namespace {
void check_refused(const std::string& overrides_joined, const std::string& key, const std::string& applies_to) {
  Config c = test::small_config();
  std::string rest = overrides_joined;
  while (!rest.empty()) {
    const auto sp = rest.find(' ');
    c.apply_override(rest.substr(0, sp));
    rest = sp == std::string::npos ? "" : rest.substr(sp + 1);
  }
  try {
    check_unread_keys(c);
    FAIL("accepted: " << overrides_joined);
  } catch (const UserError& e) {
    const std::string msg = e.what();
    CHECK(msg.find(key) != std::string::npos);
    CHECK(msg.find(applies_to) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }
}
}  // namespace

TEST_SUITE("run") {

TEST_CASE("AKeyTheRunDoesNotReadIsAnErrorNamingItAndWhatReadsIt") {
  // the cases a new user met: data for a generator that reads none, a delay bound for the zero
  // model, replicas for rpd
  check_refused("objective.data=some.csv", "objective.data", "libsvm");
  check_refused("delay.max=60", "delay.max", "delay.name = constant");
  check_refused("method.replicas=4", "method.replicas", "localsgd");
  check_refused("method.momentum=0.5", "method.momentum", "method.optimizer = momentum");
  check_refused("method.beta2=0.95", "method.beta2", "adamw");
  check_refused("method.lr_min=0.001", "method.lr_min", "cosine");
  check_refused("method.accumulation=4 method.name=pipedream", "method.accumulation", "paci");
  check_refused("method.chunks=2 method.name=gpipe", "method.chunks", "interleaved");
  check_refused("costs.latency=0.5", "costs.latency", "schedule-driven");
  check_refused("objective.mu=0.1", "objective.mu", "nesterov");
  check_refused("objective.embedding=32", "objective.embedding", "charlm");
  check_refused("method.prediction=false method.name=pipedream", "method.prediction", "pipemare");
}

TEST_CASE("SwitchingTheMethodNamesEveryLeftoverKeyOnceWithTheTrueReasonAndTheWaysOut") {
  // the quickstart's rpd config switched to pipedream and to bcd: the delay model's keys are
  // left over, all of them in one message, with the reason (no delay model read) and the fixes
  for (const std::string method : {"pipedream", "bcd"}) {
    Config c = test::small_config();
    c.apply_override("delay.name=uniform");
    c.apply_override("delay.max=60");
    c.apply_override("method.optimizer=momentum");
    c.apply_override("method.momentum=0.5");
    c.apply_override("method.name=" + method);
    const auto unread = unread_keys(c);
    REQUIRE(unread.size() == 2);  // the delay model and its bound
    for (const auto& [key, why] : unread) {
      CHECK((key == "delay.name" || key == "delay.max"));
      CHECK(why.find("method.name = " + method + " reads no delay model") != std::string::npos);
      CHECK(why.find(method == "bcd" ? "every block fresh" : "from its schedule") != std::string::npos);
    }
    c.apply_override("method.lr_min=0.001");  // a third leftover: all named in one line
    try {
      check_unread_keys(c);
      FAIL("accepted");
    } catch (const UserError& e) {
      const std::string msg = e.what();
      CHECK(msg.find("3 keys are set but not read") != std::string::npos);
      CHECK(msg.find("delay.max — method.name = " + method) != std::string::npos);
      CHECK(msg.find("method.lr_min — by this run") != std::string::npos);
      CHECK(msg.find("~KEY") != std::string::npos);
      CHECK(msg.find("--drop-unread") != std::string::npos);
      CHECK(msg.find('\n') == std::string::npos);
    }
    // the two ways out: unset each key, or drop all that are not read
    Config unset = c;
    for (const char* key : {"~delay.name", "~delay.max", "~method.lr_min"}) unset.apply_override(key);
    CHECK_NOTHROW(check_unread_keys(unset));
    CHECK(!unset.is_set("delay.max"));
    CHECK(unset.get_int("delay.max") == Config{}.get_int("delay.max"));
    Config dropped = c;
    CHECK(drop_unread_keys(dropped).size() == 3);
    CHECK_NOTHROW(check_unread_keys(dropped));
    CHECK(dropped.get_float("method.momentum") == 0.5);  // what the run reads stays
    CHECK(dropped.to_toml() == unset.to_toml());
  }
  // ~ of a key that does not exist is the unknown-key error, not a silent no-op
  Config c = test::small_config();
  CHECK_THROWS_AS(c.apply_override("~delay.maxx"), UserError);
}

TEST_CASE("KeysTheRunReadsOrThatStayAtTheirDefaultPass") {
  Config c = test::small_config();
  c.apply_override("delay.name=uniform");
  c.apply_override("delay.max=14");
  c.apply_override("method.optimizer=momentum");
  c.apply_override("method.momentum=0.5");
  c.apply_override("method.replicas=0");  // the default: changes nothing
  CHECK_NOTHROW(check_unread_keys(c));
  Config p = test::small_config();
  p.apply_override("method.name=paci");
  p.apply_override("method.accumulation=4");
  p.apply_override("costs.latency=0.5");
  CHECK_NOTHROW(check_unread_keys(p));
  Config r = test::small_config();  // rpd over PipeDream's clock reads the schedule's keys
  r.apply_override("method.time_budget=100");
  r.apply_override("costs.backward=2.0");
  CHECK_NOTHROW(check_unread_keys(r));
}

TEST_CASE("EveryCommittedExperimentAndSweepPassesTheRule") {
  int configs = 0, sweeps = 0;
  for (const auto& e : fs::directory_iterator(fs::path(STALE_SOURCE_DIR) / "experiments")) {
    if (e.path().extension() != ".toml") continue;
    CAPTURE(e.path());
    std::ifstream in(e.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find("[output]") != std::string::npos) continue;  // a script's settings, not a run
    if (text.find("\nbase = ") != std::string::npos || text.rfind("base = ", 0) == 0) {
      CHECK_NOTHROW(load_sweep(e.path().string()));  // checks every grid point
      ++sweeps;
    } else {
      CHECK_NOTHROW(check_unread_keys(Config::from_file(e.path().string())));
      ++configs;
    }
  }
  CHECK(configs >= 5);
  CHECK(sweeps >= 10);
}

}  // TEST_SUITE
