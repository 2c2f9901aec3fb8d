#include "src/cli/report_command.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "src/core/error.hpp"

namespace stale {

namespace fs = std::filesystem;

namespace {
struct Args {
  std::string sweep_dir, out;
} g;

// scripts/report.py beside the binary's checkout (build/stale → scripts/), else in the source
// tree the binary was built from; empty when neither exists (an installed package is tried then)
std::string find_report_script() {
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / "scripts" / "report.py");
#ifdef STALE_SOURCE_DIR
  candidates.push_back(fs::path(STALE_SOURCE_DIR) / "scripts" / "report.py");
#endif
  for (const auto& c : candidates)
    if (fs::exists(c, ec)) return c.string();
  return "";
}
}  // namespace

void add_report_command(CLI::App& app) {
  auto* r = app.add_subcommand("report", "one self-contained HTML page of a sweep: config, sortable index, loss curves, "
                                         "the bound per method, chosen step sizes, warnings (needs Python + matplotlib)");
  r->add_option("sweep_dir", g.sweep_dir, "a sweep's output folder (the one holding index.csv)")->required();
  r->add_option("--out,-o", g.out, "HTML file to write (default: SWEEP_DIR/report.html)");
}

int run_report_command() {
  if (!fs::exists(fs::path(g.sweep_dir) / "index.csv"))
    throw UserError(g.sweep_dir + ": not a sweep folder (no index.csv); give the --out folder of a `stale sweep`");
  const char* env = std::getenv("STALE_PYTHON");
  const std::string python = env && *env ? env : "python3";
  const std::string script = find_report_script();
  // the script's own dependency check names a missing matplotlib/h5py/numpy in one line
  std::vector<std::string> args{python};
  if (script.empty()) args.insert(args.end(), {"-m", "stale_analysis.report"});  // the installed package
  else args.push_back(script);
  args.push_back(g.sweep_dir);
  if (!g.out.empty()) args.insert(args.end(), {"-o", g.out});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  execvp(argv[0], argv.data());
  // only reached when the interpreter could not be started
  throw UserError("stale report needs Python 3 with numpy, h5py and matplotlib: cannot run '" + python + "' (" +
                  std::strerror(errno) + "); install python3 (bash scripts/setup.sh) or set STALE_PYTHON to one");
}

}  // namespace stale
