#include "src/run/interrupt.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

namespace stale {

namespace {
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the handler may only touch lock-free atomics");
// 0: never end in set-up (a library caller); 1: `stale run` (the handler ends it); 2: `stale sweep`
std::atomic<int> g_mode{0};
// runs in set-up and runs holding run files, process-wide (the handler reads them)
std::atomic<int> g_in_set_up{0}, g_holding{0};
// `stale run`: its one lock file, for the handler to remove (set before g_in_set_up counts it)
char g_lock_path[4096];
// SIGHUP is a stop signal unless it was ignored when the process started (nohup)
std::atomic<bool> g_hup{false};
// not for the handler: the lock files of the runs in set-up, and whether the process is ending
std::mutex g_phase_mutex;
std::multiset<std::string> g_set_up_locks, g_other_locks;
bool g_abandoned = false;
void forget_locks(const std::vector<std::string>& paths) {
  for (const auto& p : paths)
    if (const auto it = g_set_up_locks.find(p); it != g_set_up_locks.end()) g_set_up_locks.erase(it);
}

extern "C" void on_stop_signal(int sig) {
  if (g_mode.load() == 1 && g_in_set_up.load() > 0 && g_holding.load() == 0) {
    // async-signal-safe calls only: unlink, write, _exit
    if (g_lock_path[0]) unlink(g_lock_path);
    static const char line[] =
        "interrupted: stopped in the run's set-up, before its run file existed (nothing to keep)\n";
    const ssize_t written = write(STDERR_FILENO, line, sizeof line - 1);
    (void)written;
    _exit(128 + sig);
  }
  g_signal.store(sig, std::memory_order_relaxed);
  // the next stop signal kills at once (signal() is async-signal-safe)
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (g_hup.load()) std::signal(SIGHUP, SIG_DFL);
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
  // nohup starts a process with SIGHUP ignored so that it outlives its terminal: it keeps that
  struct sigaction hup = {};
  if (g_hup.load() || (sigaction(SIGHUP, nullptr, &hup) == 0 && hup.sa_handler != SIG_IGN)) {
    g_hup.store(true);
    sigaction(SIGHUP, &sa, nullptr);
  }
}

int stop_signal() { return g_signal.load(std::memory_order_relaxed); }
bool stop_requested() { return stop_signal() != 0; }
void request_stop(int signal) { g_signal.store(signal, std::memory_order_relaxed); }
void clear_stop_request() { g_signal.store(0, std::memory_order_relaxed); }

void allow_exit_in_set_up(bool single_run) { g_mode.store(single_run ? 1 : 2); }

RunPhase::RunPhase(std::vector<std::string> lock_paths) : locks_(std::move(lock_paths)) {
  const int mode = g_mode.load();
  if (mode == 0) return;
  std::unique_lock<std::mutex> lock(g_phase_mutex);
  active_ = in_set_up_ = true;
  for (const auto& p : locks_) g_set_up_locks.insert(p);
  if (mode == 1 && !locks_.empty()) {
    std::strncpy(g_lock_path, locks_.front().c_str(), sizeof g_lock_path - 1);
    g_lock_path[sizeof g_lock_path - 1] = '\0';
  }
  g_in_set_up.fetch_add(1);
  lock.unlock();
  // `stale run`: a signal that came before the set-up began (while its config was read) ends it now
  if (mode == 1 && stop_requested()) on_stop_signal(stop_signal());
}

void RunPhase::add_locks(const std::vector<std::string>& lock_paths) {
  if (!active_ || !in_set_up_) return;
  const std::lock_guard<std::mutex> lock(g_phase_mutex);
  for (const auto& p : lock_paths) {
    locks_.push_back(p);
    g_set_up_locks.insert(p);
  }
}

void RunPhase::set_up_done() {
  if (!active_ || !in_set_up_) return;
  std::unique_lock<std::mutex> lock(g_phase_mutex);
  // the process is ending: this run begins no file (end_process_in_set_up removes its locks)
  while (g_abandoned) {
    lock.unlock();
    pause();
    lock.lock();
  }
  forget_locks(locks_);
  // holding first: the handler never sees this run in neither phase
  g_holding.fetch_add(1);
  g_in_set_up.fetch_sub(1);
  in_set_up_ = false;
}

RunPhase::~RunPhase() {
  if (!active_) return;
  const std::lock_guard<std::mutex> lock(g_phase_mutex);
  if (in_set_up_) {
    forget_locks(locks_);
    g_in_set_up.fetch_sub(1);
  } else {
    g_holding.fetch_sub(1);
  }
}

bool abandon_set_ups() {
  if (g_mode.load() == 0) return false;
  const std::lock_guard<std::mutex> lock(g_phase_mutex);
  if (g_holding.load() > 0 || g_in_set_up.load() == 0) return false;
  g_abandoned = true;
  return true;
}

void remember_lock_file(const std::string& path) {
  const std::lock_guard<std::mutex> lock(g_phase_mutex);
  g_other_locks.insert(path);
}

void forget_lock_file(const std::string& path) {
  const std::lock_guard<std::mutex> lock(g_phase_mutex);
  if (const auto it = g_other_locks.find(path); it != g_other_locks.end()) g_other_locks.erase(it);
}

void end_process_in_set_up() {
  {
    const std::lock_guard<std::mutex> lock(g_phase_mutex);
    for (const auto& p : g_set_up_locks) unlink(p.c_str());
    for (const auto& p : g_other_locks) unlink(p.c_str());
  }
  std::fflush(nullptr);
  _exit(128 + (stop_signal() != 0 ? stop_signal() : SIGINT));
}

}  // namespace stale
