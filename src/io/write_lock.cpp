#include "src/io/write_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "src/core/error.hpp"

namespace stale {

namespace {
// the holder's pid, as written below: the first line, without its padding
std::string read_holder(int fd) {
  char buf[64] = {};
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  std::string s = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  s = s.substr(0, s.find('\n'));
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s.empty() ? "unknown" : s;
}
}  // namespace

WriteLock::WriteLock(const std::string& target, const std::string& what, const std::string& lock_path)
    : lock_path_(lock_path.empty() ? target + ".lock" : lock_path) {
  namespace fs = std::filesystem;
  const fs::path parent = fs::path(lock_path_).parent_path();
  if (!parent.empty()) {
    // the folders this creates, deepest first: removed again when the lock ends and they are
    // empty (a run refused by its checks leaves nothing behind)
    // Walked component by component from the top, so that a path through ".." ("nope/../r.h5")
    // records the folder it makes ("nope"), not "nope/.." (the folder above, never removed)
    std::error_code ec;
    fs::path prefix;
    for (const auto& part : parent) {
      prefix /= part;
      if (part == "." || part == ".." || part == prefix.root_path()) continue;
      if (!fs::exists(prefix, ec)) created_.insert(created_.begin(), prefix.string());  // deepest first
    }
    fs::create_directories(parent, ec);
    if (ec) throw UserError(target + ": cannot create directory " + parent.string() + " (" + ec.message() + ")");
  }
  // The holder removes its lock file when it ends; a process that opened the file just before
  // that would lock a removed file, so the lock counts only when the path still names it.
  for (int attempt = 0; attempt < 100; ++attempt) {
    // Never through a link: anyone who can write into the output folder could have put a
    // symbolic link (or a hard link) at this name, and the pid written below would land in its
    // target, another file (O_NOFOLLOW refuses a symbolic link; the checks below a hard link, a
    // FIFO or a device). O_NONBLOCK: opening a FIFO must not wait for a reader.
    const int fd = open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0644);
    if (fd < 0) {
      const int err = errno;
      remove_created_folders();
      if (err == ELOOP)
        throw UserError(lock_path_ + ": is a symbolic link; stale's lock files are plain files it makes itself, "
                        "and it writes through no link: remove the link (its target is untouched)");
      throw UserError(lock_path_ + ": cannot create the " + what + "'s lock file (" + std::strerror(err) +
                      "); the output folder must be writable");
    }
    struct stat opened {};
    if (fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode) || opened.st_nlink != 1) {
      const bool regular = S_ISREG(opened.st_mode);
      close(fd);
      remove_created_folders();
      throw UserError(lock_path_ + (regular ? ": has other hard links; stale writes its pid into its lock file, and "
                                              "that would reach the other names: remove it (the other names keep "
                                              "their content)"
                                            : ": is not a plain file; stale's lock files are plain files it makes "
                                              "itself: remove it or choose another output path"));
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      const std::string holder = read_holder(fd);
      close(fd);
      remove_created_folders();
      if (err == EWOULDBLOCK)
        throw UserError(target + ": still being written by process " + holder + " (it holds " + lock_path_ +
                        "); one " + what + " has one writer: wait for it, or stop it with kill -INT " + holder);
      throw UserError(lock_path_ + ": cannot lock (" + std::strerror(err) + ")");
    }
    struct stat held {}, named {};
    if (fstat(fd, &held) == 0 && stat(lock_path_.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev) {
      fd_ = fd;
      // the pid padded to one width and never a truncation: a lock file left by a dead holder
      // is overwritten in place, and read_holder reads the first line
      std::string pid = std::to_string(getpid());
      pid.resize(20, ' ');
      pid += "\n";
      if (pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
        // the lock holds without the pid in it; only the refusal of a second writer reads it
      }
      return;
    }
    close(fd);  // the holder removed it in between: lock the new one
  }
  throw UserError(lock_path_ + ": cannot lock (the file keeps being replaced)");
}

WriteLock::~WriteLock() {
  if (fd_ >= 0) {
    unlink(lock_path_.c_str());  // while still locked: a waiting process re-checks the name
    close(fd_);
  }
  remove_created_folders();
}

void WriteLock::remove_created_folders() {
  for (const auto& dir : created_) {
    std::error_code ec;
    if (!std::filesystem::remove(dir, ec)) break;  // not empty: the run wrote into it
  }
}

}  // namespace stale
