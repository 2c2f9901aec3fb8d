#pragma once
// `schema`: what the outputs hold — the run file's /metrics series and the sweep index's
// columns, each with its dtype, unit and meaning (src/io/metrics_schema.hpp is the table). The
// one implementation behind `stale schema` (text, or --json for scripts/check_metrics_schema.py)
// and stale.schema() (dicts).
#include <string>
#include <vector>

namespace stale {

struct OutputColumnRow {
  std::string name, dtype, unit, description;
  std::string source;  // an index column: the /metrics series whose last value it is ("" when none)
};

// /metrics, in the run file's order
std::vector<OutputColumnRow> metric_rows();
// index.csv / index.h5, in their order
std::vector<OutputColumnRow> index_rows();

}  // namespace stale
