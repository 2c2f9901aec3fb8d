#pragma once
// SIGINT, SIGTERM and SIGHUP as a request to stop (issue 12, issue 34): the handler only
// records the signal; every run in the process sees it through its StopPolicy
// (stop_policy.hpp, behind MetricsObserver::should_stop) at its next update, writes a
// checkpoint, leaves its .partial with status "interrupted" and returns, and the command exits
// 128 + signal (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP: a closed terminal or a dropped
// ssh session stops a run as cleanly as Ctrl-C). A process that started with SIGHUP ignored
// (nohup) keeps ignoring it. A second signal takes the default
// action (the process dies at once; the .partial stays readable and resumes from its last
// checkpoint).
//
// A signal ends a process within a second, whatever it is waiting on (tests/resume/signals.py;
// the slowest case 0.09 s): a run stops at the end of the update it is in (microseconds for
// the linear models; as long as one step for a large model); an --isolate sweep passes the
// signal to its children (each in a process group of its own, so that Ctrl-C reaches them
// once, through the sweep), and the kernel sends each child SIGTERM when the sweep dies
// (process_pool.cpp). A run's set-up — reading its data, computing its constants (a dense
// eigensolver, Newton on a large problem), planning its schedule — has no update to stop at,
// but nothing to keep either: its run file is created when it ends. So the command line lets a
// stop cut set-ups short (allow_exit_in_set_up): `stale run` ends at once from the handler
// when its run is in set-up, and an in-process `stale sweep` writes its index and ends as soon
// as none of its runs holds a run file (abandon_set_ups) instead of waiting for set-ups.
#include <string>
#include <vector>

namespace stale {

// installs the handlers (stale run, stale sweep); idempotent
void install_stop_handlers();
// the signal that asked to stop, or 0
int stop_signal();
bool stop_requested();
// tests: ask to stop as a signal would, and forget it
void request_stop(int signal);
void clear_stop_request();

// Set by the command line only: a library caller (Python) is never ended under. `single_run`
// (`stale run`): a stop while the run is in set-up removes its lock file, prints one line and
// ends the process with 128 + signal from the handler itself. Otherwise (`stale sweep`): the
// sweep decides when (abandon_set_ups).
void allow_exit_in_set_up(bool single_run);

// One run of this process (or one lockstep ensemble), from taking its locks to its end
// (runner.cpp): in set-up until set_up_done() (its run files are about to be created), then
// holding run files until it is destroyed. `lock_paths`: the lock files this process holds
// for it. Without allow_exit_in_set_up it does nothing.
class RunPhase {
 public:
  explicit RunPhase(std::vector<std::string> lock_paths);
  ~RunPhase();
  RunPhase(const RunPhase&) = delete;
  RunPhase& operator=(const RunPhase&) = delete;
  // lock files taken after the phase began (an ensemble's, one per column): removed with the
  // others if the process ends in set-up. Only files this process holds the lock of.
  void add_locks(const std::vector<std::string>& lock_paths);
  // the set-up is over: from here a stop is the run's to handle (at its next update). When the
  // process is ending (abandon_set_ups said so) this never returns: no run file is begun.
  void set_up_done();

 private:
  std::vector<std::string> locks_;
  bool active_ = false, in_set_up_ = false;
};

// An in-process sweep asked to stop: true when no run of this process holds a run file (every
// run that streamed has checkpointed and returned) and some run is in set-up (a RunPhase, or
// the building of an objective runs share); from then on no run leaves its set-up, and the
// caller writes what it must and calls end_process_in_set_up(). False without
// allow_exit_in_set_up, while a run still holds a file, or when no run is in set-up (the
// workers are between runs: they see the stop and return at once).
bool abandon_set_ups();
// a lock file this process holds beside its runs' (a sweep folder's), for
// end_process_in_set_up to remove; forget_lock_file when its WriteLock has removed it itself
void remember_lock_file(const std::string& path);
void forget_lock_file(const std::string& path);
// removes the lock files of the runs still in set-up and the remembered ones, flushes stdio and
// ends the process with 128 + the stop signal
[[noreturn]] void end_process_in_set_up();

}  // namespace stale
