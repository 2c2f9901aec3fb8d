// The `stale` command line: run, sweep, schedule, report, certify, sample, stability, info, keys, list, schema
// (docs/design.md "Command line"). User errors (bad config, missing file, a command line CLI11
// cannot parse) print one line on stderr and exit 2; internal errors exit 3.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>

#include "src/backend/backend.hpp"
#include "src/cli/certify_command.hpp"
#include "src/cli/keys_command.hpp"
#include "src/cli/list_command.hpp"
#include "src/cli/report_command.hpp"
#include "src/cli/sample_command.hpp"
#include "src/cli/schedule_command.hpp"
#include "src/cli/schema_command.hpp"
#include "src/cli/stability_command.hpp"
#include "src/cli/sweep_command.hpp"
#include "src/commands/run_config.hpp"
#include "src/core/build_info.hpp"
#include "src/core/cpu_target.hpp"
#include "src/core/error.hpp"
#include "src/io/h5.hpp"
#include "src/run/interrupt.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

using namespace stale;

namespace {

int cmd_info() {
  std::printf("stale %s (git %s, %s build)\n", build::version, build::git_sha, build::build_type);
  std::printf("CPU target: %s (%s)\n", build::cpu_target,
              std::strcmp(build::cpu_target, "native") == 0
                  ? "this build machine's own instruction set: run files may differ from other machines' in the last bits"
                  : "run files are bit-identical between machines running the same target");
  // what else decides a run's last bits on one target: the compiler, Eigen's kernels, the C
  // library's exp/log/tanh (tests/golden/golden_digests.py compares this line)
  std::printf("toolchain: %s\n", toolchain().c_str());
#ifdef _OPENMP
  std::printf("OpenMP threads: %d\n", omp_get_max_threads());
#else
  std::printf("OpenMP: not compiled in\n");
#endif
  std::printf("backends: cpu%s\n", cuda_compiled() ? ", cuda" : " (cuda: built without CUDA)");
  if (cuda_compiled()) {
    const auto devs = cuda_devices();
    if (devs.empty()) std::printf("cuda devices: none (%s)\n", cuda_unavailable_reason().c_str());
    for (const auto& d : devs)
      std::printf("cuda device %d: %s, %.1f GiB, compute capability %d.%d, %d SMs\n", d.index, d.name.c_str(),
                  static_cast<double>(d.memory_bytes) / (1024.0 * 1024 * 1024), d.cc_major, d.cc_minor,
                  d.multiprocessors);
  }
  return 0;
}

// exit code of a command stopped by a signal: 128 + the signal, as a shell reports it
int interrupted_exit_code() { return 128 + (stop_signal() != 0 ? stop_signal() : SIGINT); }

int cmd_run(const RunRequest& request, bool quiet) {
  install_stop_handlers();
  allow_exit_in_set_up(true);  // one run: a stop in its set-up ends the process at once
  const PreparedRun run = prepare_run(request);
  if (!run.dropped.empty() && !quiet) {
    std::string dropped;
    for (const auto& key : run.dropped) dropped += (dropped.empty() ? "" : ", ") + key;
    std::fprintf(stderr, "--drop-unread: not read by this run, dropped: %s\n", dropped.c_str());
  }
  const RunResult r = run_to_file(run);
  std::printf("%s\n", run_summary_line(r).c_str());
  if (r.status == "interrupted") {
    std::fprintf(stderr, "interrupted: %s\n", r.message.c_str());
    return interrupted_exit_code();
  }
  if (!r.message.empty()) std::fprintf(stderr, "diverged: %s\n", r.message.c_str());
  return 0;
}

// One line for a command line CLI11 rejected, naming the word or option and what is valid.
// CLI11 reports "A subcommand is required" also for `stale frobnicate`, without the word.
std::string parse_error_line(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  std::string subs;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    subs += (subs.empty() ? "" : ", ") + sub->get_name();
  const CLI::App* used = nullptr;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (sub->parsed()) used = sub;
  if (!used) {
    // the first word is the subcommand the user meant
    if (argc > 1 && argv[1][0] != '-')
      return std::string("unknown subcommand '") + argv[1] + "'; valid: " + subs + " (stale --help lists them)";
    std::string msg = e.what();
    if (argc > 1)
      msg += std::string(" (got option '") + argv[1] +
             "' before a subcommand; config keys go after the config file as key=value, e.g. stale run cfg.toml "
             "method.lr=0.1)";
    return msg + "; valid subcommands: " + subs;
  }
  std::string msg = e.what();
  if (msg.find("not expected") != std::string::npos && used->get_name() == "run")
    msg += " (config keys are overrides key=value, e.g. method.lr=0.1)";
  return msg + " (stale " + used->get_name() + " --help shows the options)";
}

}  // namespace

