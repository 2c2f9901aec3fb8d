#pragma once
// `stale sweep --isolate`: each run in its own `stale run` child process, at most `jobs` at a
// time. Slower than the in-process engine (a process start, data and constants per run) but a
// run that crashes the process cannot take the others with it.
#include <functional>
#include <string>
#include <vector>

namespace stale {

struct ChildRun {
  std::string config_path, out_path, log_path;
};

// Runs every child; `done(i, ok)` is called as child i ends (ok: exit code 0). Each child is
// a process group of its own and gets SIGTERM from the kernel when the calling thread dies; a
// stop signal to this process is passed on to every child (interrupt.hpp).
void run_children(const std::string& exe, const std::vector<ChildRun>& runs, int jobs, int threads_per_child,
                  const std::function<void(size_t, bool)>& done);

}  // namespace stale
