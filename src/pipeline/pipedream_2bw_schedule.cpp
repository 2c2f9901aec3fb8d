// PipeDream-2BW (Narayanan et al., ICML 2021, "Memory-Efficient Pipeline-Parallel DNN
// Training"): double-buffered weight updates.
//  - 1F1B without flush, Megatron memory: stage s holds at most S − s micro-batches;
//  - each stage steps after every m = `accumulation` micro-batches with their accumulated
//    gradient (the step flag sits on the m-th B);
//  - F reads the newest version; B uses the version its F saw (stashing), so with m >= S
//    at most two versions of a block are ever alive (the paper's "2BW"), and the gradient
//    applied at a step was computed on the version one step old.
#include "src/pipeline/schedule_builder.hpp"

namespace stale::detail {

namespace {

Schedule make_2bw(const ScheduleParams& p) { return make_bounded_async_1f1b("2bw", p, true); }

const bool registered = ScheduleRegistry::add({.name = "2bw",
    .summary = "PipeDream-2BW: 1F1B without flush, step every a micro-batches, two stashed versions",
    .rank = 60, .accumulates = true, .accumulation_defaults_to_stages = true, .default_accumulation = "S (the least for which two weight versions suffice)", .make = make_2bw});

}  // namespace

}  // namespace stale::detail