int main(int argc, char** argv) {
  h5::no_cleanup_at_exit();
  if (const std::string cpu = cpu_target_mismatch(); !cpu.empty()) {
    std::fprintf(stderr, "error: %s\n", cpu.c_str());
    return 2;
  }
  CLI::App app{"stale: a research harness for stale block-SGD and pipeline-parallel schedules"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("stale ") + build::version + " (git " + build::git_sha + ")",
                       "version and git sha, one line");

  auto* run = app.add_subcommand("run", "run one configuration and write its HDF5 run file");
  // the options parse straight into the command layer's request
  RunRequest request;
  bool quiet = false;
  run->add_option("config", request.config_path, "TOML config file");
  run->add_option("overrides", request.overrides,
                  "key=value overrides, e.g. method.lr=0.01 delay.max=60; ~key unsets a key");
  run->add_flag("--drop-unread", request.drop_unread,
                "drop (reset to their defaults) the keys this run would not read, e.g. delay.* after "
                "method.name=pipedream, instead of refusing them");
  run->add_option("--out,-o", request.out, "run file path (default: log.out, else runs/<config name>[_<key=value>...].h5, named by the overrides)");
  run->add_flag("--quiet,-q", quiet, "no progress on stderr");
  run->add_flag("--force", request.force,
                "replace a finished run file or discard a resumable RUN.h5.partial at the output path; with --resume: "
                "continue although the data, the stored config or the stale version changed (recorded in the file)");
  run->add_flag("--continue", request.continue_checkpoint,
                "continue from OUT.partial when it holds a checkpoint of this very config, else run afresh (what "
                "stale sweep does with each run)");
  run->add_option("--resume", request.resume,
                  "continue an interrupted or killed run from the last checkpoint in RUN.h5.partial (bit-identical "
                  "to an uninterrupted run)");

  app.add_subcommand("info", "version, git sha, backends, OpenMP threads, CUDA devices");
  add_keys_command(app);
  add_schedule_command(app);
  add_sweep_command(app);
  add_report_command(app);
  add_certify_command(app);
  add_sample_command(app);
  add_list_command(app);
  add_stability_command(app);
  add_schema_command(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "error: %s\n", one_line(parse_error_line(app, e, argc, argv)).c_str());
    return 2;
  }
  try {
    if (run->parsed()) {
      if (quiet) request.progress = false;  // else log.progress (a resume: on)
      return cmd_run(request, quiet);
    }
    if (app.got_subcommand("info")) return cmd_info();
    if (app.got_subcommand("schedule")) return run_schedule_command();
    if (app.got_subcommand("sweep")) {
      install_stop_handlers();
      allow_exit_in_set_up(false);  // the sweep ends once no run holds a file (sweep_engine.cpp)
      const int rc = run_sweep_command();
      return stop_requested() ? interrupted_exit_code() : rc;
    }
    if (app.got_subcommand("report")) return run_report_command();
    if (app.got_subcommand("certify")) return run_certify_command();
    if (app.got_subcommand("sample")) return run_sample_command();
    if (app.got_subcommand("list")) return run_list_command();
    if (app.got_subcommand("stability")) return run_stability_command();
    if (app.got_subcommand("schema")) return run_schema_command();
    return run_keys_command();
  } catch (const UserError& e) {
    std::fprintf(stderr, "error: %s\n", one_line(e.what()).c_str());
    return 2;
  } catch (const std::bad_alloc&) {
    // the resource estimate (src/checks/resource_estimate.hpp) should have refused this config
    std::fprintf(stderr, "error: out of memory; the config asks for more than this machine has (reduce objective.dim, "
                         "objective.samples, delay.max or method.updates, or set STALE_MEMORY_LIMIT), and please "
                         "report the config: the resource estimate missed it\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error: %s\n", one_line(e.what()).c_str());
    return 3;
  }
}
