#include "src/run/runner.hpp"

#include <cctype>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <signal.h>
#include <unistd.h>

#include "objectives/objective_factory.hpp"
#include "optimizers/method.hpp"
#include "src/config/log_params.hpp"
#include "src/core/build_info.hpp"
#include "src/core/error.hpp"
#include "src/core/process_identity.hpp"
#include "src/core/sha256.hpp"
#include "src/io/write_lock.hpp"
#include "src/checks/config_rules.hpp"
#include "src/run/interrupt.hpp"
#include "src/run/metrics_observer.hpp"
#include "src/checks/resource_estimate.hpp"
#include "src/run/run_session.hpp"

namespace stale {

std::string run_summary_line(const RunResult& r) {
  // f − f_* where f_* is known, else f itself ("f-f*=nan" on every line of a model without f_*
  // said nothing; issue 51): the same rule as the Python Run's repr (python/stale/results.py)
  const bool gap = !std::isnan(r.last.subopt);
  const char* fmt = gap ? "%s: status=%s k=%lld f-f*=%.6e mean|grad f|^2=%.6e bound=%.6e%s delta=%lld wall=%.2fs"
                        : "%s: status=%s k=%lld f=%.6e mean|grad f|^2=%.6e bound=%.6e%s delta=%lld wall=%.2fs";
  char est[64] = "";
  if (r.L_estimated) std::snprintf(est, sizeof est, " (estimated L=%.4g)", r.L);
  auto print = [&](char* buf, size_t n) {
    return std::snprintf(buf, n, fmt, r.path.c_str(), r.status.c_str(), static_cast<long long>(r.updates),
                         gap ? r.last.subopt : r.last.loss, r.grad_norm_sq_mean, r.last.bound, est,
                         static_cast<long long>(r.delta), r.wall_seconds);
  };
  std::string out(static_cast<size_t>(print(nullptr, 0)), '\0');
  print(out.data(), out.size() + 1);
  return out;
}

std::string partial_target(const std::string& partial_path) {
  const std::string suffix = ".partial";
  if (partial_path.size() > suffix.size() && partial_path.compare(partial_path.size() - suffix.size(), suffix.size(), suffix) == 0)
    return partial_path.substr(0, partial_path.size() - suffix.size());
  return partial_path;
}

namespace {
// the process that wrote a .partial still runs on this machine (another process: a run resumed
// inside the process that interrupted it is not a second writer). A file that records its
// writer's identity is matched on it (its pid may now name another process); an older one on the
// pid and a process name containing "stale"
bool writer_is_alive(const PartialRun& p) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  if (p.writer_pid <= 0 || p.writer_pid == getpid() || p.writer_host != host) return false;
  if (kill(static_cast<pid_t>(p.writer_pid), 0) != 0) return false;
  if (!p.writer_started.empty()) return process_identity(static_cast<long>(p.writer_pid)) == p.writer_started;
  std::ifstream comm("/proc/" + std::to_string(p.writer_pid) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name.find("stale") != std::string::npos;
}
}  // namespace

std::string default_run_path(const Config& cfg, const std::vector<std::string>& overrides) {
  if (const std::string out = LogParams::from_config(cfg).out; !out.empty()) return out;
  const std::string stem = cfg.origin().empty() ? "run" : std::filesystem::path(cfg.origin()).stem().string();
  // the overrides name the file, so that a run of the same config with other keys does not
  // meet the first one's file: runs/quickstart_delay.max=420_method.lr=0.0078125.h5
  std::string suffix;
  for (const auto& o : overrides) {
    suffix += '_';
    for (char c : o) suffix += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '=' || c == '-' ? c : '-';
  }
  if (suffix.size() > 96) {  // too long for a name a reader can use: a short hash stands for them
    std::string all;
    for (const auto& o : overrides) all += o + '\n';
    suffix = "_" + sha256_text(all).substr(0, 12);
  }
  return "runs/" + stem + suffix + ".h5";
}

void check_run_path(const std::string& path, const std::string& source) {
  namespace fs = std::filesystem;
  // a run is one file, renamed into place when it finishes: a folder found there only then
  // would cost the whole run
  std::error_code ec;
  const bool folder_syntax = !path.empty() && (path.back() == '/' || fs::path(path).filename() == "." ||
                                               fs::path(path).filename() == "..");
  if (path.empty() || folder_syntax || fs::is_directory(path, ec)) {
    const fs::path example = fs::path(path.empty() ? "runs" : path) / "run.h5";
    throw UserError(source + " \"" + path + "\" names a folder; a run is written to one file: give a file path such as " +
                    example.lexically_normal().string());
  }
}

void check_run_config(const Config& cfg, const std::string& path, bool resumed) {
  if (!resumed) check_unread_keys(cfg);  // nothing the user set is silently ignored
  check_key_relations(cfg);
  check_resources(cfg, path);  // memory and disk, before anything is allocated or created
}

RunResult run_experiment(const Config& cfg, const std::string& out_path, bool progress,
                         std::shared_ptr<const Objective> objective, bool overwrite) {
  RunOptions o;
  o.progress = progress;
  o.objective = std::move(objective);
  o.overwrite = overwrite;
  return run_experiment(cfg, out_path, o);
}

namespace {
// what changed since a checkpoint that a resume would silently carry on (data: RunSession)
std::string changes_since_checkpoint(const PartialRun& p) {
  std::string c;
  auto add = [&](const std::string& what) { c += (c.empty() ? "" : "; ") + what; };
  if (p.version != build::version) add("it was written by stale " + p.version + ", this is " + build::version);
  if (p.schema_version != kRunFileSchemaVersion)
    add("its run file schema is " + std::to_string(p.schema_version) + ", this stale writes " +
        std::to_string(kRunFileSchemaVersion));
  if (p.config_edited) add("its stored config was edited after the checkpoint");
  return c;
}

// A fresh run at `path` would replace `path`.partial: refused when that holds a checkpoint
// (or cannot be read), which only --force discards.
void refuse_to_discard(const std::string& path, const PartialRun* p, const std::string& damage) {
  const std::string partial = path + ".partial";
  if (!damage.empty())
    throw UserError(damage.substr(0, damage.find("; the file is kept")) + "; a new run would replace it: rerun with --force to "
                    "discard it");
  // beside a finished run file the checkpoint is left over (its --resume would refuse: the run
  // finished): the advice must not point there
  std::error_code ec;
  if (p && p->has_checkpoint && std::filesystem::exists(path, ec))
    throw UserError(partial + ": a leftover checkpoint at k = " + std::to_string(p->k) + " beside the finished run " +
                    path + " (a resume would refuse: that run finished); remove " + partial +
                    " to keep the finished run, or rerun with --force to replace both");
  if (p && p->has_checkpoint)
    throw UserError(partial + ": holds a checkpoint at k = " + std::to_string(p->k) +
                    " that a new run would discard; continue it with stale run --resume " + partial +
                    ", or rerun with --force to discard it");
}

std::string disk_full_line(const std::string& path, const Config& cfg, const std::string& detail) {
  namespace fs = std::filesystem;
  std::string line = path + ".partial: disk full: " + detail;
  double estimate = 0;
  try {
    estimate = estimate_resources(cfg).disk_bytes();
  } catch (const UserError&) {
  }
  if (estimate > 0)
    line += "; the run file takes about " + std::to_string(static_cast<long long>(std::ceil(estimate / (1 << 20)))) +
            " MiB and finishing it a compact copy as large";
  std::error_code ec;
  if (fs::exists(path + ".partial", ec))
    line += "; the last checkpoint is kept in " + path + ".partial: free space, then stale run --resume " + path + ".partial";
  else
    line += "; nothing was kept: free space and run again";
  return line;
}
}  // namespace

RunResult run_experiment(const Config& given_cfg, const std::string& out_path, const RunOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  // the run's path and its lock before anything else: one writer per run file
  const std::string path = !options.resume_from.empty()
                               ? partial_target(options.resume_from)
                               : (out_path.empty() ? default_run_path(given_cfg, options.overrides) : out_path);
  if (options.resume_from.empty())
    check_run_path(path, out_path.empty() ? (LogParams::from_config(given_cfg).out.empty() ? "the run path" : "log.out") : "--out");
  const WriteLock lock(path, "run");
  // until its run file exists a run has nothing to keep: the command line may end it then
  RunPhase phase({lock.path()});
  // what is at path.partial: the run a resume continues, or what a fresh run would replace
  PartialRun partial;
  bool resuming = !options.resume_from.empty();
  const std::string partial_path = path + ".partial";
  if (resuming) {
    partial = read_partial_run(options.resume_from);
  } else if (std::filesystem::exists(partial_path)) {
    std::string damage;
    bool read = false;
    try {
      partial = read_partial_run(partial_path);
      read = true;
    } catch (const UserError& e) {
      if (std::string(e.what()).find(": damaged: ") != std::string::npos) damage = e.what();
    }
    // a live writer's file is never discarded, --force or not (its .lock may have been removed)
    if (read && writer_is_alive(partial))
      throw UserError(partial_path + ": still being written by process " + std::to_string(partial.writer_pid) +
                      "; --force does not discard a live run's file: stop it with kill -INT " +
                      std::to_string(partial.writer_pid) + " (or wait for it)");
    if (options.continue_checkpoint && read && partial.has_checkpoint && partial.config == given_cfg.to_toml())
      resuming = true;  // the sweep's rule: a checkpoint of this very config continues
    else if (!options.overwrite)
      refuse_to_discard(path, read ? &partial : nullptr, damage);
  }
  // a resumed run is the .partial's: its config (checked when it started) and its path
  Config resumed_cfg;
  std::string forced;  // what a forced resume continued despite
  if (resuming) {
    if (writer_is_alive(partial))
      throw UserError(partial.path + ": still being written by process " + std::to_string(partial.writer_pid) +
                      " (stop it with kill -INT " + std::to_string(partial.writer_pid) + ", then resume)");
    if (partial.has_checkpoint) {
      forced = changes_since_checkpoint(partial);
      if (!forced.empty() && !options.overwrite)
        throw UserError(partial.path + ": " + forced + "; a resume would mix two runs: rerun afresh, or resume with "
                        "--force to continue anyway (recorded in the file as resume_forced)");
    }
    resumed_cfg = Config::from_string(partial.config, partial.path);
  }
  const Config& cfg = resuming ? resumed_cfg : given_cfg;
  try {
    check_run_config(cfg, path, resuming);
    std::shared_ptr<const Objective> f =
        options.objective ? options.objective : make_objective(cfg);
    check_resources_of(cfg, path, f->dim());  // a model whose size only it knows (Python), before its run allocates
    auto method = make_method(cfg, *f);
    // the one plan every consumer reads; planning errors surface before the run file exists
    const RunPlan plan = method->plan(*f);
    ResumeFrom from;
    if (resuming) {
      from.partial = &partial;
      from.force = options.overwrite;
      from.forced = forced;
    }
    phase.set_up_done();
    RunSession session(cfg, path, options.progress, f, *method, plan, t0, !resuming && options.overwrite,
                       resuming ? &from : nullptr, options.stop_after);
    try {
      Vec w = session.initial_point();
      const RunReport report = method->run(*f, plan, w, session.observer());
      return session.finish(report, w);
    } catch (...) {
      session.abort();
      throw;
    }
  } catch (const DiskFull& e) {
    throw UserError(disk_full_line(path, cfg, e.what()));
  }
}

std::vector<EnsembleColumnResult> run_ensemble_experiment(const std::vector<EnsembleColumn>& columns,
                                                          std::shared_ptr<const Objective> objective, bool overwrite) {
  const auto t0 = std::chrono::steady_clock::now();
  const size_t P = columns.size();
  std::vector<EnsembleColumnResult> out(P);
  STALE_CHECK(P > 0, "an ensemble has columns");
  RunPhase phase({});  // set-up until the sessions begin (interrupt.hpp)
  // every check of every column before any file exists; a column that fails them is
  // reported and left out, the others run
  struct Ready {
    size_t index;
    std::unique_ptr<Method> method;
    RunPlan plan;
  };
  std::vector<Ready> ready;
  std::shared_ptr<const Objective> f = objective;
  for (size_t i = 0; i < P; ++i) {
    try {
      const Config& cfg = columns[i].config;
      check_run_config(cfg, columns[i].path);
      if (!f) f = make_objective(cfg);
      auto method = make_method(cfg, *f);
      RunPlan plan = method->plan(*f);
      if (!ready.empty()) {
        const RunPlan& first = ready.front().plan;
        STALE_CHECK(method->name() == ready.front().method->name() && plan.updates == first.updates &&
                        plan.delay_bound == first.delay_bound && !plan.schedule == !first.schedule &&
                        (!plan.schedule || plan.schedule->ops.size() == first.schedule->ops.size()),
                    "the columns of an ensemble share method and plan");
      }
      ready.push_back({i, std::move(method), std::move(plan)});
    } catch (const UserError& e) {
      out[i].error = e.what();
    }
  }
  if (ready.empty()) return out;
  if (!ready.front().method->runs_ensembles()) {
    // a method without a lockstep loop (or a coupled timeline, which follows each run's own
    // state): the columns run one after another, on the shared objective
    for (const auto& r : ready) {
      try {
        out[r.index].result = run_experiment(columns[r.index].config, columns[r.index].path, false, f, overwrite);
      } catch (const UserError& e) {
        out[r.index].error = e.what();
      }
    }
    return out;
  }
  // one writer per run file: a column whose path another process writes is left out
  std::vector<std::unique_ptr<WriteLock>> locks;
  for (auto it = ready.begin(); it != ready.end();) {
    try {
      locks.push_back(std::make_unique<WriteLock>(columns[it->index].path, "run"));
      ++it;
    } catch (const UserError& e) {
      out[it->index].error = e.what();
      it = ready.erase(it);
    }
  }
  if (ready.empty()) return out;
  std::vector<std::string> lock_paths;
  for (const auto& l : locks) lock_paths.push_back(l->path());
  phase.add_locks(lock_paths);
  const Method& lead = *ready.front().method;
  const RunPlan& plan = ready.front().plan;
  // A killed or interrupted ensemble continues from its columns' checkpoints, which its loop
  // writes together at one update: when every column's .partial holds a checkpoint of its own
  // config at the same k, written by this stale. Otherwise (a column finished or diverged
  // before the others' last checkpoint, or never reached one) the ensemble runs afresh — the
  // same numbers, only later.
  std::vector<PartialRun> partials(ready.size());
  bool resuming = true;
  for (size_t c = 0; c < ready.size() && resuming; ++c) {
    const std::string partial = columns[ready[c].index].path + ".partial";
    try {
      resuming = std::filesystem::exists(partial);
      if (!resuming) break;
      partials[c] = read_partial_run(partial);
      resuming = partials[c].has_checkpoint && partials[c].config == columns[ready[c].index].config.to_toml() &&
                 partials[c].k == partials[0].k && changes_since_checkpoint(partials[c]).empty();
    } catch (const UserError&) {
      resuming = false;  // not a run file a resume can continue: afresh
    }
  }
  std::vector<ResumeFrom> from(ready.size());
  for (size_t c = 0; c < ready.size(); ++c) from[c].partial = &partials[c];
  std::vector<std::unique_ptr<RunSession>> sessions;
  phase.set_up_done();
  try {
    for (size_t c = 0; c < ready.size(); ++c)
      sessions.push_back(std::make_unique<RunSession>(columns[ready[c].index].config, columns[ready[c].index].path,
                                                      false, f, *ready[c].method, plan, t0, overwrite,
                                                      resuming ? &from[c] : nullptr));
    std::vector<Vec> w;
    std::vector<const Method*> methods;
    std::vector<RunObserver*> observers;
    for (size_t c = 0; c < ready.size(); ++c) {
      w.push_back(sessions[c]->initial_point());
      methods.push_back(ready[c].method.get());
      observers.push_back(&sessions[c]->observer());
    }
    Mat W0(f->dim(), static_cast<Index>(w.size()));
    for (size_t c = 0; c < w.size(); ++c) W0.col(static_cast<Index>(c)) = w[c];
    std::shared_ptr<EnsembleTracker> tracker = f->make_ensemble_tracker(W0);
    // a resumed column's view takes its checkpoint's tracker state (MetricsObserver::use_tracker)
    for (size_t c = 0; c < ready.size(); ++c) sessions[c]->observer().use_tracker(column_tracker(tracker, static_cast<int>(c)));
    const std::vector<RunReport> reports = lead.run_ensemble(*f, plan, methods, w, observers);
    for (size_t c = 0; c < ready.size(); ++c) out[ready[c].index].result = sessions[c]->finish(reports[c], w[c]);
  } catch (...) {
    for (auto& s : sessions) s->abort();
    throw;
  }
  return out;
}

}  // namespace stale
