// Stage-distributed LocalSGD, the comparison in [RPD] (docs/theory.md §6).
//  - R logical full-model replicas share one pipeline: micro-batch mb belongs to replica
//    mb mod R; each replica takes H local SGD steps (one per micro-batch) per round, so a
//    round is R·H micro-batches;
//  - no staleness: a replica's next F on stage s waits until that replica's previous B on s
//    is done, so every F reads its replica's newest block;
//  - rounds drain: the next round's forwards wait until the previous round's last
//    micro-batch finished its B on stage 0; then every block is averaged over the replicas
//    (instantaneous; flagged on each stage's last B of the round);
//  - otherwise PipeDream's rules: at most S in flight, B first until the first B, then
//    alternate. The memory of R model copies is not charged.
// R = 1, H = 1 is the naive synchronous pipeline.
#include <limits>

#include "src/pipeline/schedule_builder.hpp"

namespace stale::detail {

namespace {

Schedule make_localsgd(const ScheduleParams& p) {
  Schedule s = base_schedule("localsgd", p);
  s.stash = false;
  s.replicas = p.replicas;
  s.local_steps = p.local_steps;
  s.accumulation = 1;
  const int S = s.stages;
  AsyncRules rules;
  rules.inflight_limit.assign(S, std::numeric_limits<int64_t>::max());
  rules.inflight_limit[0] = S;
  rules.alternate = true;
  rules.replicas = s.replicas;
  rules.round = static_cast<int64_t>(s.replicas) * s.local_steps;
  generate_async_1f1b(s, rules);
  flag_every(s, 1);
  // each stage's B are in micro-batch order, so the round's last micro-batch has its last B
  for (Op& op : s.ops)
    if (op.kind == OpKind::Backward && ((op.microbatch + 1) % rules.round == 0 || op.microbatch + 1 == s.microbatches))
      op.flags |= op_flag::Average;
  // each replica has at most one micro-batch in flight
  s.inflight_bound.assign(S, std::min<int64_t>(S, s.replicas));
  return s;
}

const bool registered = ScheduleRegistry::add({.name = "localsgd",
    .summary = "R replicas interleaved in one pipeline, H local steps, drain + average per round (docs/theory.md 6)",
    .rank = 90, .replicated = true, .default_accumulation = "1", .make = make_localsgd});

}  // namespace

}  // namespace stale::detail
