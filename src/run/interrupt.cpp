#include "src/run/interrupt.hpp"

#include <atomic>
#include <csignal>

namespace stale {

namespace {
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the handler may only touch a lock-free atomic");

extern "C" void on_stop_signal(int sig) {
  g_signal.store(sig, std::memory_order_relaxed);
  // the next SIGINT or SIGTERM kills at once (signal() is async-signal-safe)
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}
}  // namespace

void install_stop_handlers() {
  struct sigaction sa = {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  // SA_RESTART: a write or wait in progress goes on (the loop sees the flag at its next update)
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() { return g_signal.load(std::memory_order_relaxed); }
bool stop_requested() { return stop_signal() != 0; }
void request_stop(int signal) { g_signal.store(signal, std::memory_order_relaxed); }
void clear_stop_request() { g_signal.store(0, std::memory_order_relaxed); }

}  // namespace stale
