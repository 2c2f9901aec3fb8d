// Interleaved zero bubble (Qi et al., ICLR 2024, "Zero Bubble Pipeline Parallelism": ZB-H1's
// deferred W on the interleaved placement; PyTorch's ScheduleInterleavedZeroBubble, which the
// order below matches op for op, tests/python/test_schedule_conformance.py).
//  - placement and op order as `interleaved`: v chunks per device, chunk c of device d is
//    block c·S + d; a mini-batch of n is r = max(1, ⌊n / S⌋) rounds of P = n / r micro-batches;
//    the k-th forward of a device is chunk (k mod P·v) / P of micro-batch (k / P·v)·P + k mod P,
//    backwards visit the chunks in reverse;
//  - B is split into B (input gradient) and W (weight gradient);
//  - device d runs min(n·v, (v − 1)·P + S − d − 1) warm-up forwards (one per hop from the last
//    device, where interleaved 1F1B has two: B alone is shorter than B + W), then for each of
//    its n·v backwards: the next forward if any, the B, and, from its d-th B on, the W of its
//    oldest B still waiting; the W still waiting close the mini-batch;
//  - with v = 1 this is zb-h1's program (rounds play no part then);
//  - flush: each block steps after its last W of the mini-batch.
// With t_F = t_B = t_W per stage (1/v per chunk op) a mini-batch of n >= 2S takes
// (3vn + S − 1)/v: each device is busy 3n and idles S − 1 chunk slots.
#include <deque>
#include <utility>

#include "src/pipeline/schedule_builder.hpp"

namespace stale::detail {

namespace {

Schedule make_interleaved_zero_bubble(const ScheduleParams& p) {
  Schedule s = base_schedule("interleaved-zb", p);
  s.split_backward = true;
  const int S = s.stages, v = s.chunks;
  const int64_t M = s.microbatches, m = s.accumulation;
  for (int64_t first = 0; first < M; first += m) round_size("interleaved-zb", S, std::min(m, M - first));
  ProgramBuilder out(s, 3 * M * v);
  for (int d = 0; d < S; ++d) {
    for (int64_t first = 0; first < M; first += m) {
      const int64_t n = std::min(m, M - first);
      const int64_t P = round_size("interleaved-zb", S, n), group = P * v, total = n * v;
      const int64_t warmup = std::min<int64_t>(total, int64_t{v - 1} * P + S - d - 1);
      auto microbatch = [&](int64_t k) { return first + (k / group) * P + k % P; };
      std::deque<std::pair<int64_t, int64_t>> waiting;  // (block, micro-batch) of Bs without their W
      for (int64_t k = 0; k < warmup; ++k) out.F(d, ((k % group) / P) * S + d, microbatch(k));
      for (int64_t b = 0; b < total; ++b) {
        if (const int64_t k = warmup + b; k < total) out.F(d, ((k % group) / P) * S + d, microbatch(k));
        const int64_t block = (v - 1 - (b % group) / P) * S + d;
        out.B(d, block, microbatch(b));
        waiting.emplace_back(block, microbatch(b));
        if (b >= d) {
          out.W(d, waiting.front().first, waiting.front().second);
          waiting.pop_front();
        }
      }
      for (const auto& [block, mb] : waiting) out.W(d, block, mb);
    }
  }
  out.finish();
  count_inflight(s);
  flag_flush(s, m);
  return s;
}

const bool registered = ScheduleRegistry::add({.name = "interleaved-zb",
    .summary = "interleaved zero bubble: v chunks per device, B and W split, W deferred as zb-h1, flush (Qi et al. 2024)",
    .rank = 75, .flush = true, .split_backward = true, .accumulates = true, .chunked = true,
    .accumulation_defaults_to_stages = true, .default_accumulation = "S (devices, not chunks)",
    .make = make_interleaved_zero_bubble});

}  // namespace

}  // namespace stale::detail
