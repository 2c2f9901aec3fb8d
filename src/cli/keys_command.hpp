#pragma once
#include <CLI/CLI.hpp>

namespace stale {
// `stale keys [--markdown]`: every config key with type, default and meaning (the README's
// table is this command's output)
void add_keys_command(CLI::App& app);
int run_keys_command();
}  // namespace stale
