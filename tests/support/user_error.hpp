#pragma once
// The message of the UserError a call throws, for tests of one-line error messages.
#include <functional>
#include <string>

#include "src/core/error.hpp"

namespace stale::test {

// what f throws as a UserError ("" if it throws none)
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace stale::test
