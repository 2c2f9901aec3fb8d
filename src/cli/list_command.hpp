#pragma once
// `stale list [FAMILY] [--markdown]`: every registered method, delay model, objective and
// schedule with its traits and the keys it reads — printed from the registries, so it can
// never fall behind the code; --markdown prints the README's "what is in the box" table.
#include <CLI/CLI.hpp>

namespace stale {
void add_list_command(CLI::App& app);
int run_list_command();
}  // namespace stale
