#pragma once
// The schedule file written by `stale schedule --out FILE.h5` (docs/design.md "The run file",
// group /schedule), readable with plain h5py:
//
//   /                 attrs: file_kind = "stale schedule", schema_version, schedule, stages,
//                     chunks, blocks, microbatches, accumulation, replicas, local_steps,
//                     stash, split_backward, costs (the cost model's key=value text)
//   /schedule         op table in device-program order: start, end (float64), stage (device),
//                     block, kind (0 F, 1 B, 2 W), microbatch, flags (1 step, 2 average);
//                     attrs makespan, bubble_fraction (overall), kinds = "F,B,W";
//                     per-stage datasets bubble_fraction, busy, peak_inflight, peak_versions,
//                     inflight_bound
//   /updates          the serialised block updates: index (k per replica), block, replica,
//                     microbatch, oldest, start, end
//   /delays           [K, blocks] int64, forward reads (simulator.hpp gives the convention)
//   /delays_backward  [K, blocks] where some backward read differs (no-stash schedules)
//   /delay_summary    per-block vectors count, {max,mean}_by_{update,read}_block, and the
//                     same for the steady state (steady_*); max, mean [blocks, blocks] by
//                     (updating block, read block) when the simulation kept them (delay_pairs);
//                     max_crossed, updates_per_block; attrs max_delay, mean_delay, updates,
//                     steady_max_delay, steady_mean_delay, steady_updates, steady_margin
//   /reads            forward_index, forward_version, backward_index, backward_version as
//                     [M, blocks] (when kept and not too big)
// Tables with more than `max_table_entries` cells are left out (the summary always stays),
// and attribute `omitted` on the root lists what was.
//
// This lives in src/io because it is the only layer that includes HDF5; it uses only the
// data members and inline accessors of the pipeline types, so stale_io needs no link to
// stale_pipeline.
#include <hdf5.h>

#include <cstdint>
#include <string>

#include "src/pipeline/schedule.hpp"
#include "src/pipeline/simulator.hpp"

namespace stale {

struct ScheduleFileOptions {
  std::string costs;                        // CostModel::describe()
  int64_t max_table_entries = 10'000'000;   // same threshold as the run log's delay table
  bool timeline = true;                     // write the op table
};

// The /schedule group (op table when `timeline`, makespan, bubbles, peak memory) under
// `parent`: shared by the schedule file and the run file of a schedule-driven method.
// Returns whether the op table was written.
bool write_schedule_group(hid_t parent, const Schedule& s, const SimResult& r, bool timeline);

// Written to PATH.partial and renamed when complete.
void write_schedule_file(const std::string& path, const Schedule& s, const SimResult& r,
                         const ScheduleFileOptions& options = {});

}  // namespace stale
