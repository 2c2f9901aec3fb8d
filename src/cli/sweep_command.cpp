#include "src/cli/sweep_command.hpp"

#include <cstdio>

#include "src/commands/sweep_grid.hpp"

namespace stale {

namespace {
// the options parse straight into the command layer's request
SweepRequest g;
bool g_quiet = false;
}  // namespace

void add_sweep_command(CLI::App& app) {
  auto* s = app.add_subcommand("sweep", "run a grid of configs (resumable, parallel, shardable) and index the results");
  s->add_option("sweep", g.path, "sweep TOML file (base, [set], [grid], [zip], epsilon, unread)")->required();
  s->add_option("overrides", g.overrides, "key=value settings applied to every run, like [set] (e.g. method.updates=400)");
  s->add_option("--jobs,-j", g.options.jobs, "runs at once, 1 to 1024 (default 0: one per core)");
  s->add_flag("--isolate", g.options.isolate,
              "run each grid point in its own `stale run` process (crash isolation; slower: start-up, data and "
              "constants per run)");
  s->add_option("--ensemble", g.options.ensemble,
                "most runs per lockstep ensemble, 1 to 64: grid points that differ only in method.lr advance together, "
                "one GEMM over their columns (default 8; 1 = every run alone, as with --isolate)");
  s->add_option("--shard", g.shard, "run the deterministic share i of N (i/N), e.g. a Slurm array task");
  s->add_option("--out,-o", g.options.out_dir, "output folder (default: sweeps/<sweep name>)");
  s->add_flag("--dry-run", g.options.dry_run, "list the runs that would run, run nothing");
  s->add_flag("--index-only", g.options.index_only, "rebuild index.csv/index.h5 from the run files, run nothing");
  s->add_flag("--quiet,-q", g_quiet, "no progress bar");
}

int run_sweep_command() {
  g.options.progress = !g_quiet;
  const SweepOutcome o = sweep_grid(g);
  const SweepSummary& s = o.summary;
  if (!g.options.dry_run)
    std::printf("sweep %s: %lld runs in the grid, %lld in this shard: %lld ran, %lld skipped (done), %lld failed; index %s\n",
                g.path.c_str(), static_cast<long long>(s.total - s.duplicates), static_cast<long long>(s.in_shard),
                static_cast<long long>(s.ran), static_cast<long long>(s.skipped), static_cast<long long>(s.failed),
                s.index_csv.c_str());
  return s.failed > 0 ? 1 : 0;
}

}  // namespace stale
