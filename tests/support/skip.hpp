#pragma once
// Skipping a test at run time. doctest 2.4 has no run-time skip, so a skipped test prints
// kSkipMarker with its reason and returns; CTest reports every test whose output holds the
// marker as skipped, not passed (SKIP_REGULAR_EXPRESSION in CMakeLists.txt). A direct run of
// a test executable counts it as passed and shows the marker line.
#include <doctest/doctest.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "objectives/data/libsvm.hpp"
#include "src/core/error.hpp"

namespace stale::test {

// what CTest matches to report a test as skipped (keep in sync with CMakeLists.txt)
inline constexpr const char* kSkipMarker = "STALE_TEST_SKIPPED";

inline void report_skipped(const std::string& why) {
  std::cout << kSkipMarker << ": " << why << std::endl;
  MESSAGE("skipped: " << why);
}

// True when the real data file `name` (w7a, phishing, tinyshakespeare.txt) is found where
// runs look for it ($STALE_DATA_DIR, ../shared/data, ./data: objectives/data/libsvm.hpp);
// otherwise the test is reported skipped, or fails when STALE_REQUIRE_DATA=1 says the data
// must be there.
inline bool have_data_file(const std::string& name) {
  try {
    resolve_data_file(name, "");
    return true;
  } catch (const UserError& e) {
    const char* required = std::getenv("STALE_REQUIRE_DATA");
    if (required && std::string(required) == "1") FAIL("STALE_REQUIRE_DATA=1 but " << e.what());
    report_skipped(std::string("no real data: ") + e.what());
    return false;
  }
}

}  // namespace stale::test
