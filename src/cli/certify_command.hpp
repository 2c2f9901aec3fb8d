#pragma once
// `stale certify CONFIG [key=value ...] [--class C] [--L x] [--mu x] [--solver s] [--seeds N] [--out FILE]`:
// a PEP certificate of the config's read pattern (issue 46, docs/theory.md §12). The certificate is
// built by the Python module python/stale/certify.py (PEPit, cvxpy) through scripts/certify.py; this
// command only finds the script and hands every argument over, as `stale report` does.
#include <CLI/CLI.hpp>

namespace stale {
void add_certify_command(CLI::App& app);
int run_certify_command();
}  // namespace stale
