#pragma once
// LIBSVM text format: one sample per line, `label index:value ...`, 1-based increasing
// indices, absent features are zero. Labels ±1 or 0/1 are normalised to {0, 1}.
// Stored dense: the sets the harness uses (w7a: 25057 × 300, phishing: 11055 × 68) fit.
#include <string>

#include "objectives/linear_data.hpp"

namespace stale {

// dim > 0 pads (or rejects, if the file has more) to that many features; binary_labels =
// false keeps real-valued labels as they are (least squares on a regression set)
LinearData load_libsvm(const std::string& path, Index dim = 0, bool binary_labels = true);

// Where real data sets live: objective.data_dir, else $STALE_DATA_DIR, else the shared
// folder beside the repository (../shared/data), else ./data. A relative `file` is looked
// up there; an absolute one is taken as is. Throws a UserError naming the key and the
// places searched when the file is missing.
std::string resolve_data_file(const std::string& file, const std::string& data_dir_key_value,
                              const std::string& key = "objective.data");

}  // namespace stale
