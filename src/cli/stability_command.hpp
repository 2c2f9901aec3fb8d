#pragma once
// `stale stability CONFIG [key=value ...] [--lr γ ...] [--order cyclic|expected]
//  [--solver auto|dense|power|eigen]`: for a quadratic objective and a method's periodic
// delay pattern (src/theory/stability_pattern.hpp), print the spectral radius ρ(γ) of the
// one-period transition operator and the largest stable step γ_max (src/theory/stability.hpp).
#include <CLI/CLI.hpp>

namespace stale {
// Registers the subcommand (no parse callback: main calls run_stability_command() when
// app.got_subcommand("stability"), inside its UserError handler).
void add_stability_command(CLI::App& app);
// Runs the parsed command; throws UserError for bad input. Returns the exit status (0).
int run_stability_command();
}  // namespace stale
