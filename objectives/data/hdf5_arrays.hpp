#pragma once
// Linear-model data from an HDF5 file: /X (n × d, row-major as h5py writes it), /y (n), and
// optionally /w_true (d), of any numeric type. Read through the project's HDF5 layer
// (src/io/h5.hpp), so this file never includes <hdf5.h>.
#include <string>

#include "objectives/linear/linear_data.hpp"

namespace stale {

LinearData load_hdf5_arrays(const std::string& path);

}  // namespace stale
