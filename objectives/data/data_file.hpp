#pragma once
// A user's data file for the linear models (objective.generator = "file"), its format chosen
// by extension:
//   .npz                 arrays X, y and optionally w_true (np.savez)
//   X.npy,y.npy[,w.npy]  a pair (or triple) of .npy files, comma-separated
//   .h5 / .hdf5          datasets /X, /y and optionally /w_true
//   .csv                 a header row; the label column named by objective.label_column
//   anything else        LIBSVM text (objectives/data/libsvm.hpp)
// Shapes and values are checked here, once for every format: X is n × d with n, d ≥ 1, y has
// n entries, w_true has d, every value is finite, and for logistic regression the labels are
// binary (±1 or 0/1, mapped to {0, 1} as for LIBSVM). Each problem is one UserError line that
// names the file.
#include <string>

#include "objectives/linear/linear_data.hpp"

namespace stale {

// `spec` is objective.data as written; relative paths are resolved like LIBSVM files
LinearData load_linear_data_file(const std::string& spec, const std::string& data_dir, const std::string& label_column,
                                 bool binary_labels);

// the checks every format gets, for data from elsewhere (the Python package's arrays):
// shapes, finite values, binary labels mapped to {0, 1} when binary_labels; `what` names the
// source in the one-line UserError
void check_linear_data(LinearData& data, const std::string& what, bool binary_labels);

// the format load_linear_data_file picks for a file name: npz, npy, hdf5, csv or libsvm
std::string data_file_format(const std::string& spec);

}  // namespace stale
