// The cost model's key=value parsing and the simulator's response to costs.
#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "src/core/error.hpp"
#include "tests/support/pipeline_test_util.hpp"
#include "tests/support/user_error.hpp"

TEST_SUITE_BEGIN("pipeline");

using namespace stale;

using test::error_of;

TEST_CASE("cost settings parse scalars, per-stage lists and noise, and describe() round-trips them") {
  const CostModel c = CostModel::parse({"forward=1,1,2,1", "backward=2", "weight=0.5", "latency=0.1", "jitter=0.2",
                                        "straggler_prob=0.05", "straggler_slowdown=3", "seed=7"});
  CHECK(c.forward(2) == 2.0);
  CHECK(c.forward(3) == 1.0);
  CHECK(c.backward(3) == 2.0);
  CHECK(c.weight(0) == 0.5);
  CHECK(c.latency() == 0.1);
  CHECK(c.random());
  CHECK(c.seed() == 7);
  std::vector<std::string> parts;
  std::string text = c.describe(), item;
  for (char ch : text + " ") {
    if (ch == ' ') parts.push_back(item), item.clear();
    else item += ch;
  }
  CHECK(CostModel::parse(parts).describe() == text);
  CHECK_FALSE(CostModel{}.random());
}

TEST_CASE("bad cost settings are user errors that name the key and what is valid") {
  CHECK(error_of([] { CostModel::parse({"forwrd=1"}); }).find("unknown cost key 'forwrd'; valid keys: forward") !=
        std::string::npos);
  CHECK(error_of([] { CostModel::parse({"forward=0"}); }).find("forward=0: expected a number > 0") != std::string::npos);
  CHECK(error_of([] { CostModel::parse({"backward=1,x,2"}); }).find("'x' is not a number") != std::string::npos);
  CHECK(error_of([] { CostModel::parse({"latency=-1"}); }).find("latency=-1: expected a number >= 0") !=
        std::string::npos);
  CHECK(error_of([] { CostModel::parse({"straggler_prob=2"}); }).find("[0, 1]") != std::string::npos);
  CHECK(error_of([] { CostModel::parse({"straggler_slowdown=0.5"}); }).find(">= 1") != std::string::npos);
  CHECK(error_of([] { CostModel::parse({"seed=-3"}); }).find("non-negative integer") != std::string::npos);
  CHECK(error_of([] { CostModel::parse({"jitter"}); }).find("is not key=value") != std::string::npos);
  CHECK(error_of([] { simulate(make_schedule("gpipe", {3, 4}), CostModel::parse({"forward=1,2"})); })
            .find("forward has 2 values but the schedule has 3 stages") != std::string::npos);
}

TEST_CASE("bad schedule parameters are user errors: unknown names list the valid ones") {
  const std::string unknown = error_of([] { make_schedule("pipedreem", {4, 8}); });
  CHECK(unknown.find("unknown schedule 'pipedreem'; valid: naive, gpipe, 1f1b-flush, pipedream, pipedream-capped, paci, 2bw, "
                     "interleaved, looped-bfs, interleaved-zb, zb-h1, zb-v, dualpipev, localsgd") != std::string::npos);
  CHECK(error_of([] { make_schedule("gpipe", {0, 8}); }).find("stages must be >= 1 (got 0)") != std::string::npos);
  CHECK(error_of([] { make_schedule("gpipe", {2, 0}); }).find("microbatches must be >= 1") != std::string::npos);
  CHECK(error_of([] { make_schedule("pipedream", {4, 8, 2}); }).find("accumulation must be 1") != std::string::npos);
  ScheduleParams p{4, 8};
  p.chunks = 2;
  CHECK(error_of([&] { make_schedule("gpipe", p); }).find("chunks applies only to interleaved") != std::string::npos);
  p = {4, 8};
  p.replicas = 2;
  CHECK(error_of([&] { make_schedule("paci", p); }).find("replicas applies only to localsgd") != std::string::npos);
  // PyTorch's rule: 13 micro-batches at S = 4 are 3 rounds, which 13 is not a multiple of; 6 (one round of 6) is fine
  CHECK(error_of([] { make_schedule("interleaved", {4, 13, 13}); }).find("not a whole number of 3 rounds") != std::string::npos);
  CHECK_NOTHROW(make_schedule("interleaved", {4, 6, 6}));
}

