// DualPipeV: the V-shaped ("cut in half") variant of DualPipe (DeepSeek-AI, "DeepSeek-V3
// Technical Report", arXiv:2412.19437, 2024, §3.2.1; the V variant from the open-source
// deepseek-ai/DualPipe). PyTorch runs it as ScheduleDualPipeV; the order below is checked op
// for op against it by tests/python/test_schedule_conformance.py.
//  - V placement as zb-v: device d holds chunk d (block d) and chunk 2S − 1 − d (block
//    2S − 1 − d);
//  - the backward is split (B input gradient, W weight gradient) where the schedule fills
//    bubbles with W, and whole elsewhere: a whole backward is written B immediately followed
//    by its W; a split B's W waits in a first-in-first-out queue for the next "W" slot;
//  - the steady state runs F&B pairs: the forward of one chunk overlapped with the whole
//    backward of the other (DualPipe overlaps the pair's computation with its all-to-all
//    communication). A pair is written F (flagged op_flag::Overlap), B, W, and the cost
//    model's `overlap` gives its duration;
//  - per mini-batch of n >= 2S micro-batches, device d runs, with a = block d, b = block
//    2S − 1 − d, each op kind taking its block's micro-batches in order (P(x, y): the pair
//    F(x) with the whole backward of y; B̃: a whole backward, B W; B': a split B):
//      1. 2(S − d − 1) × F(a)
//      2. (d + 1) × [F(a) F(b)]
//      3. (S − d − 1) × [B'(b) W F(b)]
//      4. (n − 2S + d + 1) × [P(a, b) P(b, a)]; device S − 1 runs its first P(a, b) as
//         F(a) B̃(b), not overlapped (it shortens the bubble)
//      5. (S − d − 1) × [B̃(b) P(b, a)]
//      6. (d + 1) × [B(b) B(a)], each B whole until the middle step (d + 1) / 2, from which
//         it is split (for odd d from that step's B(b), for even d from its B(a))
//      7. (S − d − 1) × [W B(a)], B split when step 6 switched, else whole
//      8. (d + 1) × W
//    where W alone is the oldest queued W, if any;
//  - n >= 2S is required (PyTorch refuses fewer), and is the default accumulation;
//  - flush: each block steps after its last W of the mini-batch.
#include <deque>
#include <utility>

#include "src/config/config.hpp"
#include "src/pipeline/schedule_builder.hpp"

namespace stale::detail {

namespace {

Schedule make_dualpipe_v(const ScheduleParams& p) {
  Schedule s = base_schedule("dualpipev", p);
  s.split_backward = true;
  s.v_shape = true;
  const int S = s.stages;
  const int64_t M = s.microbatches, m = s.accumulation;
  // every mini-batch has n >= 2S micro-batches (resolve() checks min_microbatches_per_device)
  ProgramBuilder out(s, 6 * M);
  for (int d = 0; d < S; ++d) {
    const int block[2] = {d, 2 * S - 1 - d};
    for (int64_t first = 0; first < M; first += m) {
      const int64_t n = std::min(m, M - first);
      int64_t nextF[2] = {}, nextB[2] = {};
      std::deque<std::pair<int, int64_t>> pending_w;  // (chunk, micro-batch) of split Bs
      auto F = [&](int c) { out.F(d, block[c], first + nextF[c]++); };
      auto whole_B = [&](int c) {
        const int64_t mb = first + nextB[c]++;
        out.B(d, block[c], mb);
        out.W(d, block[c], mb);
      };
      auto split_B = [&](int c) {
        const int64_t mb = first + nextB[c]++;
        out.B(d, block[c], mb);
        pending_w.emplace_back(c, mb);
      };
      auto queued_W = [&] {
        if (pending_w.empty()) return;
        out.W(d, block[pending_w.front().first], pending_w.front().second);
        pending_w.pop_front();
      };
      auto pair = [&](int f, int b) {
        F(f);
        out.flag_last(d, op_flag::Overlap);
        whole_B(b);
      };
      const int rest = S - d - 1;
      for (int i = 0; i < 2 * rest; ++i) F(0);
      for (int i = 0; i <= d; ++i) F(0), F(1);
      for (int i = 0; i < rest; ++i) split_B(1), queued_W(), F(1);
      for (int64_t i = 0; i < n - 2 * S + d + 1; ++i) {
        if (i == 0 && d == S - 1) F(0), whole_B(1);
        else pair(0, 1);
        pair(1, 0);
      }
      for (int i = 0; i < rest; ++i) whole_B(1), pair(1, 0);
      bool split = false;
      for (int i = 0; i <= d; ++i) {
        if (i == (d + 1) / 2 && d % 2 == 1) split = true;
        split ? split_B(1) : whole_B(1);
        if (i == (d + 1) / 2 && d % 2 == 0) split = true;
        split ? split_B(0) : whole_B(0);
      }
      for (int i = 0; i < rest; ++i) queued_W(), split ? split_B(0) : whole_B(0);
      for (int i = 0; i <= d; ++i) queued_W();
      STALE_CHECK(pending_w.empty() && nextF[0] == n && nextF[1] == n && nextB[0] == n && nextB[1] == n,
                  "dualpipev: a chunk missed micro-batches");
    }
  }
  out.finish();
  count_inflight(s);
  flag_flush(s, m);
  return s;
}

const bool registered = ScheduleRegistry::add({.name = "dualpipev",
    .summary = "DualPipeV: 2 chunks per device in a V, overlapped F&B pairs, B/W split at the ends, flush (DeepSeek-V3)",
    .rank = 87, .flush = true, .split_backward = true, .accumulates = true, .v_shape = true,
    .default_accumulation = "2S (the least DualPipeV takes: one micro-batch per chunk)", .min_microbatches_per_device = 2,
    .overlapped_pairs = true, .make = make_dualpipe_v});

// the pair's overlap as a run's key (the cost model's `overlap`): declared here, beside the one
// schedule that has pairs, so that a run of any other method refuses it as unread and, at its
// default, it is left out of a sweep run's name (no existing run is renamed)
// (below 1 in a run: at 1 a pair's F may take no time, and a zero-length op cannot be ordered
// against its consumer on the next device of the V; `stale schedule --costs overlap=1` simulates it)
const bool keys = add_component_keys({keys::FloatBelow(
    "costs.overlap", 0.0,
    "dualpipev: the share of an F&B pair's shorter part hidden by the overlap: the pair's F costs "
    "t_F − overlap · min(t_F, t_B + t_W) (0 = no overlap; below 1)",
    0.0, 1.0)});

}  // namespace

}  // namespace stale::detail
