#include "src/commands/run_config.hpp"

#include <filesystem>

#include "objectives/data/data_file.hpp"
#include "objectives/objective_factory.hpp"
#include "objectives/objective_registry.hpp"
#include "objectives/python_model_entry.hpp"
#include "src/backend/backend.hpp"
#include "src/config/log_params.hpp"
#include "src/core/error.hpp"
#include "src/io/run_file.hpp"
#include "src/checks/config_rules.hpp"

namespace stale {

namespace {

// RUN.h5.partial for RUN.h5 (and for itself)
std::string partial_of(const std::string& resume) {
  const bool suffix = resume.size() > 8 && resume.compare(resume.size() - 8, 8, ".partial") == 0;
  return suffix ? resume : resume + ".partial";
}

// A config's objective.* keys made to describe a model defined in Python: objective.name =
// kPythonModelObjective, objective.stages = the model's stages; keys the model decides itself refused when given.
void describe_python_model(Config& cfg, int64_t stages) {
  const std::string python = kPythonModelObjective;
  if (cfg.is_set("objective.name") && cfg.get_string("objective.name") != python)
    config_error("objective.name", "\"" + cfg.get_string("objective.name") + "\" with model=: the model is the objective; "
                                       "leave objective.name unset or \"" + python + "\"");
  if (cfg.is_set("objective.stages") && cfg.get_int("objective.stages") != stages)
    config_error("objective.stages", std::to_string(cfg.get_int("objective.stages")) + " but the model has " +
                                         std::to_string(stages) + " stages; leave objective.stages unset");
  // a resolved config (a sweep's configs/HASH.toml) states every key: its default is no choice
  if (cfg.is_set("objective.batch_size") &&
      cfg.get_int("objective.batch_size") != std::get<int64_t>(require_key("objective.batch_size", "").fallback))
    config_error("objective.batch_size", "a model defined in Python brings its own batches (num_batches, batch_rows); "
                                         "leave objective.batch_size unset");
  cfg.apply_override("objective.name=\"" + python + "\"");
  cfg.apply_override("objective.stages=" + std::to_string(stages));
}

// A config made to describe arrays X, y passed from Python: the data come from the call, not
// from a generator, and the resolved config says so; only the linear models take them.
void describe_arrays(Config& cfg) {
  if (!cfg.is_set("objective.generator")) cfg.apply_override("objective.generator=\"file\"");
  if (cfg.get_string("objective.generator") != "file")
    config_error("objective.generator", "\"" + cfg.get_string("objective.generator") +
                                            "\" generates its own data; with arrays X, y leave it unset or \"file\"");
  if (cfg.get_string("objective.data").empty()) cfg.apply_override("objective.data=\"<arrays passed from Python>\"");
  const std::string& name = cfg.get_string("objective.name");
  if (objective_entry(name).array_data == ArrayData::None)
    config_error("objective.name", "\"" + name + "\" takes no arrays X, y; choose " + objectives_taking_arrays());
}

void prepare_resume(const RunRequest& req, PreparedRun& p) {
  if (!req.config_path.empty() || !req.overrides.empty() || !req.out.empty())
    throw UserError("--resume " + req.resume + " continues that run with its own config and path; give no config, "
                    "key=value or --out with it (in Python: no config, overrides or out=); --force continues although its "
                    "data, config or stale version changed");
  if (req.arrays)
    throw UserError("stale.run: resume= continues a .partial; X, y cannot be passed again (resume a run of a data file instead)");
  const std::string partial = partial_of(req.resume);
  if (!std::filesystem::exists(partial))
    throw UserError("--resume " + req.resume + ": no such run file (" + partial +
                    "); a run keeps RUN.h5.partial until it finishes");
  p.options.resume_from = partial;
  p.options.overwrite = req.force;
  p.options.progress = req.progress.value_or(true);
  // the .partial's config: whether it is a run of a model defined in Python (only the Python
  // module can build that objective, with the model passed again), and the seed and stages of
  // that model. Without a model a file that cannot be read here is left to the runner, which
  // reads it under the run's lock and names what is wrong (or that a live run still writes it).
  std::optional<Config> stored;
  if (req.model_stages) {
    stored = Config::from_string(read_partial_run(partial).config, partial);
  } else {
    try {
      stored = Config::from_string(read_run_config(partial), partial);
    } catch (const UserError&) {
    }
  }
  if (!stored) return;
  const bool python_model = stored->get_string("objective.name") == kPythonModelObjective;
  if (python_model != req.model_stages.has_value())
    throw UserError(partial + (python_model ? ": a run of a model defined in Python; pass the same model= to resume it "
                                              "(stale.run(resume=..., model=...))"
                                            : ": not a run of a model defined in Python; resume it without model="));
  if (python_model && stored->get_int("objective.stages") != *req.model_stages)
    throw UserError(partial + ": a run of a model with " + std::to_string(stored->get_int("objective.stages")) +
                    " stages, the model passed has " + std::to_string(*req.model_stages));
  p.config = std::move(*stored);
}

}  // namespace

PreparedRun prepare_run(const RunRequest& req) {
  PreparedRun p;
  if (!req.resume.empty()) {
    prepare_resume(req, p);
    return p;
  }
  if (req.config_path.empty() && !req.defaults) throw UserError("stale run needs a config file (or --resume RUN.h5.partial)");
  if (req.arrays && req.model_stages) throw UserError("stale.run: pass arrays X, y or a model, not both");
  p.config = req.config_path.empty() ? Config::from_string("", "") : Config::from_file(req.config_path);
  p.config.apply_overrides(req.overrides);
  if (req.drop_unread) p.dropped = drop_unread_keys(p.config);
  if (req.model_stages) describe_python_model(p.config, *req.model_stages);
  if (req.arrays) describe_arrays(p.config);
  p.out = req.out;
  p.in_memory = req.keep_in_memory && req.out.empty();
  p.options.progress = req.progress.value_or(LogParams::from_config(p.config).progress);
  p.options.overwrite = req.force;
  p.options.continue_checkpoint = req.continue_checkpoint;
  p.options.overrides = req.overrides;
  return p;
}

std::shared_ptr<const Objective> objective_of_arrays(const Config& cfg, std::shared_ptr<LinearData> data) {
  const Index n = data->n(), d = data->d();
  check_linear_data(*data, "X, y", objective_entry(cfg.get_string("objective.name")).array_data == ArrayData::Labels);
  data->description = "arrays n=" + std::to_string(n) + " d=" + std::to_string(d);
  const Index bs = cfg.get_int("objective.batch_size");
  if (bs > data->n())
    config_error("objective.batch_size", std::to_string(bs) + " exceeds the number of samples " + std::to_string(data->n()));
  partition_batches(*data, bs);
  return make_linear_objective_on(cfg, std::move(data), resolve_backend(cfg.get_string("backend")));
}

RunResult run_to_file(const PreparedRun& run) { return run_experiment(run.config, run.out, run.options); }

InMemoryRun run_kept_in_memory(const PreparedRun& run) {
  STALE_CHECK(run.in_memory && run.options.resume_from.empty(), "a fresh run kept in memory");
  return run_in_memory(run.config, run.options.objective, run.options.progress);
}

}  // namespace stale