TEST_CASE("random costs with a seed are reproducible, and another seed gives another timeline") {
  for (const auto& name : schedule_names()) {
    const Schedule s = make_schedule(name, {4, 16});
    const auto c = CostModel::parse({"jitter=0.3", "straggler_prob=0.1", "straggler_slowdown=4", "latency=0.05",
                                     "seed=11"});
    const SimResult a = simulate(s, c), b = simulate(s, c);
    CHECK(a.start == b.start);
    CHECK(a.end == b.end);
    CostModel other = c;
    other.set("seed=12");
    CHECK(simulate(s, other).end != a.end);
  }
}

TEST_CASE("doubling every cost doubles the timeline and the makespan and leaves the delay tables unchanged") {
  Rng rng(5, Stream::StageTime, 1);
  const SimOptions opt{.delay_table = true};
  for (const auto& name : schedule_names())
    for (int t = 0; t < 4; ++t) {
      ScheduleParams p{2 + static_cast<int>(rng.uniform_int(5)), 24};
      if (schedule_info(name).chunked) p.microbatches = p.stages * 6;
      if (schedule_info(name).min_microbatches_per_device > 0) p.accumulation = 24;  // one mini-batch, >= 2S (dualpipev)
      const Schedule s = make_schedule(name, p);
      const CostModel c = test::random_costs(rng, p.stages);
      const SimResult a = simulate(s, c, opt), b = simulate(s, c.scaled(2.0), opt);
      CHECK(b.makespan == 2.0 * a.makespan);
      for (size_t i = 0; i < a.start.size(); ++i) REQUIRE(b.start[i] == 2.0 * a.start[i]);
      CHECK(b.delay_table == a.delay_table);
      CHECK(b.delay_table_backward == a.delay_table_backward);
      CHECK(b.bubble_overall == doctest::Approx(a.bubble_overall).epsilon(1e-12));
    }
}

TEST_CASE("latency delays only transfers between devices: each pipeline trip of naive pays it 2(S - 1) times") {
  const SimResult r = simulate(make_schedule("naive", {4, 3}), CostModel::parse({"latency=0.25"}));
  CHECK(r.makespan == doctest::Approx(3 * (8 + 6 * 0.25)));
}

TEST_CASE("a straggling stage stretches the steady state to its own pace") {
  // stage 2 takes twice as long: PipeDream's steady state runs at one F+B per 4 units
  const SimResult r = simulate(make_schedule("pipedream", {4, 400}), CostModel::parse({"forward=1,1,2,1", "backward=1,1,2,1"}));
  CHECK(r.makespan == doctest::Approx(400 * 4).epsilon(0.02));
  CHECK(r.bubble[2] < 0.02);
}

TEST_CASE("options that drop tables keep the summary identical") {
  const Schedule s = make_schedule("paci", {6, 60, 2});
  const SimResult full = simulate(s, {}, {.delay_table = true, .delay_pairs = true});
  const SimResult lean = simulate(s, {}, {.timeline = false, .reads = false, .updates = false});
  CHECK(lean.start.empty());
  CHECK(lean.forward_read.empty());
  CHECK(lean.updates.empty());
  CHECK(lean.delays.pair_max.empty());
  CHECK(lean.makespan == full.makespan);
  for (auto [a, b] : {std::pair{&lean.delays, &full.delays}, std::pair{&lean.steady_delays, &full.steady_delays}}) {
    CHECK(a->count == b->count);
    CHECK(a->update_max == b->update_max);
    CHECK(a->update_sum == b->update_sum);
    CHECK(a->read_max == b->read_max);
    CHECK(a->read_sum == b->read_sum);
  }
  CHECK(lean.peak_inflight == full.peak_inflight);
  CHECK(lean.max_crossed == full.max_crossed);
}

TEST_SUITE_END();
