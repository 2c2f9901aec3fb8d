// Zero Bubble V (Qi et al., NeurIPS 2024, "Pipeline Parallelism with Controllable Memory",
// the V-shape schedule; its zero-bubble instance is also section 6 of Qi et al., ICLR 2024,
// "Zero Bubble Pipeline Parallelism"). PyTorch runs it as ScheduleZBVZeroBubble; the order
// below is checked op for op against it by tests/python/test_schedule_conformance.py.
//  - V placement: the model is 2S chunks; device d holds chunk d (block d, on the way down)
//    and chunk 2S − 1 − d (block 2S − 1 − d, on the way back up), so device S − 1 runs both
//    halves of the turn and device 0 both ends: every device's two chunks see the same load;
//  - the backward is split into B (input gradient) and W (weight gradient), as in zb-h1;
//  - per mini-batch of n micro-batches, counted as N = max(n, 2S − 1) (ops of the padding
//    micro-batches n..N − 1 are left out, as PyTorch does), device d runs, with a = block d,
//    b = block 2S − 1 − d and each op kind taking its block's micro-batches in order:
//      warm-up   2(S − d) − 1 × F(a);  d × [F(b) F(a)];  (S − d) × [F(b) B(b) W(b)]
//      steady    until both chunks forwarded N: [F(a) while some remain] B(a) W(a) F(b) B(b) W(b)
//      cool-down d × [B(a) B(b)];  (S − d) × [B(a) W(a)];  then the pending W(b), then W(a);
//  - memory: at most 2S chunk activations (F until W) on every device, half a stage each:
//    S stage activations, the peak of 1F1B's first stage, on every device alike;
//  - time: with t_F = t_B = t_W per chunk (the simulator gives a chunk op 1/2 of its device's
//    stage cost) a mini-batch of n ≥ 2S micro-batches takes 6n + S − 1 chunk slots: each
//    device is busy 6n and idles S − 1, against zb-h1's (S − 1)·(3 chunk slots);
//  - flush: each block steps after its last W of the mini-batch.
#include "src/pipeline/schedule_builder.hpp"

namespace stale::detail {

namespace {

Schedule make_zero_bubble_v(const ScheduleParams& p) {
  Schedule s = base_schedule("zb-v", p);
  s.split_backward = true;
  s.v_shape = true;
  const int S = s.stages;
  const int64_t M = s.microbatches, m = s.accumulation;
  ProgramBuilder out(s, 6 * M);
  s.inflight_bound.assign(S, std::min<int64_t>(2 * int64_t{S}, 2 * std::min(m, M)));
  for (int d = 0; d < S; ++d) {
    const int a = d, b = 2 * S - 1 - d;
    for (int64_t first = 0; first < M; first += m) {
      const int64_t n = std::min(m, M - first);
      const int64_t N = std::max<int64_t>(n, 2 * int64_t{S} - 1);
      // next micro-batch per (chunk, kind); an op of a padding micro-batch (>= n) is skipped
      int64_t next[2][3] = {};
      auto op = [&](int chunk, OpKind kind) {
        const int64_t mb = next[chunk][static_cast<int>(kind)]++;
        if (mb < n) out.push(d, kind, chunk == 0 ? a : b, first + mb);
      };
      auto F = [&](int c) { op(c, OpKind::Forward); };
      auto B = [&](int c) { op(c, OpKind::Backward); };
      auto W = [&](int c) { op(c, OpKind::Weight); };
      auto count = [&](int c, OpKind k) { return next[c][static_cast<int>(k)]; };
      for (int i = 0; i < 2 * (S - d) - 1; ++i) F(0);
      for (int i = 0; i < d; ++i) F(1), F(0);
      for (int i = 0; i < S - d; ++i) F(1), B(1), W(1);
      while (count(1, OpKind::Forward) < count(0, OpKind::Forward) || count(0, OpKind::Forward) < N) {
        if (count(0, OpKind::Forward) < N) F(0);
        B(0), W(0), F(1), B(1), W(1);
      }
      for (int i = 0; i < d; ++i) B(0), B(1);
      for (int i = 0; i < S - d; ++i) B(0), W(0);
      while (count(1, OpKind::Weight) < count(1, OpKind::Backward)) W(1);
      while (count(0, OpKind::Weight) < count(0, OpKind::Backward)) W(0);
      STALE_CHECK(count(0, OpKind::Weight) == N && count(1, OpKind::Weight) == N, "zb-v: a chunk missed micro-batches");
    }
  }
  out.finish();
  flag_flush(s, m);
  return s;
}

const bool registered = ScheduleRegistry::add({.name = "zb-v",
    .summary = "zero bubble V: 2 chunks per device in a V, B and W split, 1F1B's peak memory, flush",
    .rank = 85, .flush = true, .split_backward = true, .accumulates = true, .v_shape = true,
    .accumulation_defaults_to_stages = true,
    .default_accumulation = "S (one micro-batch per device; zero bubble needs at least 2S)", .make = make_zero_bubble_v});

}  // namespace

}  // namespace stale::detail
