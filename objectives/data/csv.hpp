#pragma once
// A numeric CSV table with a header row: one sample per line, the label in the column named
// `label_column` (objective.label_column), every other column a feature, in file order.
// Fields are plain numbers (surrounding spaces and double quotes allowed); blank lines are
// skipped. Every malformed line is a UserError naming file:line and what is wrong.
#include <string>

#include "objectives/linear/linear_data.hpp"

namespace stale {

// X (n × d) and y; labels are returned as written (the caller checks them for the loss)
LinearData load_csv(const std::string& path, const std::string& label_column);

}  // namespace stale
