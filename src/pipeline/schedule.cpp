// Schedule lookup in the registry (each schedule registers itself from its generator's file),
// parameter checks, and the helpers the generators share.
#include "src/pipeline/schedule.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

#include "src/core/error.hpp"
#include "src/pipeline/schedule_builder.hpp"

namespace stale {

namespace {

[[noreturn]] void bad(const std::string& schedule, const std::string& msg) {
  throw UserError("schedule " + schedule + ": " + msg);
}

const ScheduleInfo& entry(const std::string& name) {
  if (const ScheduleInfo* e = ScheduleRegistry::find(name)) return *e;
  throw UserError("unknown schedule '" + name + "'; valid: " + ScheduleRegistry::names_text());
}

// the schedules that take chunks, from their registry traits
std::string chunked_names() {
  std::string out;
  for (const ScheduleInfo& e : ScheduleRegistry::entries())
    if (e.chunked) out += (out.empty() ? "" : ", ") + e.name;
  return out;
}

// Fills defaults and rejects parameters that do not apply, so that a typo'd option is never
// silently ignored.
ScheduleParams resolve(const ScheduleInfo& info, ScheduleParams p) {
  const std::string& name = info.name;
  if (p.stages < 1) bad(name, "stages must be >= 1 (got " + std::to_string(p.stages) + ")");
  if (p.microbatches < 1) bad(name, "microbatches must be >= 1 (got " + std::to_string(p.microbatches) + ")");
  if (p.microbatches > std::numeric_limits<int32_t>::max())
    bad(name, "microbatches must be < 2^31 (got " + std::to_string(p.microbatches) + ")");
  if (p.accumulation < 0) bad(name, "accumulation must be >= 1 (got " + std::to_string(p.accumulation) + ")");
  if (p.replicas < 0) bad(name, "replicas must be >= 1 (got " + std::to_string(p.replicas) + ")");
  if (p.local_steps < 0) bad(name, "local_steps must be >= 1 (got " + std::to_string(p.local_steps) + ")");
  if (p.chunks < 0) bad(name, "chunks must be >= 1 (got " + std::to_string(p.chunks) + ")");

  if (info.replicated) {
    if (p.replicas == 0) p.replicas = p.stages;
    if (p.local_steps == 0) p.local_steps = 1;
  } else {
    if (p.replicas > 0) bad(name, "replicas applies only to localsgd");
    if (p.local_steps > 0) bad(name, "local_steps applies only to localsgd");
  }
  if (info.v_shape) {
    if (p.chunks != 0 && p.chunks != 2) bad(name, "chunks is 2 for a V-shaped schedule (got " + std::to_string(p.chunks) + ")");
    p.chunks = 2;
  } else if (info.chunked) {
    if (p.chunks == 0) p.chunks = 2;
  } else if (p.chunks > 1) {
    bad(name, "chunks applies only to interleaved schedules (" + chunked_names() + ")");
  }
  if (p.chunks == 0) p.chunks = 1;
  if (!info.accumulates && p.accumulation > 1)
    bad(name, info.replicated
                  ? "accumulation must be 1 (each replica steps after every micro-batch; use local_steps for H)"
                  : "accumulation must be 1 (" + name + " steps after every backward pass; paci and 2bw accumulate)");
  if (p.accumulation == 0) {
    // flush schedules and 2bw: one micro-batch per device (the fewest that keep every
    // device busy; for 2bw the least for which two versions suffice); the others step per B
    p.accumulation = info.min_microbatches_per_device > 0 ? info.min_microbatches_per_device * p.stages
                     : info.accumulation_defaults_to_stages ? p.stages
                                                            : 1;
  }
  const int64_t blocks = static_cast<int64_t>(p.stages) * p.chunks;
  if (blocks > std::numeric_limits<uint16_t>::max())
    bad(name, "stages x chunks must be <= 65535 (got " + std::to_string(blocks) + ")");
  const int64_t ops = blocks * p.microbatches * (info.split_backward ? 3 : 2);
  if (ops > (int64_t{1} << 31))
    bad(name, "stages x chunks x microbatches is too large (" + std::to_string(ops) +
                  " ops; at most 2^31, which is already 16 GiB of schedule)");
  return p;
}

// Every mini-batch (the last one may be short) holds the least the schedule takes. Apart from
// resolve(), which callers use with a stand-in M (the memory guard sizes a schedule at M = 1).
void check_minibatches(const ScheduleInfo& info, const ScheduleParams& p) {
  const int64_t least = int64_t{info.min_microbatches_per_device} * p.stages;
  if (least == 0) return;
  const int64_t last = p.microbatches % p.accumulation;  // a short last mini-batch, or 0
  if (p.accumulation < least || p.microbatches < least || (last > 0 && last < least))
    bad(info.name, "every mini-batch needs at least " + std::to_string(least) + " micro-batches (" +
                       std::to_string(info.min_microbatches_per_device) + " x stages); got microbatches " +
                       std::to_string(p.microbatches) + ", accumulation " + std::to_string(p.accumulation));
}

}  // namespace

const std::vector<ScheduleInfo>& schedule_catalog() { return ScheduleRegistry::entries(); }

std::vector<std::string> schedule_names() { return ScheduleRegistry::names(); }

const ScheduleInfo& schedule_info(const std::string& name) { return entry(name); }

ScheduleParams resolve_schedule_params(const std::string& name, const ScheduleParams& params) {
  return resolve(entry(name), params);
}

Schedule make_schedule(const std::string& name, const ScheduleParams& params) {
  const ScheduleInfo& e = entry(name);
  const ScheduleParams p = resolve(e, params);
  check_minibatches(e, p);
  return e.make(p);
}

void check_schedule(const Schedule& s) {
  const int nb = s.blocks();
  const int64_t M = s.microbatches;
  STALE_CHECK(static_cast<int>(s.offsets.size()) == s.stages + 1, "offsets must have stages + 1 entries");
  STALE_CHECK(s.size() == int64_t{nb} * M * s.ops_per_block_microbatch(), "wrong number of ops");
  // per (block, kind): the next micro-batch expected for F (order) and a seen-count for B/W
  std::vector<int64_t> nextF(nb, 0);
  std::vector<uint8_t> seen(static_cast<size_t>(nb) * M, 0);  // bit 1: B, bit 2: W
  auto fail = [&](int d, const Op& op, const char* what) {
    std::ostringstream os;
    os << s.name << ": device " << d << " op " << op_kind_letter(op.kind) << op.microbatch << " (block " << op.block
       << "): " << what;
    throw InternalError(os.str());
  };
  for (int d = 0; d < s.stages; ++d) {
    for (const Op& op : s.program(d)) {
      if (op.block >= nb || s.device_of(op.block) != d) fail(d, op, "block not held by this device");
      if (op.microbatch < 0 || op.microbatch >= M) fail(d, op, "micro-batch out of range");
      uint8_t& bits = seen[static_cast<size_t>(op.microbatch) * nb + op.block];
      switch (op.kind) {
        case OpKind::Forward:
          if (op.microbatch != nextF[op.block]) fail(d, op, "F out of micro-batch order or repeated");
          ++nextF[op.block];
          break;
        case OpKind::Backward:
          if (bits & 1) fail(d, op, "B repeated");
          if (op.microbatch >= nextF[op.block]) fail(d, op, "B before its F on the same device");
          bits |= 1;
          break;
        case OpKind::Weight:
          if (!s.split_backward) fail(d, op, "W in a schedule without split backward");
          if (bits & 2) fail(d, op, "W repeated");
          if (!(bits & 1)) fail(d, op, "W before its B on the same device");
          bits |= 2;
          break;
      }
    }
  }
  for (int b = 0; b < nb; ++b)
    STALE_CHECK(nextF[b] == M, "a block is missing forwards");
  const uint8_t want = s.split_backward ? 3 : 1;
  for (uint8_t bits : seen) STALE_CHECK(bits == want, "a block/micro-batch is missing its B or W");
}

namespace detail {

ProgramBuilder::ProgramBuilder(Schedule& s, const std::vector<int64_t>& ops_per_device) : s_(s) {
  s_.offsets.assign(s_.stages + 1, 0);
  for (int d = 0; d < s_.stages; ++d) s_.offsets[d + 1] = s_.offsets[d] + ops_per_device[d];
  s_.ops.assign(static_cast<size_t>(s_.offsets.back()), Op{});
  cursor_.assign(s_.offsets.begin(), s_.offsets.end() - 1);
}

void ProgramBuilder::finish() const {
  for (int d = 0; d < s_.stages; ++d)
    STALE_CHECK(cursor_[d] == s_.offsets[d + 1], "a generator emitted fewer ops than it declared");
}

int64_t round_size(const std::string& schedule, int S, int64_t n) {
  const int64_t rounds = std::max<int64_t>(1, n / S);
  if (n % rounds != 0)
    throw UserError("schedule " + schedule + ": a mini-batch of " + std::to_string(n) +
                    " micro-batches is not a whole number of " + std::to_string(rounds) +
                    " rounds (max(1, n / stages) with stages = " + std::to_string(S) +
                    "), as PyTorch's interleaved schedules require; choose microbatches and accumulation accordingly");
  return n / rounds;
}

Schedule base_schedule(const std::string& name, const ScheduleParams& p) {
  Schedule s;
  s.name = name;
  s.stages = p.stages;
  s.chunks = p.chunks;
  s.microbatches = p.microbatches;
  s.accumulation = p.accumulation;
  return s;
}

void flag_every(Schedule& s, int a) {
  const OpKind g = s.gradient_kind();
  std::vector<int64_t> count(s.blocks(), 0);
  for (Op& op : s.ops) {
    if (op.kind != g) continue;
    const int64_t c = ++count[op.block];
    if (c % a == 0 || c == s.microbatches) op.flags |= op_flag::Update;
  }
}

void count_inflight(Schedule& s) {
  s.inflight_bound.assign(s.stages, 0);
  for (int d = 0; d < s.stages; ++d) {
    int64_t live = 0;
    for (const Op& op : s.program(d)) {
      if (op.kind == OpKind::Forward) s.inflight_bound[d] = std::max(s.inflight_bound[d], ++live);
      if (op.kind == OpKind::Weight) --live;
    }
  }
}

void flag_flush(Schedule& s, int64_t m) {
  // Scanning each program backwards, the first gradient op met for a (block, mini-batch) is
  // that block's last one of the mini-batch.
  const OpKind g = s.gradient_kind();
  std::vector<int64_t> flagged_group(s.blocks(), -1);
  for (int d = 0; d < s.stages; ++d) {
    auto prog = s.program(d);
    for (int64_t i = static_cast<int64_t>(prog.size()) - 1; i >= 0; --i) {
      Op& op = s.ops[s.offsets[d] + i];
      if (op.kind != g) continue;
      const int64_t group = op.microbatch / m;
      if (flagged_group[op.block] != group) {
        op.flags |= op_flag::Update;
        flagged_group[op.block] = group;
      }
    }
  }
}

}  // namespace detail

OpTable op_table(const Schedule& s) {
  const size_t n = s.ops.size();
  OpTable t;
  for (auto* c : {&t.stage, &t.block, &t.kind, &t.microbatch, &t.flags}) c->resize(n);
  for (int d = 0; d < s.stages; ++d)
    for (int64_t i = s.offsets[d]; i < s.offsets[d + 1]; ++i) {
      const Op& op = s.ops[i];
      t.stage[i] = d;
      t.block[i] = op.block;
      t.kind[i] = static_cast<int64_t>(op.kind);
      t.microbatch[i] = op.microbatch;
      t.flags[i] = op.flags;
    }
  return t;
}

}  // namespace stale
