#include "objectives/data/hdf5_arrays.hpp"

#include "src/core/error.hpp"
#include "src/io/h5.hpp"

namespace stale {

LinearData load_hdf5_arrays(const std::string& path) {
  auto file = h5::open_file_readonly(path);  // names the path when it is not HDF5
  auto read = [&](const std::string& name, std::vector<hsize_t>& dims) {
    if (!h5::exists(file.id(), name)) throw UserError(path + ": no dataset " + name + " (expected /X, /y and optionally /w_true)");
    try {
      return h5::read_array_double(file.id(), name, dims);
    } catch (const UserError& e) {
      throw UserError(path + ": " + e.what());
    }
  };
  std::vector<hsize_t> dx, dy, dw;
  const auto X = read("/X", dx);
  const auto y = read("/y", dy);
  if (dx.size() != 2) throw UserError(path + ": /X has rank " + std::to_string(dx.size()) + ", expected a 2-D n × d matrix");
  const Index n = static_cast<Index>(dx[0]), d = static_cast<Index>(dx[1]);
  LinearData data;
  data.X.resize(n, d);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < d; ++j) data.X(i, j) = X[static_cast<size_t>(i * d + j)];
  data.y = Eigen::Map<const Vec>(y.data(), static_cast<Index>(y.size()));
  if (dy.size() != 1 && !(dy.size() == 2 && dy[1] == 1))
    throw UserError(path + ": /y has shape of rank " + std::to_string(dy.size()) + ", expected a vector of n = " + std::to_string(n));
  if (h5::exists(file.id(), "/w_true")) {
    const auto w = read("/w_true", dw);
    data.w_true = Eigen::Map<const Vec>(w.data(), static_cast<Index>(w.size()));
  }
  return data;
}

}  // namespace stale
