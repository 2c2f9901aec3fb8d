#pragma once
// Parameter sweeps (issue: sweeps and theory audits). A sweep file names a base config and
// axes over any config key:
//
//   base = "e1_random_quadratic.toml"      # relative to the sweep file
//   epsilon = 1e-2                         # time-to-ε threshold on f − f_* (optional)
//   [set]                                  # fixed overrides (optional)
//   "method.updates" = 3200
//   [grid]                                 # Cartesian product, last key varies fastest
//   "method.lr" = [0.015625, 0.03125]
//   seed = [0, 1, 2]
//   [zip]                                  # equal-length lists varied together
//   "objective.stages" = [4, 8]
//   "delay.max" = [14, 60]
//
// Every run is named by a hash of its resolved config (so key order in the sweep file, or
// the order of runs, never renames a run), written to DIR/runs/<hash>.h5, and skipped when
// that file exists: a killed sweep resumes where it stopped. Runs execute inside this
// process on a pool of worker threads (sweep_engine.cpp), or each in a `stale run` child with
// --isolate. --shard i/N takes the runs whose grid position p has p mod N = i — with
// ensembles, every run of the ensemble whose first run's position has. The index
// (DIR/index.csv, DIR/index.h5) has one row per grid point, read back from the run files.
//
// Files: sweep_spec.cpp (the sweep file, run names), sweep_engine.cpp (running the grid),
// process_pool.cpp (--isolate), sweep_index.cpp (the index).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/config/config.hpp"
#include "src/io/metrics_schema.hpp"

namespace stale {

struct SweepRun {
  int64_t position = 0;                               // in the expanded grid
  std::vector<std::pair<std::string, std::string>> values;  // the varying keys, as TOML text
  Config config;                                      // base + set + values, resolved
  std::string hash;                                   // 16 hex digits of the resolved config
  // the position of the earlier grid point that resolves to the same run (the same hash: a
  // literal duplicate, keys a point does not read with unread = "drop", an axis over log.out
  // or log.progress); -1 when this point is the first. It runs once; the index names both
  int64_t duplicate_of = -1;
};

struct Sweep {
  std::string path;                  // the sweep file
  std::string base;                  // resolved base config path
  double epsilon = 0;                // time-to-ε threshold (0: not computed)
  std::vector<std::string> axes;     // varying keys, grid then zip, in expansion order
  std::vector<SweepRun> runs;
};

// `overrides`: key=value settings from the command line, applied like [set] (after it)
Sweep load_sweep(const std::string& path, const std::vector<std::string>& overrides = {});
// the same run hash for the same resolved config, whatever the key order that produced it
std::string config_hash(const Config& cfg);

struct SweepOptions {
  std::string out_dir;   // default: sweeps/<sweep file stem>
  int jobs = 0;          // runs at once; 0 = one per core
  bool isolate = false;  // each run in its own `stale run` process
  // most columns of a lockstep ensemble (docs/design.md "Ensembles"): in-process runs that
  // differ only in method.lr run together; 1 = each alone. Groups are formed over the whole
  // grid, so a run's arithmetic never depends on --jobs, shards or what a resume skips.
  int ensemble = 8;
  int shard_index = 0, shard_count = 1;
  bool dry_run = false;
  bool index_only = false;
  bool progress = true;
  std::string stale_binary;  // the executable that runs each config (default: this one)
};

struct SweepSummary {
  int64_t total = 0, in_shard = 0, skipped = 0, ran = 0, failed = 0;
  int64_t duplicates = 0;  // grid points that are the same run as an earlier point (run once)
  std::string index_csv;
};

// The runs of the grid in the groups they execute in: grid points that differ only in
// method.lr, run by a method and objective that batch columns (rpd and the schedule methods on
// the linear models' CPU twin), in groups of at most `max_columns`, split evenly; every other
// run alone. Ordered by the grid position of each group's first run.
std::vector<std::vector<const SweepRun*>> ensemble_groups(const Sweep& sweep, int max_columns);

// "i/N" → (i, N); throws UserError naming --shard
void parse_shard(const std::string& text, int& index, int& count);
// jobs (0: one per core, else at most 1024), ensemble (1 to 64) and the shard in range: a
// UserError naming the option of both front ends. run_sweep calls it first.
void check_sweep_options(const SweepOptions& options);
SweepSummary run_sweep(const Sweep& sweep, const SweepOptions& options);
// writes `text` to PATH.partial.<pid> and renames it: a reader never sees half a file
void write_text_file(const std::string& path, const std::string& text);
// writes DIR/index.csv and DIR/index.h5 from whatever run files exist
// `finished`: summaries of runs that finished in this process, by run hash (run_summary_of);
// every other run's row is read from its file
void write_sweep_index(const Sweep& sweep, const std::string& out_dir,
                       const std::map<std::string, RunSummary>& finished = {});

}  // namespace stale
