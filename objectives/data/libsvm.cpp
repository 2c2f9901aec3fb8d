#include "objectives/data/libsvm.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "src/core/error.hpp"

namespace stale {

LinearData load_libsvm(const std::string& path, Index dim, bool binary_labels) {
  std::ifstream in(path);
  if (!in) throw UserError(path + ": cannot open LIBSVM data file");
  struct Entry { Index row, col; double v; };
  std::vector<Entry> entries;
  std::vector<double> labels;
  Index max_col = 0;
  std::string line;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const char* p = line.c_str();
    char* end = nullptr;
    const double label = std::strtod(p, &end);
    if (end == p) throw UserError(path + ":" + std::to_string(lineno) + ": expected a numeric label at the start of the line");
    p = end;
    const Index row = static_cast<Index>(labels.size());
    Index prev = 0;
    while (true) {
      while (*p == ' ' || *p == '\t' || *p == '\r') ++p;
      if (*p == '\0' || *p == '#') break;
      const long idx = std::strtol(p, &end, 10);
      if (end == p || *end != ':' || idx < 1)
        throw UserError(path + ":" + std::to_string(lineno) + ": expected index:value with index >= 1");
      p = end + 1;
      const double v = std::strtod(p, &end);
      if (end == p) throw UserError(path + ":" + std::to_string(lineno) + ": missing value after index " + std::to_string(idx));
      p = end;
      if (idx <= prev) throw UserError(path + ":" + std::to_string(lineno) + ": indices must increase");
      prev = idx;
      entries.push_back({row, static_cast<Index>(idx - 1), v});
      max_col = std::max<Index>(max_col, idx);
    }
    labels.push_back(label);
  }
  if (labels.empty()) throw UserError(path + ": no samples found (empty LIBSVM file?)");
  if (dim > 0 && max_col > dim)
    throw UserError(path + ": has feature index " + std::to_string(max_col) + " > objective.dim = " + std::to_string(dim));
  const Index d = dim > 0 ? dim : max_col;
  LinearData data;
  data.X = Mat::Zero(static_cast<Index>(labels.size()), d);
  for (const auto& e : entries) data.X(e.row, e.col) = e.v;
  data.y.resize(static_cast<Index>(labels.size()));
  // labels: {−1, +1} or {0, 1} (phishing) → {0, 1}
  bool has_neg = false;
  for (double l : labels) has_neg |= l < 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const double l = labels[i];
    if (!binary_labels) {
      data.y(static_cast<Index>(i)) = l;
      continue;
    }
    if (!(l == 1 || l == 0 || l == -1)) throw UserError(path + ": label " + std::to_string(l) + " is not binary (±1 or 0/1)");
    data.y(static_cast<Index>(i)) = (has_neg ? l > 0 : l == 1) ? 1.0 : 0.0;
  }
  data.description = "libsvm " + std::filesystem::path(path).filename().string();
  return data;
}

std::string resolve_data_file(const std::string& file, const std::string& data_dir, const std::string& key) {
  namespace fs = std::filesystem;
  if (file.empty()) throw UserError("config: " + key + " is empty; name a LIBSVM file, e.g. w7a.libsvm or phishing.libsvm");
  if (fs::path(file).is_absolute()) {
    if (!fs::exists(file)) throw UserError("config: " + key + " = \"" + file + "\": file not found");
    return file;
  }
  std::vector<std::string> dirs;
  if (!data_dir.empty()) dirs.push_back(data_dir);
  if (const char* env = std::getenv("STALE_DATA_DIR")) dirs.push_back(env);
  dirs.push_back("../shared/data");
  dirs.push_back("data");
  dirs.push_back(".");
  for (const auto& d : dirs) {
    const fs::path p = fs::path(d) / file;
    if (fs::exists(p)) return p.string();
  }
  std::string tried;
  for (const auto& d : dirs) tried += (tried.empty() ? "" : ", ") + d;
  throw UserError("config: " + key + " = \"" + file + "\": file not found in " + tried +
                  " (set objective.data_dir or STALE_DATA_DIR, or run scripts/download_data.sh)");
}

}  // namespace stale
