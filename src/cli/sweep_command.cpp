#include "src/cli/sweep_command.hpp"

#include <cstdio>

#include "src/sweep/sweep.hpp"

namespace stale {

namespace {
struct Args {
  std::string file, out, shard = "0/1";
  std::vector<std::string> overrides;
  int jobs = 0, ensemble = 8;
  bool dry_run = false, index_only = false, quiet = false, isolate = false;
} g;
}  // namespace

void add_sweep_command(CLI::App& app) {
  auto* s = app.add_subcommand("sweep", "run a grid of configs (resumable, parallel, shardable) and index the results");
  s->add_option("sweep", g.file, "sweep TOML file (base, [set], [grid], [zip], epsilon, unread)")->required();
  s->add_option("overrides", g.overrides, "key=value settings applied to every run, like [set] (e.g. method.updates=400)");
  s->add_option("--jobs,-j", g.jobs, "runs at once (default: one per core)")->check(CLI::Range(1, 1024));
  s->add_flag("--isolate", g.isolate,
              "run each grid point in its own `stale run` process (crash isolation; slower: start-up, data and "
              "constants per run)");
  s->add_option("--ensemble", g.ensemble,
                 "most runs per lockstep ensemble: grid points that differ only in method.lr advance together, one "
                 "GEMM over their columns (default 8; 1 = every run alone, as with --isolate)")
      ->check(CLI::Range(1, 64));
  s->add_option("--shard", g.shard, "run the deterministic share i of N (i/N), e.g. a Slurm array task");
  s->add_option("--out,-o", g.out, "output folder (default: sweeps/<sweep name>)");
  s->add_flag("--dry-run", g.dry_run, "list the runs that would run, run nothing");
  s->add_flag("--index-only", g.index_only, "rebuild index.csv/index.h5 from the run files, run nothing");
  s->add_flag("--quiet,-q", g.quiet, "no progress bar");
}

int run_sweep_command() {
  const Sweep sw = load_sweep(g.file, g.overrides);
  SweepOptions o;
  o.out_dir = g.out;
  o.jobs = g.jobs;
  o.isolate = g.isolate;
  o.ensemble = g.ensemble;
  parse_shard(g.shard, o.shard_index, o.shard_count);
  o.dry_run = g.dry_run;
  o.index_only = g.index_only;
  o.progress = !g.quiet;
  const SweepSummary s = run_sweep(sw, o);
  if (!g.dry_run)
    std::printf("sweep %s: %lld runs in the grid, %lld in this shard: %lld ran, %lld skipped (done), %lld failed; index %s\n",
                g.file.c_str(), static_cast<long long>(s.total - s.duplicates), static_cast<long long>(s.in_shard),
                static_cast<long long>(s.ran), static_cast<long long>(s.skipped), static_cast<long long>(s.failed),
                s.index_csv.c_str());
  return s.failed > 0 ? 1 : 0;
}

}  // namespace stale
