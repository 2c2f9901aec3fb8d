#pragma once
// Files stale creates beside others' (an output folder, a sweep folder, a shared cache): never
// written through a link. Anyone who can write into such a folder can place a symbolic link, or a
// hard link, at a name stale is about to create (`RUN.h5.partial`, a sweep's log, a temporary
// `.partial.PID`); opening that name with O_CREAT | O_TRUNC would truncate the link's target, some
// other file of the user's. So the entry at the name is removed first (unlink removes a link,
// never its target) and the file is created with O_EXCL | O_NOFOLLOW: a link made in between makes
// the creation fail, it is not followed.
#include <ostream>
#include <memory>
#include <string>

namespace stale {

// Removes what is at `path` unless it is a directory (a file, a link: the link itself), so that a
// new file can be created there exclusively. Returns false with errno set where an entry stays.
bool clear_for_new_file(const std::string& path);

// Creates `path` as a new regular file (mode & ~umask), as above; the descriptor (close-on-exec),
// or -1 with errno set (EEXIST: something was placed there again in between).
int create_new_file(const std::string& path, unsigned mode = 0644);

// A std::ostream over a file made by create_new_file; `good()` is false when it could not be
// created (errno set). close() flushes and closes, and reports a failed write (a full disk).
class NewFileStream : public std::ostream {
 public:
  explicit NewFileStream(const std::string& path, bool binary = false);
  ~NewFileStream() override;
  NewFileStream(const NewFileStream&) = delete;
  NewFileStream& operator=(const NewFileStream&) = delete;
  void close();

 private:
  struct Buffer;
  std::unique_ptr<Buffer> buffer_;
};

}  // namespace stale
