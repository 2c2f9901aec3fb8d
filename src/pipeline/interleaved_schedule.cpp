// Interleaved 1F1B (Narayanan et al., SC 2021, "Efficient Large-Scale Language Model Training
// on GPU Clusters Using Megatron-LM"): each of the S devices holds v model chunks, so the
// model is S·v virtual stages (blocks); chunk c of device d is block c·S + d, and a
// micro-batch visits device 0..S−1 v times. The per-device order is the one current
// Megatron-LM (forward_backward_pipelining_with_interleaving) and PyTorch
// (torch.distributed.pipelining.ScheduleInterleaved1F1B) run, checked op for op against
// PyTorch by tests/python/test_schedule_conformance.py:
//  - a mini-batch of n micro-batches is cut into r = max(1, ⌊n / S⌋) rounds of P = n / r
//    micro-batches (n must be a multiple of r: PyTorch's flexible rule, so n = S + 1 or 10 at
//    S = 4 are accepted; Megatron's n ≡ 0 mod S is the case P = S);
//  - ops come in rounds: the k-th forward of a device is chunk (k mod P·v) / P of
//    micro-batch (k / P·v)·P + k mod P; backwards visit the chunks in reverse;
//  - device d runs min(n·v, (v − 1)·P + 2(S − d − 1)) warm-up forwards, then alternates F and
//    B, then the cool-down backwards. The cap holds at n = S too: an earlier Megatron-LM ran
//    every forward first when n = S, which needs no more time but holds up to n·v
//    activations on the late devices instead of (v − 1)·S + 2(S − d − 1) + 1;
//  - with v = 1 Megatron-LM falls back to plain 1F1B (S − d − 1 warm-up forwards);
//  - flush per mini-batch of n = `accumulation` micro-batches.
// The bubble shrinks by v: (S − 1)/(v·n + S − 1) with t_F = t_B, because each chunk op costs
// 1/v of the device's stage cost (the simulator divides by `chunks`).
#include "src/pipeline/schedule_builder.hpp"

namespace stale::detail {

namespace {

Schedule make_interleaved(const ScheduleParams& p) {
  Schedule s = base_schedule("interleaved", p);
  const int S = s.stages, v = s.chunks;
  const int64_t M = s.microbatches, m = s.accumulation;
  for (int64_t first = 0; first < M; first += m) round_size("interleaved", S, std::min(m, M - first));  // every group, before any op
  ProgramBuilder out(s, 2 * M * v);
  s.inflight_bound.assign(S, 0);
  for (int d = 0; d < S; ++d) {
    for (int64_t first = 0; first < M; first += m) {
      const int64_t n = std::min(m, M - first);
      const int64_t P = round_size("interleaved", S, n), group = P * v;
      const int64_t total = n * v;
      // with one chunk Megatron-LM runs its plain 1F1B schedule (S − d − 1 warm-up forwards)
      const int64_t warmup = v == 1 ? std::min<int64_t>(total, S - d - 1)
                                    : std::min<int64_t>(total, 2 * int64_t{S - d - 1} + int64_t{v - 1} * P);
      auto microbatch = [&](int64_t k) { return first + (k / group) * P + k % P; };
      auto forward = [&](int64_t k) {
        const int64_t chunk = (k % group) / P;
        out.F(d, chunk * S + d, microbatch(k));
      };
      auto backward = [&](int64_t k) {
        const int64_t chunk = v - 1 - (k % group) / P;
        out.B(d, chunk * S + d, microbatch(k));
      };
      for (int64_t k = 0; k < warmup; ++k) forward(k);
      for (int64_t k = 0; k < total - warmup; ++k) {
        forward(warmup + k);
        backward(k);
      }
      for (int64_t k = total - warmup; k < total; ++k) backward(k);
      s.inflight_bound[d] = std::max(s.inflight_bound[d], std::min(total, warmup + 1));
    }
  }
  out.finish();
  flag_flush(s, m);
  return s;
}

const bool registered = ScheduleRegistry::add({.name = "interleaved",
    .summary = "Megatron interleaved 1F1B, v chunks per device, flush per mini-batch",
    .rank = 70, .flush = true, .accumulates = true, .chunked = true, .accumulation_defaults_to_stages = true, .default_accumulation = "S (devices, not chunks)", .make = make_interleaved});

}  // namespace

}  // namespace stale::detail
