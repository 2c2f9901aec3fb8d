#pragma once
// The one table of what a run logs and what a sweep's index reports (issue 10, item 4): the run
// file's /metrics series and the index's result columns, each row with its name, element type,
// unit, meaning and the struct member it comes from. Everything that writes or reads these
// columns goes through the tables: the run file (src/io/run_file.cpp: datasets, their `unit` and
// `description` attributes, resume), the in-memory run and the Python module
// (python/stale_module.cpp), checkpoints (split_row/join_row), the sweep index
// (src/sweep/sweep_index.cpp, src/io/sweep_index_file.cpp) and `stale schema` — whose `--json`
// is what scripts/check_metrics_schema.py compares scripts/stale_analysis/schema.py with. A new
// series is one MetricsRow member and one row here.
#include <cmath>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace stale {

// One logged update: a row of /metrics (MetricsRecorder::make_row fills it).
struct MetricsRow {
  int64_t k = 0;
  double time = 0, loss = 0, subopt = 0, grad_norm_sq = 0, grad_norm_sq_mean = 0, stale_dist = 0;
  int64_t stage = -1, batch = -1;
  double bound = 0, bound_opt = 0, bound_stoch = 0, bound_stale = 0, G = 0, wall = 0;
  double batch_loss = 0;  // loss at the last stage's forward of the latest update's micro-batch
  double val_loss = 0;    // held-out loss (NaN when the objective has no held-out set)
};

// One run's row of a sweep index: the run file's status and last values (read_run_summary).
struct RunSummary {
  std::string status = "missing";  // the run file's status, or "unreadable"
  double k = NAN, time = NAN, loss = NAN, subopt = NAN, grad_norm_sq = NAN, grad_norm_sq_mean = NAN, bound = NAN,
         bound_opt = NAN, bound_stoch = NAN, bound_stale = NAN, G = NAN, delta = NAN, lr_within_1_over_L = NAN,
         L = NAN, L_estimated = NAN, wall = NAN, time_to_eps_k = NAN, time_to_eps = NAN;
};

// A logged row whose f − f_* fell below every earlier row's: for any ε, the first row with
// f − f_* ≤ ε is one of these (a sweep index's time_to_eps from a run kept in memory)
struct SuboptLow {
  double k, time, subopt;
};

enum class ColumnType { Int64, Float64 };
// numpy's name of the type ("int64", "float64"): what h5py reports as a dataset's dtype
const char* dtype_name(ColumnType t);

struct MetricColumn {
  const char* name;         // /metrics/<name>
  const char* unit;
  const char* description;
  std::variant<int64_t MetricsRow::*, double MetricsRow::*> member;  // its type is the column's
  ColumnType type() const { return member.index() == 0 ? ColumnType::Int64 : ColumnType::Float64; }
};
// /metrics, in the run file's order (which is MetricsRow's)
const std::vector<MetricColumn>& metric_columns();

struct IndexColumn {
  const char* name;         // the index.csv column and the index.h5 dataset
  const char* unit;
  const char* description;
  double RunSummary::*member;
  const char* metric;       // the /metrics series whose last value it is; null: computed by read_run_summary
};
// the index's result columns (float64, empty in the CSV / NaN when missing), in index.csv order;
// the index also has run, position, the sweep's axes and status before them and path after
const std::vector<IndexColumn>& index_columns();

// A row as its integer and its floating-point columns, each in table order: the layout of a
// checkpoint's last row (MetricsRecorder::save), so resume reads what was written.
void split_row(const MetricsRow& row, std::vector<int64_t>& ints, std::vector<double>& reals);
// the inverse; a UserError naming `what` when the sizes do not match the table
MetricsRow join_row(const std::vector<int64_t>& ints, const std::vector<double>& reals, const std::string& what);

}  // namespace stale
