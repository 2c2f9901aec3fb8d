#pragma once
// `sweep`: a grid of configs run in this process (or in `stale run` children with --isolate),
// finished runs skipped, the index written (src/sweep/sweep.hpp has the engine). The one
// implementation behind `stale sweep` and stale.sweep(): the options are checked before the
// sweep file is read, the shard parsed, the engine run.
#include <string>
#include <vector>

#include "src/sweep/sweep.hpp"

namespace stale {

struct SweepRequest {
  std::string path;                    // the sweep file
  std::vector<std::string> overrides;  // key=value applied to every run, like [set]
  std::string shard = "0/1";           // i/N: this process's share of the grid
  SweepOptions options;                // out_dir, jobs, isolate, ensemble, dry_run, index_only, progress
};

struct SweepOutcome {
  SweepSummary summary;
  std::vector<std::string> axes;  // the varying keys, grid then zip
};

SweepOutcome sweep_grid(const SweepRequest& request);

// The runs of a sweep file in this shard, each alone, as `stale sweep` plans them (position,
// varying values, resolved config, hash = the run file's name, duplicate_of): the plan a front
// end runs itself when the runs need what a C++ worker cannot hold (stale.sweep(model=...))
std::vector<SweepRun> sweep_plan(const std::string& path, const std::vector<std::string>& overrides,
                                 const std::string& shard);

}  // namespace stale
