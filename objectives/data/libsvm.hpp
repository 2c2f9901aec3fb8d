#pragma once
// LIBSVM text format: one sample per line, `label index:value ...`, 1-based increasing
// indices, absent features are zero. Labels ±1 or 0/1 are normalised to {0, 1}.
// Stored dense (the sets the harness uses, w7a: 25057 × 300, phishing: 11055 × 68, fit) or,
// with objective.storage, as CSR (LinearData::X_sparse) for data whose dense X would not fit.
#include <string>

#include "objectives/linear/linear_data.hpp"

namespace stale {

// objective.storage: dense X, CSR X, or auto (auto_stores_sparse)
enum class DataStorage { Dense, Sparse, Auto };
DataStorage parse_data_storage(const std::string& value);  // "dense" | "sparse" | "auto"

// The auto rule: CSR when the dense n × d matrix would exceed kAutoSparseDenseBytes (1 GiB) and
// the CSR arrays (12 bytes per nonzero + 4 per row) take less than half of it. Below 1 GiB
// the dense path is kept: it is the one every committed result was made with (bit for bit),
// it has the GPU twin and the Hessian tracker, and it is fast enough there (w7a, 60 MB dense
// at 3.9 % density). The threshold is a fixed number, not a fraction of the free memory, so
// that which path a config takes (and its last bits) never depends on the machine.
constexpr double kAutoSparseDenseBytes = 1024.0 * 1024.0 * 1024.0;
bool auto_stores_sparse(Index n, Index d, Index nnz);

// dim > 0 pads (or rejects, if the file has more) to that many features; binary_labels =
// false keeps real-valued labels as they are (least squares on a regression set)
LinearData load_libsvm(const std::string& path, Index dim = 0, bool binary_labels = true,
                       DataStorage storage = DataStorage::Dense);

// Where real data sets live: objective.data_dir, else $STALE_DATA_DIR, else the shared
// folder beside the repository (../shared/data), else ./data. A relative `file` is looked
// up there; an absolute one is taken as is. Throws a UserError naming the key and the
// places searched when the file is missing.
std::string resolve_data_file(const std::string& file, const std::string& data_dir_key_value,
                              const std::string& key = "objective.data");

}  // namespace stale
