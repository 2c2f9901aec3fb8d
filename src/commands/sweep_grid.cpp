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

}  // namespace stale
