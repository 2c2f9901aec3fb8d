#pragma once
// What a sweep's index needs from HDF5: the last values of a finished run file, and the
// index file itself (one dataset per column). HDF5 types stay inside src/io.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace stale {

struct RunSummary {
  std::string status = "missing";  // the run file's status, or "unreadable"
  double k = NAN, time = NAN, loss = NAN, subopt = NAN, grad_norm_sq = NAN, grad_norm_sq_mean = NAN, bound = NAN,
         wall = NAN, time_to_eps_k = NAN, time_to_eps = NAN;
};

// Last logged values of a run file; time_to_eps* is the first logged k (and time) with
// f − f_* ≤ epsilon (epsilon ≤ 0: not computed).
RunSummary read_run_summary(const std::string& path, double epsilon);

struct IndexTable {
  std::string sweep, base;
  double epsilon = 0;
  std::vector<std::string> run, status, path;
  std::vector<int64_t> position;
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;  // key → value text per row
  std::vector<std::pair<std::string, std::vector<double>>> columns;     // name → value per row
};

// Writes the table to path (through a temporary file renamed at the end).
void write_index_h5(const std::string& path, const IndexTable& table);

}  // namespace stale
