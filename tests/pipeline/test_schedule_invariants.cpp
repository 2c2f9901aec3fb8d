// Property tests over every schedule and random (S, M, a, R, H, v) with random costs: what must
// hold for any pipeline schedule (as DeepSpeed and torchgpipe test theirs: schedules are tested by
// invariants).
#include <doctest/doctest.h>

#include "tests/pipeline/pipeline_test_util.hpp"

TEST_SUITE_BEGIN("pipeline");

using namespace stale;

namespace {

constexpr int kCases = 100;

ScheduleParams random_params(const std::string& name, Rng& rng) {
  ScheduleParams p;
  p.stages = 1 + static_cast<int>(rng.uniform_int(10));
  p.microbatches = 1 + static_cast<int64_t>(rng.uniform_int(40));
  if (name == "interleaved") {
    p.chunks = 1 + static_cast<int>(rng.uniform_int(3));
    const int64_t k = 1 + static_cast<int64_t>(rng.uniform_int(6));
    p.microbatches = p.stages * k;
    p.accumulation = p.stages * static_cast<int>(1 + rng.uniform_int(k));
  } else if (name == "localsgd") {
    p.replicas = 1 + static_cast<int>(rng.uniform_int(p.stages + 2));
    p.local_steps = 1 + static_cast<int>(rng.uniform_int(4));
  } else if (name != "pipedream" && rng.uniform() < 0.7) {
    p.accumulation = 1 + static_cast<int>(rng.uniform_int(p.microbatches + 2));
  }
  return p;
}

// Every check below recomputes its fact from the op list and the timeline, independently of
// how the simulator got it.
void check_invariants(const Schedule& s, const SimResult& r, const CostModel& c) {
  const int nb = s.blocks();
  const int64_t M = s.microbatches;
  const auto idx = test::op_index(s);
  const auto dev = test::device_of_op(s);
  const double tol = 1e-9 * std::max(1.0, r.makespan);

  // exactly one F, one B (and one W when split) per block and micro-batch, on the block's device
  REQUIRE(s.size() == int64_t{nb} * M * s.ops_per_block_microbatch());
  REQUIRE(static_cast<int64_t>(idx.size()) == s.size());
  for (int64_t i = 0; i < s.size(); ++i) REQUIRE(dev[i] == s.device_of(s.ops[i].block));

  // every dependency holds in the timeline; a device runs one op at a time, in program order
  auto end_of = [&](OpKind k, int b, int64_t mb) { return r.end[idx.at({static_cast<int>(k), b, mb})]; };
  auto lat = [&](int b_from, int b_to) { return s.device_of(b_from) != s.device_of(b_to) ? c.latency() : 0.0; };
  for (int64_t i = 0; i < s.size(); ++i) {
    const Op& op = s.ops[i];
    REQUIRE(r.end[i] >= r.start[i]);
    if (i > s.offsets[dev[i]]) REQUIRE(r.start[i] >= r.end[i - 1] - tol);
    switch (op.kind) {
      case OpKind::Forward:
        if (op.block > 0)
          REQUIRE(r.start[i] >= end_of(OpKind::Forward, op.block - 1, op.microbatch) + lat(op.block - 1, op.block) - tol);
        break;
      case OpKind::Backward:
        REQUIRE(r.start[i] >= end_of(OpKind::Forward, op.block, op.microbatch) - tol);
        if (op.block + 1 < nb)
          REQUIRE(r.start[i] >= end_of(OpKind::Backward, op.block + 1, op.microbatch) + lat(op.block + 1, op.block) - tol);
        break;
      case OpKind::Weight:
        REQUIRE(r.start[i] >= end_of(OpKind::Backward, op.block, op.microbatch) - tol);
        break;
    }
  }

  // makespan >= every micro-batch's own critical path (its ops' durations plus transfers)
  for (int64_t mb = 0; mb < M; ++mb) {
    double path = 0;
    auto dur = [&](OpKind k, int b) {
      const int64_t i = idx.at({static_cast<int>(k), b, mb});
      return r.end[i] - r.start[i];
    };
    for (int b = 0; b < nb; ++b) path += dur(OpKind::Forward, b) + (b > 0 ? lat(b - 1, b) : 0.0);
    for (int b = nb - 1; b >= 0; --b) path += dur(OpKind::Backward, b) + (b + 1 < nb ? lat(b + 1, b) : 0.0);
    if (s.split_backward) path += dur(OpKind::Weight, 0);
    REQUIRE(r.makespan >= path - tol);
  }
  for (int d = 0; d < s.stages; ++d) REQUIRE(r.makespan >= r.busy[d] - tol);

  // in-flight activations: recounted from the programs, and within the schedule's bound
  for (int d = 0; d < s.stages; ++d) {
    int64_t live = 0, peak = 0;
    for (const Op& op : s.program(d)) {
      if (op.kind == OpKind::Forward) peak = std::max(peak, ++live);
      if (op.kind == s.gradient_kind()) --live;
    }
    REQUIRE(live == 0);
    CHECK(r.peak_inflight[d] == peak);
    CHECK(peak <= s.inflight_bound[d]);
  }

  // block versions: updates (and averages) of the block before F / B in its device's order
  std::vector<int32_t> version(static_cast<size_t>(s.replicas) * nb, 0);
  for (int d = 0; d < s.stages; ++d)
    for (const Op& op : s.program(d)) {
      const int rep = s.replica_of(op.microbatch);
      const size_t cell = static_cast<size_t>(op.microbatch) * nb + op.block;
      int32_t& v = version[static_cast<size_t>(rep) * nb + op.block];
      if (op.kind == OpKind::Forward) REQUIRE(r.forward_version[cell] == v);
      if (op.kind == OpKind::Backward) REQUIRE(r.backward_version[cell] == (s.stash ? r.forward_version[cell] : v));
      if (op.updates()) ++v;
      if (op.averages())
        for (int rr = 0; rr < s.replicas; ++rr) ++version[static_cast<size_t>(rr) * nb + op.block];
    }

  // global read indices: updates before each F in the serial order (start, device, position)
  std::vector<int64_t> count(s.replicas, 0);
  int64_t updates = 0;
  for (int64_t i : test::serial_order(s, r)) {
    const Op& op = s.ops[i];
    const int rep = s.replica_of(op.microbatch);
    if (op.kind == OpKind::Forward)
      REQUIRE(r.forward_read[static_cast<size_t>(op.microbatch) * nb + op.block] == count[rep]);
    if (op.updates()) {
      REQUIRE(r.updates[updates].index == count[rep]);
      REQUIRE(r.updates[updates].block == op.block);
      ++count[rep];
      ++updates;
    }
  }
  REQUIRE(updates == r.total_updates);

  // the delay table, the on-demand rows and every summary agree (the summaries are computed
  // without scanning rows; here they are recomputed from the table, all and steady state)
  REQUIRE(static_cast<int64_t>(r.delay_table.size()) == updates * nb);
  DelayStats want[2];
  for (auto& w : want) w.reset(nb, true);
  for (int64_t k = 0; k < updates; ++k) {
    const Update& u = r.updates[k];
    const auto row = r.delay_row(u);
    const bool steady = u.oldest >= r.steady_margin && u.microbatch < M - r.steady_margin;
    for (int j = 0; j < nb; ++j) {
      REQUIRE(row[j] == r.delay_table[k * nb + j]);
      REQUIRE(row[j] >= 0);
      for (int w = 0; w < (steady ? 2 : 1); ++w) {
        DelayStats& st = want[w];
        const size_t p = static_cast<size_t>(u.block) * nb + j;
        st.pair_max[p] = std::max(st.pair_max[p], row[j]);
        st.pair_sum[p] += row[j];
        st.update_max[u.block] = std::max(st.update_max[u.block], row[j]);
        st.update_sum[u.block] += row[j];
        st.read_max[j] = std::max(st.read_max[j], row[j]);
        st.read_sum[j] += row[j];
      }
    }
    for (int w = 0; w < (steady ? 2 : 1); ++w) ++want[w].count[u.block];
    if (!r.delay_table_backward.empty()) {
      const auto brow = r.delay_row(u, true);
      for (int j = 0; j < nb; ++j) REQUIRE(brow[j] == r.delay_table_backward[k * nb + j]);
    }
  }
  for (int w = 0; w < 2; ++w) {
    const DelayStats& got = w == 0 ? r.delays : r.steady_delays;
    CHECK(got.count == want[w].count);
    CHECK(got.update_max == want[w].update_max);
    CHECK(got.update_sum == want[w].update_sum);
    CHECK(got.read_max == want[w].read_max);
    CHECK(got.read_sum == want[w].read_sum);
    CHECK(got.pair_max == want[w].pair_max);
    CHECK(got.pair_sum == want[w].pair_sum);
  }
}

void check_schedule_randomly(const std::string& name, uint64_t seed) {
  Rng rng(seed, Stream::StageTime, 99);
  SimOptions opt;
  opt.delay_table = true;
  opt.delay_pairs = true;
  for (int t = 0; t < kCases; ++t) {
    const ScheduleParams p = random_params(name, rng);
    const CostModel c = t % 2 == 0 ? CostModel{} : test::random_costs(rng, p.stages);
    CAPTURE(t);
    CAPTURE(p.stages);
    CAPTURE(p.microbatches);
    CAPTURE(p.accumulation);
    CAPTURE(p.replicas);
    CAPTURE(p.local_steps);
    CAPTURE(p.chunks);
    const Schedule s = make_schedule(name, p);
    check_schedule(s);
    const SimResult r = simulate(s, c, opt);  // throws on deadlock
    check_invariants(s, r, c);
  }
}

}  // namespace

TEST_CASE("every schedule gives each micro-batch one F, B (and W) per block, respects dependencies, "
          "in-flight bounds and critical paths, and never deadlocks") {
  uint64_t seed = 1;
  for (const auto& name : schedule_names()) {
    SUBCASE(name.c_str()) { check_schedule_randomly(name, seed); }
    ++seed;
  }
}

TEST_CASE("unit costs reproduce the slot clock: every op starts on a slot boundary and lasts one slot") {
  for (const auto& name : schedule_names()) {
    ScheduleParams p;
    p.stages = 6;
    p.microbatches = 24;
    const Schedule s = make_schedule(name, p);
    CostModel c;
    if (s.split_backward) c.set("weight=1");
    const SimResult r = simulate(s, c);
    // a chunk op of the interleaved schedule is 1/v of a stage: its slot is 1/v long
    const double slot = 1.0 / s.chunks;
    for (int64_t i = 0; i < s.size(); ++i) {
      REQUIRE(r.start[i] / slot == std::floor(r.start[i] / slot));
      REQUIRE(r.end[i] - r.start[i] == slot);
    }
  }
}

TEST_SUITE_END();
