// The logged-rows aliasing rule (src/run/log_aliasing.hpp, issue 51 item 4): PipeDream's cyclic
// update order at S = 8 with log.every = 16 puts (nearly) every logged row on one block, and the
// rule says so and names a cadence that spreads them; a coprime cadence passes.
#include <doctest/doctest.h>

#include "src/pipeline/schedule.hpp"
#include "src/pipeline/simulator.hpp"
#include "src/run/log_aliasing.hpp"

TEST_SUITE_BEGIN("run");

using namespace stale;

namespace {
std::vector<Update> pipedream_updates(int S, int M) {
  ScheduleParams p;
  p.stages = S;
  p.microbatches = M;
  const Schedule s = make_schedule("pipedream", p);
  return simulate(s).updates;
}
}  // namespace

TEST_CASE("LoggedRowsThatAllShowOneBlockAreWarnedAndACoprimeCadenceIsNot") {
  const auto u = pipedream_updates(8, 200);
  const int64_t K = static_cast<int64_t>(u.size());
  const LoggedBlocks aliased = logged_blocks(u, 16, K);
  CHECK(aliased.rows == K / 16);
  CHECK(2 * aliased.top_rows > aliased.rows);  // the observation: one block in almost every row
  const std::string w = log_aliasing_warning(u, 16, K, 8);
  CHECK(w.find("log.every = 16: ") == 0);
  CHECK(w.find("describe that block only") != std::string::npos);
  CHECK(w.find("log.every = 17 spreads them") != std::string::npos);
  const LoggedBlocks spread = logged_blocks(u, 17, K);
  CHECK(8 * spread.top_rows <= 2 * spread.rows);  // about 1/8 each
  CHECK(log_aliasing_warning(u, 17, K, 8).empty());
  CHECK(log_aliasing_warning(u, 16, K, 1).empty());  // one block: nothing to alias
}
