#pragma once
// Pipeline schedules as data (docs/design.md "Schedule"; the DeepSpeed / torchgpipe way: a schedule is data that interpreters read).
//
// A schedule is, for each device (pipeline stage), the ordered list of ops it executes: F
// (forward of one micro-batch through one block), B (backward; with `split_backward` only
// the input gradient) and W (weight gradient, zero-bubble schedules). Every consumer reads
// the same list: the simulator times it, the delay extractor numbers its block updates, the
// timeline plot draws it, and methods execute it over an objective.
//
// Dependencies are not stored: they follow from (kind, block, micro-batch) alone and are the
// same for every schedule, which is what lets the simulator stay O(1) per op:
//   F(b, mb) needs F(b−1, mb);  B(b, mb) needs F(b, mb) and B(b+1, mb);  W(b, mb) needs B(b, mb);
// plus program order on each device. Everything a schedule adds (in-flight limits, flushes,
// LocalSGD drains, replica ordering) is expressed through the order of each device's list.
//
// Weight-version semantics are carried by flags and two schedule-wide facts:
//   - an op flagged `Update` ends with an optimizer step of its block (the gradient
//     accumulated since the block's previous step, i.e. `accumulation` micro-batches);
//   - an op flagged `Average` ends with the replica average of its block (LocalSGD);
//   - `stash`: B reads the block version its F read (PipeDream, 2BW); otherwise B reads the
//     version current when B starts (PACI, no stashing);
//   - `replicas` > 1: micro-batch mb trains model copy mb mod replicas (LocalSGD), and
//     versions and update indices are counted per copy.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "src/core/registry.hpp"

namespace stale {

enum class OpKind : uint8_t { Forward = 0, Backward = 1, Weight = 2 };

inline char op_kind_letter(OpKind k) { return k == OpKind::Forward ? 'F' : k == OpKind::Backward ? 'B' : 'W'; }

namespace op_flag {
inline constexpr uint8_t Update = 1;   // optimizer step of the op's block after this op
inline constexpr uint8_t Average = 2;  // replica average of the op's block after this op
// on an F: it runs overlapped with the B (and its W) that follow it on the same device, as one
// F&B chunk of DualPipe (the cost model's `overlap` says how much of the pair is hidden)
inline constexpr uint8_t Overlap = 4;
}  // namespace op_flag

struct Op {
  int32_t microbatch = 0;
  uint16_t block = 0;  // virtual stage; device = block mod stages
  OpKind kind = OpKind::Forward;
  uint8_t flags = 0;

  bool updates() const { return flags & op_flag::Update; }
  bool averages() const { return flags & op_flag::Average; }
  bool overlapped() const { return flags & op_flag::Overlap; }
};
static_assert(sizeof(Op) == 8, "Op is kept at 8 bytes: a schedule at S = 128, M = 1e5 holds 2.6e7 of them");

struct Schedule {
  std::string name;
  int stages = 0;            // devices, the rows of the timeline
  int chunks = 1;            // model chunks per device (interleaved); blocks = stages · chunks
  int64_t microbatches = 0;  // M
  int accumulation = 1;      // micro-batches per optimizer step of a block
  int replicas = 1;          // LocalSGD R: micro-batch mb trains copy mb mod R
  int local_steps = 0;       // LocalSGD H (0 for other schedules)
  bool split_backward = false;  // B is the input gradient only, W the weight gradient
  bool stash = false;           // B reads the version its F read
  // the in-flight bound each device's program guarantees by construction (activations of
  // micro-batch·chunk pairs whose F started and whose last backward op has not finished)
  std::vector<int64_t> inflight_bound;
  std::vector<int64_t> offsets;  // device d runs ops[offsets[d] .. offsets[d + 1])
  std::vector<Op> ops;

  // where the blocks live: looped (chunk c of device d is block c·S + d: interleaved) or V
  // (device d holds blocks d and 2S − 1 − d, so a micro-batch goes down the devices and back
  // up: zb-v, dualpipev; the turn at device S − 1 needs no transfer)
  bool v_shape = false;

