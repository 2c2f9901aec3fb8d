#pragma once
// Internal to src/pipeline: what the schedule generators share. Not part of the public API.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "src/core/error.hpp"
#include "src/pipeline/schedule.hpp"

namespace stale::detail {

// Fills Schedule::ops device by device. Every generator knows how many ops each device runs,
// so storage is allocated once (a schedule at S = 128, M = 1e5 is 200 MB; no second copy).
class ProgramBuilder {
 public:
  ProgramBuilder(Schedule& s, const std::vector<int64_t>& ops_per_device);
  ProgramBuilder(Schedule& s, int64_t ops_per_device)
      : ProgramBuilder(s, std::vector<int64_t>(s.stages, ops_per_device)) {}
  void push(int device, OpKind kind, int64_t block, int64_t microbatch) {
    STALE_CHECK(cursor_[device] < s_.offsets[device + 1], "a generator emitted more ops than it declared");
    s_.ops[cursor_[device]++] = Op{static_cast<int32_t>(microbatch), static_cast<uint16_t>(block), kind, 0};
  }
  void F(int device, int64_t block, int64_t mb) { push(device, OpKind::Forward, block, mb); }
  void B(int device, int64_t block, int64_t mb) { push(device, OpKind::Backward, block, mb); }
  void W(int device, int64_t block, int64_t mb) { push(device, OpKind::Weight, block, mb); }
  int64_t emitted(int device) const { return cursor_[device] - s_.offsets[device]; }
  // ORs `flag` into the device's last pushed op (op_flag::Overlap on an F of a F&B pair)
  void flag_last(int device, uint8_t flag) {
    STALE_CHECK(cursor_[device] > s_.offsets[device], "flag_last before any op");
    s_.ops[cursor_[device] - 1].flags |= flag;
  }
  // checks that every device got exactly the ops it declared
  void finish() const;

 private:
  Schedule& s_;
  std::vector<int64_t> cursor_;
};

// Micro-batches per round P when a chunked schedule cuts a mini-batch of n into
// max(1, ⌊n / S⌋) rounds (PyTorch's rule for its interleaved schedules); UserError naming
// `schedule` when n is not a whole number of rounds.
int64_t round_size(const std::string& schedule, int S, int64_t n);

// The size of mini-batch g when M micro-batches are cut into groups of m (the last may be short).
inline int64_t group_size(int64_t M, int64_t m, int64_t g) { return std::min(m, M - g * m); }

// Flags an optimizer step on every a-th gradient op of each block and on each block's last one
// (a step per `a` micro-batches without a barrier: PACI, 2BW, PipeDream with a = 1).
void flag_every(Schedule& s, int a);
// Flags an optimizer step on the last gradient op of each block in every mini-batch of m
// micro-batches (flush schedules: all reads of a mini-batch see the same version).
void flag_flush(Schedule& s, int64_t m);
// Sets inflight_bound to what each device's program holds at most: activations from F until
// their W (split-backward schedules whose programs are built op by op: the invariants test
// checks the bound against the simulation)
void count_inflight(Schedule& s);

// Asynchronous 1F1B on the slot clock of docs/theory.md §4: each op takes one slot and may start
// only when its dependencies finished in an earlier slot; a stage runs an op whenever one is
// ready (work-conserving). F and B are each taken in micro-batch order. The resulting order
// of each device is the schedule; the simulator replays it under any cost model.
struct AsyncRules {
  std::vector<int64_t> inflight_limit;  // per stage: F is admitted only while F − B < limit
  // PipeDream: prefer B until the first B, then alternate F and B when both are ready.
  // false: B whenever it is ready (PACI's "backward first").
  bool alternate = true;
  int64_t round = 0;  // LocalSGD: micro-batches per round; round r+1's F waits for the drain
  int replicas = 1;   // LocalSGD: F(s, mb) waits for B(s, mb − replicas) within a round
};
void generate_async_1f1b(Schedule& s, const AsyncRules& rules);

// Asynchronous 1F1B without flush, stage s holding at most S − s micro-batches, backward
// first, a step after every `accumulation` gradients: PACI (stash = false) and PipeDream-2BW
// (stash = true) share this program and differ only in which version B uses.
Schedule make_bounded_async_1f1b(const std::string& name, const ScheduleParams& p, bool stash);

// The fields every generator fills the same way.
Schedule base_schedule(const std::string& name, const ScheduleParams& p);

}  // namespace stale::detail
