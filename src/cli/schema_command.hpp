#pragma once
// `stale schema [--json]`: the run file's /metrics series and the sweep index's result columns,
// printed from the one table the writers and readers use (src/io/metrics_schema.hpp): name,
// type, unit and meaning. --json prints it machine-readably (scripts/check_metrics_schema.py
// compares scripts/stale_analysis/schema.py with it, field by field).
#include <CLI/CLI.hpp>

namespace stale {
void add_schema_command(CLI::App& app);
int run_schema_command();
}  // namespace stale
