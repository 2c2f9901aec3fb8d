#include "objectives/data/csv.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "src/core/error.hpp"

namespace stale {

namespace {

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  for (auto& f : out) {
    const auto a = f.find_first_not_of(' '), z = f.find_last_not_of(' ');
    f = a == std::string::npos ? "" : f.substr(a, z - a + 1);
    if (f.size() >= 2 && f.front() == '"' && f.back() == '"') f = f.substr(1, f.size() - 2);
  }
  return out;
}

}  // namespace

LinearData load_csv(const std::string& path, const std::string& label_column) {
  std::ifstream in(path);
  if (!in) throw UserError(path + ": cannot open CSV data file");
  std::string line;
  size_t lineno = 0;
  std::vector<std::string> header;
  while (header.empty() && std::getline(in, line)) {
    ++lineno;
    // Excel's "CSV UTF-8" starts with a byte-order mark: left on, it becomes part of the first
    // column's name (a label column there was "not found"), as delay tables already strip it
    if (lineno == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    if (line.find_first_not_of(" \t\r") != std::string::npos) header = split_fields(line);
  }
  if (header.empty()) throw UserError(path + ": empty CSV file (expected a header row naming the columns)");
  int label = -1;
  for (size_t j = 0; j < header.size(); ++j)
    if (header[j] == label_column) {
      if (label >= 0) throw UserError(path + ": two columns are named \"" + label_column + "\"");
      label = static_cast<int>(j);
    }
  if (label < 0) {
    std::string names;
    for (const auto& h : header) names += (names.empty() ? "" : ", ") + h;
    throw UserError(path + ": no column named \"" + label_column + "\" (objective.label_column) in the header: " + names);
  }
  if (header.size() < 2) throw UserError(path + ": the CSV has a label column but no feature columns");
  const size_t cols = header.size();
  std::vector<double> values;  // row-major features
  std::vector<double> labels;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto fields = split_fields(line);
    const std::string at = path + ":" + std::to_string(lineno) + ": ";
    if (fields.size() != cols)
      throw UserError(at + std::to_string(fields.size()) + " fields, the header has " + std::to_string(cols));
    for (size_t j = 0; j < cols; ++j) {
      const char* p = fields[j].c_str();
      char* end = nullptr;
      const double v = std::strtod(p, &end);
      if (fields[j].empty() || *end != '\0')
        throw UserError(at + "column \"" + header[j] + "\": \"" + fields[j] + "\" is not a number");
      if (!std::isfinite(v)) throw UserError(at + "column \"" + header[j] + "\": " + fields[j] + " is not finite");
      (static_cast<int>(j) == label ? labels : values).push_back(v);
    }
  }
  if (labels.empty()) throw UserError(path + ": the CSV has a header but no data rows");
  const Index n = static_cast<Index>(labels.size()), d = static_cast<Index>(cols - 1);
  LinearData data;
  data.X.resize(n, d);
  data.y.resize(n);
  for (Index i = 0; i < n; ++i) {
    data.y(i) = labels[static_cast<size_t>(i)];
    for (Index j = 0; j < d; ++j) data.X(i, j) = values[static_cast<size_t>(i * d + j)];
  }
  return data;
}

}  // namespace stale
