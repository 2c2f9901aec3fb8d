// Asynchronous 1F1B on the slot clock (docs/theory.md §4–§6): the rules of PipeDream, PACI, 2BW
// and LocalSGD are stated as "a stage runs an op when its dependencies finished in an earlier
// slot, with this preference and this in-flight limit", not as a fixed order. This generator
// plays those rules once with unit costs and records the order each stage chose; that order
// is the schedule. Replayed with unit costs it reproduces the papers' clock exactly; under
// other costs each stage keeps its order, as a runtime executing a per-stage instruction
// stream does.
//
// Work is O(ops): a stage is looked at in slot t + 1 only if it ran an op in slot t or a
// neighbour finished something it may wait for (F on s − 1, B on s + 1); every other stage's
// readiness cannot have changed.
#include <limits>

#include "src/pipeline/schedule_builder.hpp"

namespace stale::detail {

void generate_async_1f1b(Schedule& s, const AsyncRules& rules) {
  const int S = s.stages;
  const int64_t M = s.microbatches;
  STALE_CHECK(s.chunks == 1 && !s.split_backward, "async 1F1B drives one block per device, F and B only");
  STALE_CHECK(static_cast<int>(rules.inflight_limit.size()) == S, "one in-flight limit per stage");
  ProgramBuilder out(s, 2 * M);

  // Counts are committed at the end of a slot, so every decision in slot t sees exactly the
  // ops that finished in slots < t.
  std::vector<int64_t> doneF(S, 0), doneB(S, 0);
  std::vector<int8_t> last(S, -1);  // -1 none, 0 F, 1 B
  std::vector<uint8_t> any_backward(S, 0);
  std::vector<int> active, next_active;
  std::vector<uint8_t> marked(S, 0);
  struct Ran {
    int stage;
    bool backward;
  };
  std::vector<Ran> ran;
  for (int st = 0; st < S; ++st) active.push_back(st);
  const int64_t total = 2 * M * S;
  int64_t emitted = 0;

  auto forward_ready = [&](int st) {
    const int64_t mb = doneF[st];
    if (mb >= M) return false;
    if (doneF[st] - doneB[st] >= rules.inflight_limit[st]) return false;
    if (st > 0 && doneF[st - 1] <= mb) return false;
    if (rules.round > 0) {
      const int64_t round_start = mb / rules.round * rules.round;
      // the replica's previous micro-batch in this round must have left this stage
      if (mb - rules.replicas >= round_start && doneB[st] <= mb - rules.replicas) return false;
      // drain: a round starts only after the previous one's last B on stage 0
      if (st == 0 && mb == round_start && mb > 0 && doneB[0] < mb) return false;
    }
    return true;
  };
  auto backward_ready = [&](int st) {
    const int64_t mb = doneB[st];
    if (mb >= doneF[st]) return false;
    return st == S - 1 || doneB[st + 1] > mb;
  };

  while (emitted < total) {
    STALE_CHECK(!active.empty(), "async 1F1B deadlocked: no stage can run and ops remain");
    ran.clear();
    for (int st : active) {
      const bool f = forward_ready(st), b = backward_ready(st);
      if (!f && !b) continue;
      bool backward = b;
      if (f && b && rules.alternate && any_backward[st]) backward = last[st] == 0;
      ran.push_back({st, backward});
    }
    next_active.clear();
    auto mark = [&](int st) {
      if (st >= 0 && st < S && !marked[st]) {
        marked[st] = 1;
        next_active.push_back(st);
      }
    };
    for (const Ran& r : ran) {
      if (r.backward) {
        out.B(r.stage, r.stage, doneB[r.stage]++);
        any_backward[r.stage] = 1;
        mark(r.stage - 1);
      } else {
        out.F(r.stage, r.stage, doneF[r.stage]++);
        mark(r.stage + 1);
      }
      last[r.stage] = r.backward ? 1 : 0;
      mark(r.stage);
      ++emitted;
    }
    for (int st : next_active) marked[st] = 0;
    active.swap(next_active);
  }
  out.finish();
}

Schedule make_bounded_async_1f1b(const std::string& name, const ScheduleParams& p, bool stash) {
  Schedule s = base_schedule(name, p);
  s.stash = stash;
  const int S = s.stages;
  AsyncRules rules;
  rules.inflight_limit.resize(S);
  for (int st = 0; st < S; ++st) rules.inflight_limit[st] = S - st;
  rules.alternate = false;
  generate_async_1f1b(s, rules);
  flag_every(s, s.accumulation);
  s.inflight_bound = rules.inflight_limit;
  return s;
}

}  // namespace stale::detail