  int blocks() const { return stages * chunks; }
  int device_of(int block) const {
    return v_shape ? (block < stages ? block : 2 * stages - 1 - block) : block % stages;
  }
  int replica_of(int64_t mb) const { return replicas == 1 ? 0 : static_cast<int>(mb % replicas); }
  // the op that completes a block's gradient for a micro-batch, and so may carry a step
  OpKind gradient_kind() const { return split_backward ? OpKind::Weight : OpKind::Backward; }
  int ops_per_block_microbatch() const { return split_backward ? 3 : 2; }
  std::span<const Op> program(int device) const {
    return {ops.data() + offsets[device], static_cast<size_t>(offsets[device + 1] - offsets[device])};
  }
  int64_t size() const { return static_cast<int64_t>(ops.size()); }
};

// What a user may set; 0 means "the schedule's default" (see schedule_catalog()).
struct ScheduleParams {
  int stages = 1;
  int64_t microbatches = 1;
  int accumulation = 0;
  int replicas = 0;     // LocalSGD only; default = stages
  int local_steps = 0;  // LocalSGD only; default 1
  int chunks = 0;       // interleaved only (default 2); V-shaped schedules: 2, fixed
  bool operator==(const ScheduleParams&) const = default;  // every field: the plan cache's key
};

// What a schedule is and how to generate it: one row of the schedule registry
// (src/core/registry.hpp), registered from the generator's own file, e.g.
//
//   const bool registered = ScheduleRegistry::add({.name = "gpipe", .summary = "...", .rank = 20,
//                                                  .flush = true, .accumulates = true, ..., .make = make_gpipe});
//
// Every consumer (the planner, the method registry, the CLI, the unread-key rule) asks these
// traits instead of testing names.
struct ScheduleInfo {
  std::string name;
  std::string summary;  // one line: the rule and the paper
  int rank = 0;         // listing order (`stale list`, the README table, the choice lists)
  bool flush = false;           // synchronous: a flush ends every mini-batch of `accumulation` micro-batches
  bool split_backward = false;  // B computes the input gradient only; W the weight gradient
  bool accumulates = false;     // accepts accumulation > 1
  bool replicated = false;      // replicas / local_steps apply (LocalSGD)
  bool chunked = false;         // chunks apply (interleaved)
  // two chunks per device in a V (Schedule::v_shape): chunks is fixed at 2, not a choice
  bool v_shape = false;
  // what accumulation = 0 means: S (one micro-batch per device) when set, else 1
  bool accumulation_defaults_to_stages = false;
  std::string default_accumulation;  // that default in words (for listings)
  // every mini-batch needs at least this many micro-batches per device (dualpipev: 2, one per
  // chunk); when set, it is also the default accumulation (× S)
  int min_microbatches_per_device = 0;
  // runs F&B pairs (an F flagged op_flag::Overlap) whose duration costs.overlap sets (dualpipev)
  bool overlapped_pairs = false;
  // the generator; parameters arrive validated, with every default filled in
  Schedule (*make)(const ScheduleParams&) = nullptr;
};

using ScheduleRegistry = Registry<ScheduleInfo>;

// Every schedule, in the order a listing shows them (by rank).
const std::vector<ScheduleInfo>& schedule_catalog();
std::vector<std::string> schedule_names();

// The registry entry of a schedule; throws UserError listing the valid names.
const ScheduleInfo& schedule_info(const std::string& name);
// `params` with every 0 ("the schedule's default") replaced by its value: the one definition
// of the defaults, used by `stale schedule`, the executor and rpd's schedule replay alike.
ScheduleParams resolve_schedule_params(const std::string& name, const ScheduleParams& params);

// Builds a schedule; throws UserError naming the parameter at fault.
Schedule make_schedule(const std::string& name, const ScheduleParams& params);

// Structural invariants every schedule must satisfy (each block·micro-batch has exactly one
// F, one B and, when split, one W, on the block's device, with W after B; F in micro-batch
// order per block). Throws InternalError describing the first violation.
void check_schedule(const Schedule& s);

// The ops as columns, one row per op in device-program order (s.ops' order): the schedule
// file's /schedule op table and Python's timeline.
struct OpTable {
  std::vector<int64_t> stage, block, kind, microbatch, flags;
};
OpTable op_table(const Schedule& s);

}  // namespace stale
