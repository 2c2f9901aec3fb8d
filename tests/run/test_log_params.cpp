// The [log] table read once into LogParams (src/config/log_params.hpp): its defaults are the
// schema's, every key reaches its field, and the rules about the keys (−1 and "auto") are the
// ones the metrics cadence and the resource estimate use.
#include <doctest/doctest.h>

#include "src/checks/resource_estimate.hpp"
#include "src/config/config.hpp"
#include "src/config/log_params.hpp"
#include "src/run/log_cadence.hpp"

TEST_SUITE_BEGIN("run");

using namespace stale;

TEST_CASE("LogParamsDefaultsAreTheSchemasAndEveryKeyReachesItsField") {
  // the struct's own initialisers (what tests and MetricsOptions users get) equal the schema's
  // defaults: one of the two drifting would make a direct construction differ from a config
  const LogParams d = LogParams::from_config(Config::from_string("", "t.toml")), s{};
  CHECK(d.every == s.every);
  CHECK(d.iterates_every == s.iterates_every);
  CHECK(d.exact_mean == s.exact_mean);
  CHECK(d.L_estimate == s.L_estimate);
  CHECK(d.L_power_steps == s.L_power_steps);
  CHECK(d.divergence == s.divergence);
  CHECK(d.delay_window == s.delay_window);
  CHECK(d.delays == s.delays);
  CHECK(d.out == s.out);
  CHECK(d.progress == s.progress);
  CHECK(d.flush_seconds == s.flush_seconds);

  const LogParams p = LogParams::from_config(Config::from_string(
      "[log]\nevery = 7\niterates_every = 21\nexact_mean = false\nL_estimate = \"true\"\nL_power_steps = 3\n"
      "divergence = 0\ndelay_window = 11\ndelays = false\nout = \"runs/x.h5\"\nprogress = false\nflush_seconds = 0.5\n",
      "t.toml"));
  CHECK(p.every == 7);
  CHECK(p.iterates_every == 21);
  CHECK(p.exact_mean == AutoChoice::Off);
  CHECK(p.L_estimate == AutoChoice::On);
  CHECK(p.L_power_steps == 3);
  CHECK(p.divergence == 0.0);
  CHECK(p.delay_window == 11);
  CHECK_FALSE(p.delays);
  CHECK(p.out == "runs/x.h5");
  CHECK_FALSE(p.progress);
  CHECK(p.flush_seconds == 0.5);
}

TEST_CASE("LogParamsResolveAutoAndTheIterateCadenceAsTheRunDoes") {
  LogParams p;
  p.every = 5;
  CHECK(p.iterate_cadence(4096) == 5);  // every logged row up to d = 4096
  CHECK(p.iterate_cadence(4097) == 80);  // then every 16th
  p.iterates_every = 0;
  CHECK(p.iterate_cadence(10) == 0);
  p.iterates_every = 35;
  CHECK(p.iterate_cadence(1 << 20) == 35);
  // the metrics cadence stores the iterates this rule says: of the 8 rows (k = 0, 5, ..., 30 and K = 33)
  // every one up to d = 4096, else row 0 and the last
  for (const int64_t d : {int64_t{100}, int64_t{5000}}) {
    CAPTURE(d);
    const LogCadence c(5, -1, false, 33, d);
    int64_t stored = 0, row = 0;
    for (const int64_t k : {0, 5, 10, 15, 20, 25, 30, 33}) stored += c.iterate_due(row++, k);
    CHECK(stored == (d <= 4096 ? 8 : 2));
  }
  for (const auto& [choice, cheap, want] : {std::tuple{AutoChoice::Auto, true, true}, {AutoChoice::Auto, false, false},
                                            {AutoChoice::On, false, true}, {AutoChoice::Off, true, false}}) {
    p.exact_mean = p.L_estimate = choice;
    CHECK(p.exact_mean_for(cheap) == want);
    CHECK(p.estimate_L_for(cheap) == want);
  }
}

TEST_CASE("TheResourceEstimateSizesTheIteratesWithTheRunsCadence") {
  // d = 8192 > 4096: at log.iterates_every = -1 one iterate per 16 rows, 16× fewer bytes than at
  // log.iterates_every = log.every
  auto iterate_bytes = [](const std::string& extra) {
    const Config cfg = Config::from_string(
        "[objective]\nname = \"quadratic\"\ndim = 8192\nsamples = 16384\nstages = 4\n[method]\nname = \"sgd\"\n"
        "updates = 64000\n[log]\nevery = 10\n" + extra, "t.toml");
    for (const auto& item : estimate_resources(cfg).disk)
      if (item.what == "iterates") return item.bytes;
    return 0.0;
  };
  const double auto_bytes = iterate_bytes(""), every_row = iterate_bytes("iterates_every = 10\n");
  CHECK(auto_bytes > 0);
  CHECK(every_row / auto_bytes == doctest::Approx(16.0).epsilon(0.01));
  CHECK(iterate_bytes("iterates_every = 0\n") == 0.0);
}
