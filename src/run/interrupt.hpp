#pragma once
// SIGINT and SIGTERM as a request to stop (issue 12): the handler only records the signal;
// every run in the process sees it through MetricsObserver::should_stop at its next update,
// writes a checkpoint, leaves its .partial with status "interrupted" and returns, and the
// command exits 128 + signal (130 for SIGINT, 143 for SIGTERM). A second SIGINT or SIGTERM
// takes the default action (the process dies at once; the .partial stays readable and
// resumes from its last checkpoint).
namespace stale {

// installs the handlers (stale run, stale sweep); idempotent
void install_stop_handlers();
// the signal that asked to stop, or 0
int stop_signal();
bool stop_requested();
// tests: ask to stop as a signal would, and forget it
void request_stop(int signal);
void clear_stop_request();

}  // namespace stale
