#pragma once
// `stale report SWEEP_DIR [-o FILE]`: one self-contained HTML page of a sweep (its sweep file and
// base config, the index as a sortable table, loss curves, the bound per method, the chosen
// step sizes, warnings). The page is written by the Python analysis module
// (scripts/stale_analysis/report.py, matplotlib); this command only finds it and hands over.
#include <CLI/CLI.hpp>

namespace stale {
void add_report_command(CLI::App& app);
int run_report_command();
}  // namespace stale
