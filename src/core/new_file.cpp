#include "src/core/new_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ext/stdio_filebuf.h>

namespace stale {

bool clear_for_new_file(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return errno == ENOENT;
  if (S_ISDIR(st.st_mode)) {
    errno = EISDIR;
    return false;
  }
  return unlink(path.c_str()) == 0 || errno == ENOENT;
}

int create_new_file(const std::string& path, unsigned mode) {
  if (!clear_for_new_file(path)) return -1;
  return open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, static_cast<mode_t>(mode));
}

struct NewFileStream::Buffer {
  explicit Buffer(int fd, std::ios::openmode m) : buf(fd, m) {}
  __gnu_cxx::stdio_filebuf<char> buf;
};

NewFileStream::NewFileStream(const std::string& path, bool binary) : std::ostream(nullptr) {
  const int fd = create_new_file(path);
  if (fd < 0) {
    setstate(std::ios::badbit);
    return;
  }
  buffer_ = std::make_unique<Buffer>(fd, std::ios::out | (binary ? std::ios::binary : std::ios::openmode{}));
  rdbuf(&buffer_->buf);
}

NewFileStream::~NewFileStream() = default;  // the buffer closes its descriptor

void NewFileStream::close() {
  if (!buffer_ || !buffer_->buf.is_open()) return;
  flush();
  // stdio_filebuf's close() writes what it holds and closes the descriptor; null when either
  // fails (a full disk, a deferred write error)
  if (buffer_->buf.close() == nullptr) setstate(std::ios::badbit);
}

}  // namespace stale
