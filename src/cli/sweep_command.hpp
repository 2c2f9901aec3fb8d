#pragma once
#include <CLI/CLI.hpp>

namespace stale {
// `stale sweep SWEEP.toml [--jobs N] [--shard i/N] [--out DIR] [--dry-run] [--index-only]`
void add_sweep_command(CLI::App& app);
int run_sweep_command();
}  // namespace stale
