// One plan per run: the run length K, the delay bound and the schedule are decided once, and
// every consumer (the method's loop, the metrics, the run file) reads them from the plan.
// Regression tests for the cases where they used to drift apart.
#include <doctest/doctest.h>

#include "objectives/objective_factory.hpp"
#include "optimizers/schedule_executor.hpp"
#include "src/backend/backend.hpp"
#include "src/core/error.hpp"
#include "src/io/h5.hpp"
#include "src/run/runner.hpp"
#include "tests/support/test_util.hpp"

using namespace stale;

TEST_SUITE("run") {

TEST_CASE("UnderATimeBudgetTheFinalIterateIsTheLastIteratesRow") {
  Config c = test::small_config();
  c.apply_override("method.name=pipedream");
  c.apply_override("method.time_budget=77");
  c.apply_override("log.every=100");
  const auto dir = test::temp_dir("plan-budget");
  const RunResult r = run_experiment(c, (dir / "run.h5").string(), false);
  auto f = h5::open_file_readonly(r.path);
  const auto ks = h5::read_vector_int(f.id(), "iterates_k");
  const auto mk = h5::read_vector_int(f.id(), "metrics/k");
  auto theory = h5::open_group(f.id(), "theory");
  REQUIRE(!ks.empty());
  CHECK(r.updates > 100);  // the budget fits more updates than one log interval
  CHECK(ks.back() == r.updates);
  CHECK(mk.back() == r.updates);
  CHECK(h5::read_attr_int(theory.id(), "K_planned") == r.updates);
  hsize_t rows = 0, cols = 0;
  const auto last = h5::read_matrix_double(f.id(), "iterates", rows, cols);
  REQUIRE(static_cast<Index>(cols) == r.final_w.size());
  for (hsize_t i = 0; i < cols; ++i) CHECK(last[(rows - 1) * cols + i] == r.final_w[static_cast<Index>(i)]);
}

TEST_CASE("ASchedulePlanThatCannotReachKIsAConfigErrorNamingMicrobatches") {
  Config c = test::small_config();
  c.apply_override("method.name=pipedream");
  c.apply_override("method.microbatches=3");
  const auto dir = test::temp_dir("plan-truncated");
  try {
    run_experiment(c, (dir / "run.h5").string(), false);
    FAIL("a truncated plan must be refused");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()).find("method.microbatches") != std::string::npos);
  }
  CHECK(!std::filesystem::exists(dir / "run.h5"));
  CHECK(!std::filesystem::exists(dir / "run.h5.partial"));
}

TEST_CASE("SgdRoundsKUpToWholeStepsAndTheRunFileSaysSo") {
  Config c = test::small_config();  // S = 5
  c.apply_override("method.name=sgd");
  c.apply_override("method.updates=7");
  const auto dir = test::temp_dir("plan-sgd");
  const RunResult r = run_experiment(c, (dir / "run.h5").string(), false);
  CHECK(r.updates == 10);
  auto f = h5::open_file_readonly(r.path);
  auto theory = h5::open_group(f.id(), "theory");
  CHECK(h5::read_attr_int(theory.id(), "K_planned") == 10);
  CHECK(h5::read_attr_string(theory.id(), "K_note").find("rounded up") != std::string::npos);
  CHECK(h5::read_vector_int(f.id(), "metrics/k").back() == 10);
}

TEST_CASE("AScheduleRunRunsExactlyTheUpdatesAsked") {
  for (const char* m : {"pipedream", "paci", "gpipe", "localsgd", "zb-h1"}) {
    CAPTURE(m);
    Config c = test::small_config();
    c.apply_override(std::string("method.name=") + m);
    c.apply_override("method.updates=333");
    const auto dir = test::temp_dir("plan-exact");
    const RunResult r = run_experiment(c, (dir / "run.h5").string(), false);
    CHECK(r.updates == 333);
  }
}

TEST_CASE("TheBoundSaysWhichStepSizeItUsed") {
  Config c = test::small_config();
  c.apply_override("method.lr_schedule=cosine");
  c.apply_override("method.warmup=10");
  const auto dir = test::temp_dir("plan-lr");
  const RunResult r = run_experiment(c, (dir / "run.h5").string(), false);
  auto f = h5::open_file_readonly(r.path);
  auto theory = h5::open_group(f.id(), "theory");
  CHECK(h5::read_attr_string(theory.id(), "lr_note").find("peak of the cosine schedule") != std::string::npos);
}

TEST_CASE("StaleScheduleAndAScheduleMethodWithTheSameKeysSimulateTheSameSchedule") {
  // `stale schedule NAME --stages S --microbatches M` builds make_schedule(NAME, {S, M}) with
  // every other parameter at the schedule's default; a run with method.name = NAME and the
  // same keys must plan that very schedule (one definition of every default)
  for (const char* name : {"gpipe", "1f1b-flush", "zb-h1", "2bw", "paci", "pipedream", "interleaved", "localsgd"}) {
    CAPTURE(name);
    Config c = test::small_config();
    c.apply_override("objective.stages=4");
    c.apply_override(std::string("method.name=") + name);
    c.apply_override("method.microbatches=16");
    c.apply_override("method.updates=1");
    auto f = make_objective(c, BackendKind::Cpu);
    auto m = make_method(c, *f);
    const RunPlan plan = m->plan(*f);
    const bool chunked = std::string(name) == "interleaved";
    ScheduleParams p{chunked ? 2 : 4, 16};
    const Schedule cli = make_schedule(name, p);
    REQUIRE(plan.schedule);
    CHECK(plan.schedule->accumulation == cli.accumulation);
    CHECK(plan.schedule->replicas == cli.replicas);
    CHECK(plan.schedule->chunks == cli.chunks);
    REQUIRE(plan.schedule->ops.size() == cli.ops.size());
    bool same = true;
    for (size_t i = 0; i < cli.ops.size(); ++i)
      same &= plan.schedule->ops[i].microbatch == cli.ops[i].microbatch && plan.schedule->ops[i].block == cli.ops[i].block &&
              plan.schedule->ops[i].kind == cli.ops[i].kind && plan.schedule->ops[i].flags == cli.ops[i].flags;
    CHECK(same);
  }
}

}  // TEST_SUITE
