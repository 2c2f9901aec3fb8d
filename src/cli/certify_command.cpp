#include "src/cli/certify_command.hpp"

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
CLI::App* g_certify = nullptr;

// scripts/certify.py beside the binary's checkout (build/stale → scripts/), else in the source
// tree the binary was built from; empty when neither exists (an installed package is tried then)
std::string find_certify_script() {
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / "scripts" / "certify.py");
#ifdef STALE_SOURCE_DIR
  candidates.push_back(fs::path(STALE_SOURCE_DIR) / "scripts" / "certify.py");
#endif
  for (const auto& c : candidates)
    if (fs::exists(c, ec)) return c.string();
  return "";
}
}  // namespace

void add_certify_command(CLI::App& app) {
  g_certify = app.add_subcommand("certify", "PEP certificate: the worst case of the config's read pattern over a "
                                            "function class, checked (needs Python + the extra [certify]: PEPit, "
                                            "cvxpy); arguments: CONFIG [key=value ...] [--class C] [--L x] [--mu x] "
                                            "[--solver clarabel|scs] [--seeds N] [--tol T] [--out FILE]");
  // everything after `certify` goes to scripts/certify.py, which parses and checks it (argparse)
  g_certify->prefix_command();
}

int run_certify_command() {
  const char* env = std::getenv("STALE_PYTHON");
  const std::string python = env && *env ? env : "python3";
  const std::string script = find_certify_script();
  // the script's own dependency check names a missing PEPit/cvxpy/clarabel in one line (exit 2)
  std::vector<std::string> args{python};
  // the installed package; with -c, sys.argv[1:] is exactly the arguments appended below
  if (script.empty())
    args.insert(args.end(), {"-c", "import sys, importlib; sys.exit(importlib.import_module('stale.certify').main())"});
  else
    args.push_back(script);
  for (const auto& a : g_certify->remaining()) args.push_back(a);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  execvp(argv[0], argv.data());
  // only reached when the interpreter could not be started
  throw UserError("stale certify needs Python 3 with the package stale and its extra [certify]: cannot run '" + python +
                  "' (" + std::strerror(errno) + "); install python3 (bash scripts/setup.sh) or set STALE_PYTHON to one");
}

}  // namespace stale
