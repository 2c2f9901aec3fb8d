#pragma once
// One writer per output (issue 34): an advisory lock on PATH.lock, taken before a run or a
// sweep does any work and held until it ends. flock(2) is released by the kernel when its
// process dies, so the lock file of a killed writer is no lock at all: the next writer takes
// it over. A second writer is refused in one line naming the path and the live process.
#include <string>
#include <vector>

namespace stale {

class WriteLock {
 public:
  // locks `lock_path` (default `target` + ".lock"; its folder is created); UserError naming
  // `target` and the holder's pid when another process holds it. `what` says what is being
  // written ("run", "sweep folder") in the refusal.
  WriteLock(const std::string& target, const std::string& what, const std::string& lock_path = "");
  ~WriteLock();  // removes the lock file and releases the lock
  WriteLock(const WriteLock&) = delete;
  WriteLock& operator=(const WriteLock&) = delete;
  const std::string& path() const { return lock_path_; }

 private:
  void remove_created_folders();
  std::string lock_path_;
  int fd_ = -1;
  std::vector<std::string> created_;
};

}  // namespace stale
