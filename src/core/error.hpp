#pragma once
// Errors of the harness. Two kinds, because a person reads them differently:
//  - UserError: the input is wrong (config key, value, file). The message is one line that
//    names the file/key/value and what would be valid; the CLI prints it and exits 2.
//  - InternalError (STALE_CHECK): an invariant of the code broke; carries file:line.
#include <sstream>
#include <stdexcept>
#include <string>

namespace stale {

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& msg) : std::runtime_error(msg) {}
};

// a write failed because the disk is full (ENOSPC; src/io/h5.cpp finds it in HDF5's error
// stack): the runner turns it into one line naming the run file and the space it needs
class DiskFull : public UserError {
 public:
  using UserError::UserError;
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& msg) : std::logic_error(msg) {}
};

namespace detail {
[[noreturn]] inline void check_failed(const char* expr, const char* file, int line,
                                      const std::string& hint) {
  std::ostringstream os;
  os << file << ":" << line << ": check failed: " << expr;
  if (!hint.empty()) os << " (" << hint << ")";
  throw InternalError(os.str());
}
}  // namespace detail

}  // namespace stale

#define STALE_CHECK(cond, hint)                                                 \
  do {                                                                          \
    if (!(cond)) ::stale::detail::check_failed(#cond, __FILE__, __LINE__, hint); \
  } while (0)
