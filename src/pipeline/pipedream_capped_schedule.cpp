// PipeDream with real PipeDream's per-stage in-flight caps (Narayanan et al., SOSP 2019, §3.3:
// in 1F1B's start-up stage s runs S − s forwards before its first backward and then keeps that
// many in flight; Megatron's 1F1B memory, the caps of `paci` and `2bw`).
// Everything else is `pipedream` (pipedream_schedule.cpp, docs/theory.md §4 [RPD]):
//  - every op takes one slot and may start only when its dependencies finished in an earlier
//    slot; a stage runs an op whenever one is ready;
//  - a stage prefers B until its first B, then alternates F and B when both are ready;
//  - no flush: every B updates its block at once; weight stashing: B on stage s uses the block
//    version F on stage s used.
// The one difference: stage s (0-based) admits an F only while fewer than S − s of its
// micro-batches are in flight (F done, B not), not only stage 0 with S. The RPD authors' rule
// lets an intermediate stage hold up to S in warm-up (S = 8: 8, 8, 8, 8, 7, 5, 3, 1 in flight,
// 8, 7, 6, 5, 4, 5, 3, 1 weight versions); here stage s holds at most S − s and stores at most
// S − s versions, monotone in s once M ≥ 2S − 3. In steady state the authors' rule already keeps S − s on stage
// s, so the steady-state delays are pipedream's (S² − S/2 for even S) and so is the whole run's
// largest, 5S²/4 − S for even S (micro-batch S − 1 updating block 0: stage 0 holds S under both
// rules); only warm-up and drain reads differ (results/pipedream_delays.md).
// On the slot clock the program equals `2bw`'s and `paci`'s at a = 1: with caps S − s,
// "alternate F and B" and "backward first" pick the same ops (tests/pipeline). It is kept as
// its own entry because it is PipeDream (stashing, a step per B) under real PipeDream's rule.
#include "src/pipeline/schedule_builder.hpp"

namespace stale::detail {

namespace {

Schedule make_pipedream_capped(const ScheduleParams& p) {
  Schedule s = base_schedule("pipedream-capped", p);
  s.stash = true;
  const int S = s.stages;
  AsyncRules rules;
  rules.inflight_limit.resize(S);
  for (int st = 0; st < S; ++st) rules.inflight_limit[st] = S - st;
  rules.alternate = true;
  generate_async_1f1b(s, rules);
  flag_every(s, 1);
  s.inflight_bound = rules.inflight_limit;
  return s;
}

const bool registered = ScheduleRegistry::add({.name = "pipedream-capped",
    .summary = "pipedream with real PipeDream's caps: stage s holds at most S-s in flight, stashing, step per B",
    .rank = 45, .default_accumulation = "1", .make = make_pipedream_capped});

}  // namespace

}  // namespace stale::detail
