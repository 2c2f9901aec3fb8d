// PipeDream: asynchronous 1F1B with weight stashing (Narayanan et al., SOSP 2019), with the
// exact rules of docs/theory.md §4 [RPD]:
//  - every op takes one slot and may start only when its dependencies finished in an earlier
//    slot; a stage runs an op whenever one is ready;
//  - at most S micro-batches in flight: stage 0 admits a new one only while fewer than S are
//    active; no other stage is limited, so in warm-up an intermediate stage may hold up to S
//    (for S = 8 the per-stage peaks are 8, 8, 8, 8, 7, 5, 3, 1), unlike Megatron's S − s;
//  - a stage prefers B until its first B, then alternates F and B when both are ready;
//  - no flush: every B updates its block at once (one block update per backward pass);
//  - weight stashing: B on stage s uses the block version F on stage s used.
// With these rules the worst steady-state delay is S² − S/2 for even S (docs/theory.md §4).
#include <limits>

#include "src/pipeline/schedule_builder.hpp"

namespace stale::detail {

namespace {

Schedule make_pipedream(const ScheduleParams& p) {
  Schedule s = base_schedule("pipedream", p);
  s.stash = true;
  const int S = s.stages;
  AsyncRules rules;
  rules.inflight_limit.assign(S, std::numeric_limits<int64_t>::max());
  rules.inflight_limit[0] = S;
  rules.alternate = true;
  generate_async_1f1b(s, rules);
  flag_every(s, 1);
  // only stage 0 is limited, but no stage can hold more than the S the pipeline admits
  s.inflight_bound.assign(S, S);
  return s;
}

const bool registered = ScheduleRegistry::add({.name = "pipedream",
    .summary = "asynchronous 1F1B, at most S in flight, weight stashing, step per B (docs/theory.md 4)",
    .rank = 40, .default_accumulation = "1", .make = make_pipedream});

}  // namespace

}  // namespace stale::detail
