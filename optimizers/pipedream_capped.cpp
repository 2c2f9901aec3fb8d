// PipeDream with per-stage in-flight caps — asynchronous 1F1B with weight stashing where stage s
// (0-based) holds at most S − s micro-batches, as real PipeDream does (Narayanan et al. 2019,
// §3.3); `pipedream` is the RPD authors' rule, which caps only stage 0 with S (Ilin & Richtárik
// 2026, docs/theory.md §4).
//
//   micro-batch mb, block a (stage a updates block a after every backward pass):
//     w_{k+1}^(a) = w_k^(a) − γ ∇_{w^(a)} f_{mb}(z),   z^(j) = the version F(j, mb) read
//
// The update is pipedream's; only the schedule's warm-up differs (src/pipeline/
// pipedream_capped_schedule.cpp), and with it the delays and the stashed versions per stage,
// which fall monotonically with s (results/pipedream_delays.md). Batches are read cyclically.
#include "optimizers/method_registry.hpp"

namespace stale {
namespace {
const bool registered = MethodRegistry::add({"pipedream-capped", "pipedream with real PipeDream's caps: stage s holds at most S - s micro-batches in flight (Narayanan et al. 2019)", 16, MethodKind::ScheduleDriven, "pipedream-capped",
                                             true, false, {},
                                             schedule_method_factory("pipedream-capped", "pipedream-capped", true, false)});
}  // namespace
}  // namespace stale
