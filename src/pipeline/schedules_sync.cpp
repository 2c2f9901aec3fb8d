// The synchronous schedules: every read of a mini-batch sees the same weights, so they have
// no staleness beyond the serialisation of one step into S block updates.
//
// naive: one micro-batch at a time through the whole pipeline (F on stages 0..S−1, then B on
//   S−1..0), a step of each block every `a` micro-batches. Only one stage is ever busy.
// gpipe (Huang et al., NeurIPS 2019): per mini-batch of m = `a` micro-batches, all F in order,
//   then all B in reverse order (the last forward's activations are freshest, as in
//   torchgpipe), then the flush: each block steps after its last B of the mini-batch. Bubble
//   (S − 1)/(m + S − 1) with t_F = t_B. The B order is a convention: PyTorch's ScheduleGPipe
//   takes them oldest first. Same makespan (equal costs), peak activations, iterates and
//   delays; newest first frees the last micro-batch's activations first, oldest first
//   micro-batch 0's (docs/design.md "Schedule"; tests/python/test_schedule_conformance.py).
// 1f1b-flush (PipeDream-Flush, Narayanan et al. 2021; DAPPLE, Fan et al. 2021): stage s does
//   min(S − 1 − s, m) warm-up F, then alternates F and B, then the cool-down B, and flushes
//   per mini-batch. Same bubble as GPipe, but stage s holds at most S − s activations.
#include "src/pipeline/schedule_builder.hpp"

namespace stale::detail {

namespace {

Schedule make_naive(const ScheduleParams& p) {
  Schedule s = base_schedule("naive", p);
  ProgramBuilder out(s, 2 * s.microbatches);
  for (int st = 0; st < s.stages; ++st)
    for (int64_t mb = 0; mb < s.microbatches; ++mb) {
      out.F(st, st, mb);
      out.B(st, st, mb);
    }
  out.finish();
  flag_every(s, s.accumulation);
  s.inflight_bound.assign(s.stages, 1);
  return s;
}

Schedule make_gpipe(const ScheduleParams& p) {
  Schedule s = base_schedule("gpipe", p);
  const int64_t M = s.microbatches, m = s.accumulation;
  ProgramBuilder out(s, 2 * M);
  for (int st = 0; st < s.stages; ++st)
    for (int64_t first = 0; first < M; first += m) {
      const int64_t n = std::min(m, M - first);
      for (int64_t i = 0; i < n; ++i) out.F(st, st, first + i);
      for (int64_t i = n - 1; i >= 0; --i) out.B(st, st, first + i);
    }
  out.finish();
  flag_flush(s, m);
  s.inflight_bound.assign(s.stages, std::min(m, M));
  return s;
}

Schedule make_1f1b_flush(const ScheduleParams& p) {
  Schedule s = base_schedule("1f1b-flush", p);
  const int S = s.stages;
  const int64_t M = s.microbatches, m = s.accumulation;
  ProgramBuilder out(s, 2 * M);
  s.inflight_bound.assign(S, 0);
  for (int st = 0; st < S; ++st) {
    for (int64_t first = 0; first < M; first += m) {
      const int64_t n = std::min(m, M - first);
      const int64_t warmup = std::min<int64_t>(S - 1 - st, n);
      for (int64_t i = 0; i < warmup; ++i) out.F(st, st, first + i);
      for (int64_t i = 0; i < n - warmup; ++i) {
        out.F(st, st, first + warmup + i);
        out.B(st, st, first + i);
      }
      for (int64_t i = n - warmup; i < n; ++i) out.B(st, st, first + i);
    }
    s.inflight_bound[st] = std::min<int64_t>(S - st, std::min(m, M));
  }
  out.finish();
  flag_flush(s, m);
  return s;
}

const char* const kPerDevice = "S (one micro-batch per device: the fewest that keep every device busy)";
const bool registered_naive = ScheduleRegistry::add({.name = "naive",
    .summary = "one micro-batch at a time through the whole pipeline; step every a micro-batches",
    .rank = 10, .accumulates = true, .default_accumulation = "1", .make = make_naive});
const bool registered_gpipe = ScheduleRegistry::add({.name = "gpipe",
    .summary = "all F then all B per mini-batch of a micro-batches, flush (Huang et al. 2019)",
    .rank = 20, .flush = true, .accumulates = true, .accumulation_defaults_to_stages = true, .default_accumulation = kPerDevice, .make = make_gpipe});
const bool registered_1f1b_flush = ScheduleRegistry::add({.name = "1f1b-flush",
    .summary = "warm-up S-1-s F, then 1F1B, cool-down, flush per mini-batch (PipeDream-Flush / DAPPLE)",
    .rank = 30, .flush = true, .accumulates = true, .accumulation_defaults_to_stages = true, .default_accumulation = kPerDevice, .make = make_1f1b_flush});

}  // namespace

}  // namespace stale::detail
