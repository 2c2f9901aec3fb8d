// PACI (Elam et al. 2026, "Breaking the Bubble"; docs/theory.md §5): asynchronous 1F1B with the
// flush removed, so the pipeline never drains between global batches.
//  - stage s (0-indexed) holds at most S − s micro-batches in flight (Megatron's 1F1B memory);
//  - backward first: a stage runs B whenever one is ready, else F if its limit allows;
//  - each stage steps its own optimizer after every `a` backward passes (a = micro-batches
//    per global batch); no barrier, no all-reduce;
//  - no weight stashing: F reads the block as it is at F time, B as it is at B time.
// So a micro-batch crosses at most ⌈(S − 1 − s)/a⌉ updates of stage s between its F and B.
#include "src/pipeline/schedule_builder.hpp"

namespace stale::detail {

namespace {

Schedule make_paci(const ScheduleParams& p) { return make_bounded_async_1f1b("paci", p, false); }

const bool registered = ScheduleRegistry::add({.name = "paci",
    .summary = "asynchronous 1F1B, stage s holds S-s, no stashing, step every a B (docs/theory.md 5)",
    .rank = 50, .accumulates = true, .default_accumulation = "1", .make = make_paci});

}  // namespace

}  // namespace stale::detail
