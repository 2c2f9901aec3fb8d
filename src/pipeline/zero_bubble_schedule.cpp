// Zero Bubble H1 (Qi et al., ICLR 2024, "Zero Bubble Pipeline Parallelism"): the backward
// pass is split into B (gradient w.r.t. the stage input, on the critical path) and W
// (gradient w.r.t. the weights, which nothing downstream waits for), and W is moved into
// what would be bubbles.
//  - per mini-batch of n = `accumulation` micro-batches, stage s runs min(S − 1 − s, n)
//    warm-up F, then F,B pairs, then the cool-down B, exactly as 1F1B-flush;
//  - stage s defers its W by s micro-batches: W(i − s) follows B(i), and the last s W fill
//    the tail, where 1F1B idles while B travels back to stage 0;
//  - so every stage holds at most S activations (F until W), the peak of 1F1B, and with
//    t_F = t_B = t_W the makespan is 3n + S − 1, a bubble of (S − 1)(t_F + t_B − t_W)
//    against 1F1B's (S − 1)(t_F + t_B + t_W);
//  - flush: each block steps after its last W of the mini-batch.
#include "src/pipeline/schedule_builder.hpp"

namespace stale::detail {

namespace {

Schedule make_zero_bubble_h1(const ScheduleParams& p) {
  Schedule s = base_schedule("zb-h1", p);
  s.split_backward = true;
  const int S = s.stages;
  const int64_t M = s.microbatches, m = s.accumulation;
  ProgramBuilder out(s, 3 * M);
  s.inflight_bound.assign(S, std::min<int64_t>(S, std::min(m, M)));
  for (int st = 0; st < S; ++st) {
    for (int64_t first = 0; first < M; first += m) {
      const int64_t n = std::min(m, M - first);
      const int64_t warmup = std::min<int64_t>(S - 1 - st, n);
      int64_t next_w = 0;
      auto backward = [&](int64_t i) {
        out.B(st, st, first + i);
        if (i >= st) out.W(st, st, first + next_w++);
      };
      for (int64_t i = 0; i < warmup; ++i) out.F(st, st, first + i);
      for (int64_t i = 0; i < n - warmup; ++i) {
        out.F(st, st, first + warmup + i);
        backward(i);
      }
      for (int64_t i = n - warmup; i < n; ++i) backward(i);
      while (next_w < n) out.W(st, st, first + next_w++);
    }
  }
  out.finish();
  flag_flush(s, m);
  return s;
}

const char* const kPerDevice = "S (one micro-batch per device: the fewest that keep every device busy)";
const bool registered = ScheduleRegistry::add({.name = "zb-h1",
    .summary = "zero bubble H1: B split into B and W, 1F1B memory, W fills bubbles, flush",
    .rank = 80, .flush = true, .split_backward = true, .accumulates = true, .accumulation_defaults_to_stages = true, .default_accumulation = kPerDevice, .make = make_zero_bubble_h1});

}  // namespace

}  // namespace stale::detail
