#pragma once
// `run`: one config, run to its run file or kept in memory. The one implementation behind
// `stale run` and stale.run(): the front ends put their arguments into a RunRequest, and
// prepare_run makes every decision a front end could otherwise make on its own — which config
// (a file, the defaults, or a .partial's own), what goes with a resume and what does not, where
// the .partial of `--resume RUN.h5` is, the unread keys dropped on request, progress from
// log.progress, the config of a model defined in Python or of arrays X, y — so that both refuse
// the same input with the same line. The runner (src/run/runner.hpp) then makes every check of
// the config itself, before anything is built, on every path: a run file, an ensemble's column,
// a run kept in memory.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "objectives/linear/linear_data.hpp"
#include "objectives/objective.hpp"
#include "src/config/config.hpp"
#include "src/run/run_in_memory.hpp"
#include "src/run/runner.hpp"

namespace stale {

struct RunRequest {
  // a fresh run: a TOML file, or (Python's config=None or a dict) the defaults, then the overrides
  std::string config_path;
  bool defaults = false;
  std::vector<std::string> overrides;  // "key=value", "~key"
  bool drop_unread = false;            // reset the keys the run would not read instead of refusing them
  // the run file; empty: log.out, else runs/<config stem>[_<overrides>].h5 (default_run_path),
  // or, for a run kept in memory, none
  std::string out;
  bool keep_in_memory = false;        // without out: keep the run in memory, write no file (Python)
  bool force = false;                 // replace a finished run / discard a .partial; a resume: continue despite changes
  bool continue_checkpoint = false;   // continue from OUT.partial when it holds a checkpoint of this very config
  std::optional<bool> progress;       // unset: log.progress (a resume: on)
  // a resume: RUN.h5 or RUN.h5.partial, continued with its own config and path (so neither a
  // config, overrides nor out goes with it)
  std::string resume;
  // what only the Python module can pass: a model defined in Python (its stage count), whose
  // objective the caller builds; arrays X, y, whose objective objective_of_arrays builds
  std::optional<int64_t> model_stages;
  bool arrays = false;
};

struct PreparedRun {
  // a fresh run: the resolved config; a resume: the .partial's stored config when it could be
  // read here (the runner reads it again, under the run's lock, and reports what is wrong)
  Config config;
  std::vector<std::string> dropped;  // the keys drop_unread reset
  std::string out;                   // as requested (empty: the default path)
  bool in_memory = false;            // a fresh run kept in memory: run_kept_in_memory, else run_to_file
  RunOptions options;                // everything run_experiment takes; options.objective: the caller's
};

PreparedRun prepare_run(const RunRequest& request);

// The objective of arrays X, y (copied into `data` by the caller): checked like a data file's
// (objectives/data/data_file.hpp) and partitioned into batches like a generator's; `cfg` is
// prepare_run's (objective.generator = "file").
std::shared_ptr<const Objective> objective_of_arrays(const Config& cfg, std::shared_ptr<LinearData> data);

// The run, to its run file (`stale run`; stale.run(out=...); every resume)
RunResult run_to_file(const PreparedRun& run);
// The run kept in memory, no file (stale.run() without out=): only a fresh run
InMemoryRun run_kept_in_memory(const PreparedRun& run);

}  // namespace stale
