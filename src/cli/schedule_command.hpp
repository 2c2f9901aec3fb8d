#pragma once
// `stale schedule NAME --stages S --microbatches M [...]`: simulate one pipeline schedule and
// print its makespan, bubbles, peak memory and delays; optionally write the schedule file
// (--out FILE.h5, src/io/schedule_file.hpp) and a Chrome trace (--trace FILE.json).
#include <CLI/CLI.hpp>

namespace stale {
// Registers the subcommand. Like `keys`, it has no parse callback: main calls
// run_schedule_command() when app.got_subcommand("schedule"), inside its UserError handler.
void add_schedule_command(CLI::App& app);
// Runs the parsed command; throws UserError for bad input. Returns the exit status (0).
int run_schedule_command();
}  // namespace stale
