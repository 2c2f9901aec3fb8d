// Looped breadth-first pipeline (Lamy-Poirier, 2023, "Breadth-First Pipeline Parallelism",
// arXiv:2211.05953; PyTorch's ScheduleLoopedBFS, which the order below matches op for op,
// tests/python/test_schedule_conformance.py).
//  - placement as `interleaved`: v chunks per device, chunk c of device d is block c·S + d;
//  - per mini-batch of n micro-batches, device d runs every forward of its chunk 0 (micro-batch
//    order), then of chunk 1, …, then the backwards chunk v − 1 first, each chunk's
//    micro-batches newest first: GPipe per chunk, looped over the chunks;
//  - so every device holds all n·v chunk activations at the turn (GPipe's memory), and with
//    t_F = t_B and n >= S a mini-batch takes 2(v·n + S − 1) chunk slots, the bubble
//    (S − 1)/(v·n + S − 1) of interleaved 1F1B;
//  - flush: each block steps after its last B of the mini-batch.
#include "src/pipeline/schedule_builder.hpp"

namespace stale::detail {

namespace {

Schedule make_looped_bfs(const ScheduleParams& p) {
  Schedule s = base_schedule("looped-bfs", p);
  const int S = s.stages, v = s.chunks;
  const int64_t M = s.microbatches, m = s.accumulation;
  ProgramBuilder out(s, 2 * M * v);
  for (int d = 0; d < S; ++d)
    for (int64_t first = 0; first < M; first += m) {
      const int64_t n = std::min(m, M - first);
      for (int c = 0; c < v; ++c)
        for (int64_t i = 0; i < n; ++i) out.F(d, c * S + d, first + i);
      for (int c = v - 1; c >= 0; --c)
        for (int64_t i = n - 1; i >= 0; --i) out.B(d, c * S + d, first + i);
    }
  out.finish();
  flag_flush(s, m);
  s.inflight_bound.assign(S, v * std::min(m, M));
  return s;
}

const bool registered = ScheduleRegistry::add({.name = "looped-bfs",
    .summary = "looped breadth-first: v chunks per device, all F chunk by chunk then all B, flush (Lamy-Poirier 2023)",
    .rank = 72, .flush = true, .accumulates = true, .chunked = true, .accumulation_defaults_to_stages = true,
    .default_accumulation = "S (devices, not chunks)", .make = make_looped_bfs});

}  // namespace

}  // namespace stale::detail
