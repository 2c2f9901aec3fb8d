#include "src/sweep/process_pool.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <map>

#include "src/core/error.hpp"
#include "src/core/new_file.hpp"
#include "src/run/interrupt.hpp"

extern char** environ;

namespace stale {

namespace {

// Everything the child needs is built before fork(): between fork and exec a child of a
// multi-threaded parent may only make async-signal-safe calls (no allocation).
struct PreparedChild {
  std::vector<std::string> args, env;
  std::vector<char*> argv, envp;
  std::string log;
};

PreparedChild prepare(const std::string& exe, const ChildRun& r, int threads) {
  PreparedChild c;
  // --continue: a run killed or interrupted earlier continues from its checkpoint
  c.args = {exe, "run", r.config_path, "--out", r.out_path, "--quiet", "--continue"};
  const std::string omp = "OMP_NUM_THREADS=" + std::to_string(threads);
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "OMP_NUM_THREADS=", 16) != 0) c.env.emplace_back(*e);
  c.env.push_back(omp);
  for (auto& a : c.args) c.argv.push_back(a.data());
  c.argv.push_back(nullptr);
  for (auto& e : c.env) c.envp.push_back(e.data());
  c.envp.push_back(nullptr);
  c.log = r.log_path;
  return c;
}

pid_t spawn(const PreparedChild& c) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw UserError("sweep: fork failed (" + std::string(std::strerror(errno)) + ")");
  if (pid == 0) {
    // A process group of its own: Ctrl-C reaches the terminal's foreground group, the sweep,
    // which passes it on once; in the sweep's group a child got it twice, and the second, its
    // default action, killed it before its checkpoint.
    setpgid(0, 0);
    // SIGTERM when the sweep dies (SIGKILL, a crash, a second signal's default action): the
    // child checkpoints and stops instead of running on unwatched. A sweep that died before
    // this line is already gone: the child starts nothing.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(128 + SIGTERM);
    // a new file, never through a link someone placed in the sweep folder (src/core/new_file.hpp)
    const int fd = create_new_file(c.log);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      close(fd);
    }
    execve(c.argv[0], c.argv.data(), c.envp.data());
    _exit(127);
  }
  return pid;
}

}  // namespace

void run_children(const std::string& exe, const std::vector<ChildRun>& runs, int jobs, int threads_per_child,
                  const std::function<void(size_t, bool)>& done) {
  std::map<pid_t, size_t> running;
  size_t next = 0;
  bool forwarded = false;
  while ((next < runs.size() && !stop_requested()) || !running.empty()) {
    while (next < runs.size() && static_cast<int>(running.size()) < jobs && !stop_requested()) {
      const PreparedChild c = prepare(exe, runs[next], threads_per_child);
      running[spawn(c)] = next++;
    }
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid == 0) {
      // SIGINT, SIGTERM or SIGHUP to the sweep: pass it on once to every child (each
      // checkpoints and stops), start no new one, and wait for them
      if (stop_requested() && !forwarded) {
        for (const auto& [child, i] : running) kill(child, stop_signal());
        forwarded = true;
      }
      usleep(20000);
      continue;
    }
    if (pid < 0) break;
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const size_t i = it->second;
    running.erase(it);
    done(i, WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
}

}  // namespace stale
