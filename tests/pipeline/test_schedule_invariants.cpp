// Property tests over every schedule and random (S, M, a, R, H, v) with random costs: what must
// hold for any pipeline schedule (as DeepSpeed and torchgpipe test theirs: schedules are tested by
// invariants).
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "tests/support/pipeline_test_util.hpp"

TEST_SUITE_BEGIN("pipeline");

using namespace stale;

namespace {

constexpr int kCases = 100;

// parameters by the schedule's registry traits (a new schedule is covered without an edit here)
ScheduleParams random_params(const std::string& name, Rng& rng) {
  const ScheduleInfo& info = schedule_info(name);
  ScheduleParams p;
  p.stages = 1 + static_cast<int>(rng.uniform_int(10));
  p.microbatches = 1 + static_cast<int64_t>(rng.uniform_int(40));
  if (info.chunked) {
    p.chunks = 1 + static_cast<int>(rng.uniform_int(3));
    // a mini-batch PyTorch's interleaved rule accepts (a whole number of max(1, n / S) rounds:
    // n < S, S + 1, multiples of S, ...), repeated k times
    int64_t n = 0;
    do n = 1 + static_cast<int64_t>(rng.uniform_int(4 * p.stages)); while (n % std::max<int64_t>(1, n / p.stages) != 0);
    const int64_t k = 1 + static_cast<int64_t>(rng.uniform_int(4));
    p.accumulation = static_cast<int>(n);
    p.microbatches = n * k;
  } else if (info.replicated) {
    p.replicas = 1 + static_cast<int>(rng.uniform_int(p.stages + 2));
    p.local_steps = 1 + static_cast<int>(rng.uniform_int(4));
  } else if (info.min_microbatches_per_device > 0) {
    // whole mini-batches of at least the least the schedule takes
    const int64_t least = int64_t{info.min_microbatches_per_device} * p.stages;
    p.accumulation = static_cast<int>(least + rng.uniform_int(3 * p.stages));
    p.microbatches = p.accumulation * (1 + static_cast<int64_t>(rng.uniform_int(3)));
  } else if (info.accumulates && rng.uniform() < 0.7) {
    p.accumulation = 1 + static_cast<int>(rng.uniform_int(p.microbatches + 2));
  }
  return p;
}

// Peak block versions a stashing device stores, from its program alone: the versions its
// in-flight micro-batches' forwards read, plus the current one, counted after every op.
std::vector<int64_t> peak_versions_by_program(const Schedule& s) {
  std::vector<int64_t> peak(s.stages, 0);
  for (int d = 0; d < s.stages; ++d) {
    std::map<int, int32_t> current;                        // block → version
    std::map<std::pair<int, int32_t>, int64_t> held;       // (block, version) → micro-batches holding it
    std::map<std::pair<int, int64_t>, int32_t> read;       // (block, micro-batch) → version its F read
    auto stored = [&] {
      std::set<std::pair<int, int32_t>> v;
      for (const auto& [bv, n] : held)
        if (n > 0) v.insert(bv);
      for (const auto& [b, ver] : current) v.insert({b, ver});
      return static_cast<int64_t>(v.size());
    };
    for (const Op& op : s.program(d)) {
      current.try_emplace(op.block, 0);
      if (op.kind == OpKind::Forward) {
        read[{op.block, op.microbatch}] = current[op.block];
        ++held[{op.block, current[op.block]}];
      }
      if (op.kind == s.gradient_kind()) {
        --held[{op.block, read.at({op.block, op.microbatch})}];
        if (op.updates()) ++current[op.block];
      }
      peak[d] = std::max(peak[d], stored());
    }
  }
  return peak;
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

  // stashed weight versions: recounted from the programs (a device's block changes only by its
  // own ops, so this count is the same under any costs)
  if (s.stash && s.replicas == 1) {
    const auto peaks = peak_versions_by_program(s);
    for (int d = 0; d < s.stages; ++d) CHECK(r.peak_versions[d] == peaks[d]);
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

TEST_CASE("pipedream-capped: stage s holds at most S - s micro-batches at every tick and reaches it, stores at most "
          "S - s versions, monotone in s once M >= 2S - 3, is 2bw's program at a = 1, and its steady state is pipedream's") {
  Rng rng(7, Stream::StageTime, 3);
  for (int t = 0; t < 60; ++t) {
    ScheduleParams p;
    p.stages = 1 + static_cast<int>(rng.uniform_int(20));
    p.microbatches = 1 + static_cast<int64_t>(rng.uniform_int(8 * p.stages));
    CAPTURE(p.stages);
    CAPTURE(p.microbatches);
    const Schedule s = make_schedule("pipedream-capped", p);
    const int S = s.stages;
    // in flight changes only at the device's own ops: the program order is every tick
    for (int d = 0; d < S; ++d) {
      REQUIRE(s.inflight_bound[d] == S - d);
      int64_t live = 0, peak = 0;
      for (const Op& op : s.program(d)) {
        if (op.kind == OpKind::Forward) peak = std::max(peak, ++live);
        if (op.kind == OpKind::Backward) --live;
        REQUIRE(live <= S - d);
      }
      CHECK(peak == std::min<int64_t>(S - d, p.microbatches));
    }
    // stashed versions: at most S − s on stage s; monotone non-increasing in s once M ≥ 2S − 3
    // (with fewer, stage 0 admits every micro-batch before its first update and stores fewer:
    // S = 8, M = 12 gives 6, 7, 6, 5, 4, 3, 2, 1)
    const auto versions = peak_versions_by_program(s);
    for (int d = 0; d < S; ++d) CHECK(versions[d] <= S - d);
    if (p.microbatches >= 2 * S - 3)
      for (int d = 1; d < S; ++d) CHECK(versions[d] <= versions[d - 1]);
    // with caps S − s, "alternate F and B" and "backward first" choose the same ops: the program
    // is 2bw's and paci's at a = 1 (which differ from it only by their names and, paci, by stashing)
    for (const char* twin : {"2bw", "paci"}) {
      CAPTURE(twin);
      ScheduleParams q = p;
      q.accumulation = 1;
      const Schedule o = make_schedule(twin, q);
      REQUIRE(o.offsets == s.offsets);
      for (int64_t i = 0; i < s.size(); ++i) {
        const Op &x = s.ops[i], &y = o.ops[i];
        REQUIRE((x.kind == y.kind && x.block == y.block && x.microbatch == y.microbatch && x.flags == y.flags));
      }
    }
    // under any costs: the invariants of every schedule (one F and one B per block and
    // micro-batch, dependencies, no deadlock), and the simulator counts the same versions
    const CostModel c = t % 2 == 0 ? CostModel{} : test::random_costs(rng, S);
    SimOptions opt;
    opt.delay_table = true;
    opt.delay_pairs = true;
    const SimResult r = simulate(s, c, opt);
    check_invariants(s, r, c);
  }
  // the caps change only warm-up and drain: in steady state the RPD authors' rule already holds
  // S − s on stage s, so both have the same steady-state delays (results/pipedream_delays.md)
  for (int S : {2, 3, 4, 8, 16}) {
    CAPTURE(S);
    ScheduleParams p;
    p.stages = S;
    p.microbatches = 8 * S;
    const SimResult a = simulate(make_schedule("pipedream", p), CostModel{}, SimOptions{.delay_pairs = true});
    const SimResult b = simulate(make_schedule("pipedream-capped", p), CostModel{}, SimOptions{.delay_pairs = true});
    CHECK(a.steady_delays.pair_max == b.steady_delays.pair_max);
    CHECK(a.steady_delays.pair_sum == b.steady_delays.pair_sum);
    CHECK(a.delays.max_overall() == b.delays.max_overall());
    if (S % 2 == 0) CHECK(b.steady_delays.max_overall() == S * S - S / 2);
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
