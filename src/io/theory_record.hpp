#pragma once
// The /theory record of a run: every constant the bound used, with its name, in the order the
// run file writes them. The run file's /theory attributes (src/io/run_file.cpp) and the
// in-memory `.theory` of stale.run() (python/stale_module.cpp) are both this one list, so a
// script written against one works on the other (issue 51: they were two copies that had
// drifted apart: keys present in one only, flags as bool in one and 0/1 in the other).
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "src/io/run_log.hpp"

namespace stale {

// a flag is an int64_t 0/1 (HDF5 has no bool attribute)
using TheoryValue = std::variant<int64_t, double, std::string>;

struct TheoryEntry {
  std::string name;
  TheoryValue value;
};

std::vector<TheoryEntry> theory_record(const TheoryConstants& t);

}  // namespace stale
