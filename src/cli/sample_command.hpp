#pragma once
// `stale sample RUN.h5 [--chars N] [--temperature τ] [--prompt TEXT] [--seed s] [--row i]`:
// the command line of src/commands/sample_text.hpp (text from the run of a text model); prints
// the text on stdout and the iterate it came from on stderr.
#include <CLI/CLI.hpp>

namespace stale {
// Registers the subcommand; like `keys` and `schedule` it has no parse callback: main calls
// run_sample_command() when app.got_subcommand("sample"), inside its UserError handler.
void add_sample_command(CLI::App& app);
// Runs the parsed command; throws UserError for bad input. Returns the exit status (0).
int run_sample_command();
}  // namespace stale
