#include "src/commands/output_schema.hpp"

#include "src/io/metrics_schema.hpp"

namespace stale {

std::vector<OutputColumnRow> metric_rows() {
  std::vector<OutputColumnRow> rows;
  for (const auto& c : metric_columns()) rows.push_back({c.name, dtype_name(c.type()), c.unit, c.description, ""});
  return rows;
}

std::vector<OutputColumnRow> index_rows() {
  std::vector<OutputColumnRow> rows;
  for (const auto& c : index_columns())
    rows.push_back({c.name, dtype_name(ColumnType::Float64), c.unit, c.description,
                    c.metric ? std::string("/metrics/") + c.metric : std::string()});
  return rows;
}

}  // namespace stale
