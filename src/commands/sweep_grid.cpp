#include "src/commands/sweep_grid.hpp"

namespace stale {

SweepOutcome sweep_grid(const SweepRequest& req) {
  SweepOptions o = req.options;
  parse_shard(req.shard, o.shard_index, o.shard_count);
  check_sweep_options(o);  // before the sweep file: a bad option is the error, whatever the file
  const Sweep sweep = load_sweep(req.path, req.overrides);
  SweepOutcome out;
  out.summary = run_sweep(sweep, o);
  out.axes = sweep.axes;
  return out;
}

std::vector<SweepRun> sweep_plan(const std::string& path, const std::vector<std::string>& overrides,
                                 const std::string& shard) {
  int index = 0, count = 1;
  parse_shard(shard, index, count);
  const Sweep sweep = load_sweep(path, overrides);
  std::vector<SweepRun> out;
  for (const SweepRun& r : sweep.runs)
    if (r.position % count == index) out.push_back(r);  // every run alone: its own position picks its shard
  return out;
}

}  // namespace stale
