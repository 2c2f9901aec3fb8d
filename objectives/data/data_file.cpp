#include "objectives/data/data_file.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <vector>

#include "objectives/data/csv.hpp"
#include "objectives/data/hdf5_arrays.hpp"
#include "objectives/data/libsvm.hpp"
#include "objectives/data/npy.hpp"
#include "src/core/error.hpp"

namespace stale {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i]) return false;
  return true;
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "(";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + (s.size() == 1 ? ",)" : ")");
}

Mat as_matrix(const NpyArray& a, const std::string& what) {
  if (a.shape.size() != 2) throw UserError(what + ": X has shape " + shape_text(a.shape) + ", expected a 2-D n × d matrix");
  Mat X(a.shape[0], a.shape[1]);
  for (Index i = 0; i < X.rows(); ++i)
    for (Index j = 0; j < X.cols(); ++j) X(i, j) = a.values[static_cast<size_t>(i * X.cols() + j)];
  return X;
}

Vec as_vector(const NpyArray& a, const std::string& what, const std::string& name) {
  const bool column = a.shape.size() == 2 && a.shape[1] == 1;
  if (a.shape.size() != 1 && !column)
    throw UserError(what + ": " + name + " has shape " + shape_text(a.shape) + ", expected a vector");
  return Eigen::Map<const Vec>(a.values.data(), static_cast<Index>(a.values.size()));
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, ',');) {
    const auto a = part.find_first_not_of(' '), z = part.find_last_not_of(' ');
    out.push_back(a == std::string::npos ? "" : part.substr(a, z - a + 1));
  }
  return out;
}

// the one place every format's shapes and values are checked
void check(LinearData& data, const std::string& what, bool binary_labels) {
  if (data.n() < 1 || data.d() < 1)
    throw UserError(what + ": X is " + std::to_string(data.n()) + " × " + std::to_string(data.d()) + ", needs n, d >= 1");
  if (data.y.size() != data.n())
    throw UserError(what + ": y has " + std::to_string(data.y.size()) + " entries but X has n = " + std::to_string(data.n()) + " rows");
  if (data.w_true && data.w_true->size() != data.d())
    throw UserError(what + ": w_true has " + std::to_string(data.w_true->size()) + " entries but X has d = " +
                    std::to_string(data.d()) + " columns");
  for (Index j = 0; j < data.d(); ++j)
    for (Index i = 0; i < data.n(); ++i)
      if (!std::isfinite(data.X(i, j)))
        throw UserError(what + ": X[" + std::to_string(i) + ", " + std::to_string(j) + "] is not finite");
  for (Index i = 0; i < data.n(); ++i)
    if (!std::isfinite(data.y(i))) throw UserError(what + ": y[" + std::to_string(i) + "] is not finite");
  if (data.w_true && !data.w_true->allFinite()) throw UserError(what + ": w_true has a non-finite entry");
  // finite values whose squares are not (|x| above ~1e154): f, its gradient and L overflow, and the
  // run ended as "diverged at k = 1" with NaN constants, which blamed the method for the data
  const double big = std::max(data.X.cwiseAbs().maxCoeff(), binary_labels ? 0.0 : data.y.cwiseAbs().maxCoeff());
  if (!std::isfinite(big * big * static_cast<double>(std::max(data.n(), data.d())))) {
    std::ostringstream v;
    v << big;
    throw UserError(what + ": values up to " + v.str() +
                    " overflow in double precision once squared (f, its gradient and L would not be finite): scale "
                    "the data, e.g. standardise each column");
  }
  if (!binary_labels) return;
  const bool has_neg = (data.y.array() < 0).any();
  for (Index i = 0; i < data.n(); ++i) {
    const double l = data.y(i);
    if (!(l == 1 || l == 0 || l == -1) || (has_neg && l == 0)) {
      std::ostringstream v;
      v << l;
      throw UserError(what + ": label y[" + std::to_string(i) + "] = " + v.str() +
                      " is not binary (logistic regression needs labels ±1 or 0/1)");
    }
    data.y(i) = (has_neg ? l > 0 : l == 1) ? 1.0 : 0.0;
  }
}

}  // namespace

void check_linear_data(LinearData& data, const std::string& what, bool binary_labels) { check(data, what, binary_labels); }

std::string data_file_format(const std::string& spec) {
  if (spec.find(',') != std::string::npos || ends_with(spec, ".npy")) return "npy";
  if (ends_with(spec, ".npz")) return "npz";
  if (ends_with(spec, ".h5") || ends_with(spec, ".hdf5")) return "hdf5";
  if (ends_with(spec, ".csv")) return "csv";
  return "libsvm";
}

LinearData load_linear_data_file(const std::string& spec, const std::string& data_dir, const std::string& label_column,
                                 bool binary_labels) {
  const std::string format = data_file_format(spec);
  LinearData data;
  std::string what;
  if (format == "npy") {
    const auto parts = split_commas(spec);
    if (parts.size() < 2 || parts.size() > 3)
      throw UserError("config: objective.data = \"" + spec +
                      "\": .npy data are a comma-separated pair \"X.npy,y.npy\" (optionally \",w_true.npy\"), or one .npz");
    std::vector<std::string> paths;
    for (const auto& p : parts) {
      if (!ends_with(p, ".npy")) throw UserError("config: objective.data = \"" + spec + "\": \"" + p + "\" is not a .npy file");
      paths.push_back(resolve_data_file(p, data_dir));
    }
    data.X = as_matrix(load_npy(paths[0]), paths[0]);
    data.y = as_vector(load_npy(paths[1]), paths[1], "y");
    if (paths.size() == 3) data.w_true = as_vector(load_npy(paths[2]), paths[2], "w_true");
    what = paths[0] + " + " + paths[1];
    data.source_path = std::filesystem::absolute(paths[0]).lexically_normal().string();  // X: the run file's checksum
    data.description = "npy " + std::filesystem::path(paths[0]).filename().string() + ", " +
                       std::filesystem::path(paths[1]).filename().string();
    check(data, what, binary_labels);
    return data;
  }
  const std::string path = resolve_data_file(spec, data_dir);
  const std::string file = std::filesystem::path(path).filename().string();
  if (format == "npz") {
    auto arrays = load_npz(path);
    for (const char* need : {"X", "y"})
      if (!arrays.count(need)) {
        std::string names;
        for (const auto& [k, v] : arrays) names += (names.empty() ? "" : ", ") + k;
        throw UserError(path + ": no array named " + need + " (expected X, y and optionally w_true; found " + names + ")");
      }
    data.X = as_matrix(arrays.at("X"), path);
    data.y = as_vector(arrays.at("y"), path, "y");
    if (arrays.count("w_true")) data.w_true = as_vector(arrays.at("w_true"), path, "w_true");
  } else if (format == "hdf5") {
    data = load_hdf5_arrays(path);
  } else if (format == "csv") {
    data = load_csv(path, label_column);
  } else {
    data = load_libsvm(path, 0, binary_labels);  // maps binary labels to {0, 1} itself
  }
  data.description = format + " " + file;
  data.source_path = std::filesystem::absolute(path).lexically_normal().string();
  check(data, path, binary_labels);
  return data;
}

}  // namespace stale
