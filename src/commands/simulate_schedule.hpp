#pragma once
// `schedule`: build a pipeline schedule, simulate it under a cost model, write the schedule file
// and the Chrome trace. The one implementation behind `stale schedule` and stale.schedule(): the
// front ends parse their arguments into a ScheduleRequest and format the ScheduleOutcome, and
// every check (the memory guard above all) lives here, so both refuse the same input the same way.
#include <cstdint>
#include <string>
#include <vector>

#include "src/pipeline/cost_model.hpp"
#include "src/pipeline/schedule.hpp"
#include "src/pipeline/simulator.hpp"

namespace stale {

struct ScheduleRequest {
  std::string name;
  ScheduleParams params;
  std::vector<std::string> costs;  // key=value terms of CostModel::parse
  int64_t steady_margin = -1;
  std::string out;    // schedule file (HDF5); empty: none
  std::string trace;  // Chrome trace (JSON); empty: none
  // what the caller keeps in memory beyond what the files need: the op timeline and the read
  // and update tables (Python returns them as arrays)
  bool keep_timeline = false;
  // the full K × blocks delay tables: Auto keeps them when a file is written or kept in memory
  // and they hold at most ScheduleFileOptions::max_table_entries entries
  enum class Tables { Auto, Always, Never } delay_table = Tables::Auto;
  // bytes per op the caller copies out of the result (Python's arrays), counted by the guard
  double caller_bytes_per_op = 0;
};

struct ScheduleOutcome {
  Schedule schedule;
  SimResult result;
  CostModel costs;
  bool delay_table = false;  // whether result holds the full delay tables
};

ScheduleOutcome simulate_schedule(const ScheduleRequest& request);

}  // namespace stale
