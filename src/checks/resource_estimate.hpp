#pragma once
// What a run will take, estimated from the resolved config alone, and checked before anything
// is allocated or any file is created (issue #12): a config that asks for 7 TiB (objective.dim =
// 1e12), a version store of 10^12 versions (delay.max), 10^9 model replicas (method.replicas) or
// a run file larger than the disk is a one-line UserError naming the keys that drive the size,
// exit code 2, instead of std::bad_alloc after minutes or a full disk.
//
// The estimate counts the large allocations only, each a product of config keys:
//   data                n × d doubles (the generators' work arrays included)
//   d × d matrices      the Hessian/Gram that L, μ and f_* are computed from (linear models)
//   version store       (δ + 1) × d doubles (rpd over a delay model: the ring holds δ + 1 versions)
//   stashed weights     S × d doubles (schedule methods keep up to S versions of each block)
//   replicas            R × d doubles, times the update rule's state (localsgd)
//   schedule as data    ops of the simulated schedule and their timeline (schedule methods,
//                       delay.name = "schedule")
//   delay table         min(K·S, 10^7) int64 (the /delays dataset is buffered)
//   activations         charlm: B·T·(20E + 2·heads·T) per transformer block plus the logits,
//                       for every micro-batch in flight (S for schedule methods)
// and, on disk, the run file: metrics rows (K / log.every), iterate rows (K / cadence × d) and
// the delay table. LIBSVM data is sized by its reader (the feature count is in the file).
// Memory is compared with MemAvailable or $STALE_MEMORY_LIMIT (src/core/memory.hpp); the run
// file with the free space of the folder it goes to.
#include <string>
#include <vector>

#include "src/config/config.hpp"
#include "src/core/memory.hpp"

namespace stale {

// a schedule op (8 bytes) plus what the simulator records for it (start, end, the reads it
// resolves): a deliberate over-count, so that a schedule of 10^9 ops is refused up front
inline constexpr double kScheduleOpBytes = 48.0;

struct ResourceEstimate {
  std::vector<ResourceItem> memory;  // large allocations
  std::vector<ResourceItem> disk;    // the run file
  double memory_bytes() const;
  double disk_bytes() const;
};

// parameters: the objective's parameter count where its registry entry has no footprint (a
// Python model's, known once it is built: check_resources_of); 0 = the entry's footprint
ResourceEstimate estimate_resources(const Config& cfg, double parameters = 0);

// Throws a one-line UserError naming the keys of the largest items when the estimate exceeds
// the memory budget, or the run file exceeds the free space where run_path would be written
// (run_path empty: log.out, else runs/). Call it before the objective is built.
void check_resources(const Config& cfg, const std::string& run_path = "", double parameters = 0);
// the same once the objective exists, for one whose registry entry reports no footprint (a Python
// model: its size is the model's, not the config's); nothing for the others, checked before
void check_resources_of(const Config& cfg, const std::string& run_path, int64_t parameters);

}  // namespace stale
