#include "src/run/checkpoint.hpp"

#include <filesystem>

#include "src/core/error.hpp"
#include "src/io/run_file.hpp"

namespace stale {

bool has_checkpoint_of(const std::string& run_path, const Config& cfg) {
  const std::string partial = run_path + ".partial";
  if (!std::filesystem::exists(partial)) return false;
  try {
    const PartialRun p = read_partial_run(partial);
    return p.has_checkpoint && p.config == cfg.to_toml();
  } catch (const UserError&) {
    return false;  // not a run file we can continue: it is run afresh
  }
}

RunResult run_or_resume(const Config& cfg, const std::string& run_path, RunOptions options) {
  // decided by run_experiment once it holds the run's lock (the shared objective fits a
  // checkpoint of the same config)
  options.continue_checkpoint = true;
  return run_experiment(cfg, run_path, options);
}

}  // namespace stale
