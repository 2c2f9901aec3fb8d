#pragma once
// What a sweep's index needs from HDF5: the last values of a finished run file, and the
// index file itself (one dataset per column). HDF5 types stay inside src/io. The result
// columns, and the series each is read from, are the table of src/io/metrics_schema.hpp.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "src/io/metrics_schema.hpp"

namespace stale {

// Last logged values of a run file (index_columns() names the series); time_to_eps* is the
// first logged k (and time) with f − f_* ≤ epsilon (epsilon ≤ 0: not computed).
RunSummary read_run_summary(const std::string& path, double epsilon);
// The same summary for a run that finished in this process, from what it kept: the status and
// wall time its file's attributes hold, its last logged row and the rows of its new lows of
// f − f_*, its δ (RunResult::delta, /theory/delta), whether γ ≤ 1/L (/theory/lr_within_1_over_L), and
// the bound's L and whether it is the estimate (/theory/L, /theory/bound_uses_estimated_L).
// Equal to read_run_summary of its file (tests/run/test_sweep_engine.cpp); reading the nine files
// of an E1 ensemble back was 4 % of its sweep.
RunSummary run_summary_of(const std::string& status, double wall, int64_t delta, bool lr_within_1_over_L, double L,
                          bool L_estimated, const MetricsRow& last, const std::vector<SuboptLow>& lows, double epsilon);

struct IndexTable {
  std::string sweep, base;
  double epsilon = 0;
  std::vector<std::string> run, status, path;
  std::vector<int64_t> position;
  // the grid position of the earlier point that is the same run (-1: none; README "sweeps")
  std::vector<int64_t> duplicate_of;
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;  // key → value text per row
  std::vector<std::pair<const IndexColumn*, std::vector<double>>> columns;  // column → value per row
};

// Writes the table to path (through a temporary file renamed at the end); each result column
// carries its `unit` and `description` as attributes.
void write_index_h5(const std::string& path, const IndexTable& table);

}  // namespace stale
