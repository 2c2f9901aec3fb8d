#include "objectives/data/libsvm.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "src/core/error.hpp"
#include "src/core/memory.hpp"

namespace stale {

namespace {

// the token that starts at p, for messages: up to the next blank, at most 40 characters
std::string token_at(const char* p) {
  std::string t;
  while (*p && *p != ' ' && *p != '\t' && *p != '\r' && t.size() < 40) t += *p++;
  return t;
}

std::string number_g(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", x);
  return buf;
}

bool ends_token(char c) { return c == '\0' || c == ' ' || c == '\t' || c == '\r' || c == '#'; }

}  // namespace

DataStorage parse_data_storage(const std::string& value) {
  if (value == "dense") return DataStorage::Dense;
  if (value == "sparse") return DataStorage::Sparse;
  if (value == "auto") return DataStorage::Auto;
  throw UserError("config: objective.storage = \"" + value + "\" is not valid; choose one of: auto, dense, sparse");
}

bool auto_stores_sparse(Index n, Index d, Index nnz) {
  const double dense = static_cast<double>(n) * static_cast<double>(d) * sizeof(double);
  const double csr = 12.0 * static_cast<double>(nnz) + 4.0 * static_cast<double>(n + 1);
  return dense > kAutoSparseDenseBytes && csr < 0.5 * dense;
}

// Strict: every token must be a whole number (no `1:2abc`, no `nan`/`inf`, no index beyond
// 2^31 − 1), each error names file:line and what a line may hold, and the dense matrix is
// sized against the memory budget before it is allocated (a stray index of 1e9 would ask
// for n × 10^9 doubles).
LinearData load_libsvm(const std::string& path, Index dim, bool binary_labels, DataStorage storage) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UserError(path + ": is a directory, not a LIBSVM data file");
  std::ifstream in(path);
  if (!in) throw UserError(path + ": cannot open LIBSVM data file");
  struct Entry { Index row, col; double v; };
  std::vector<Entry> entries;
  std::vector<double> labels;
  std::vector<size_t> label_lines;
  Index max_col = 0;
  size_t max_col_line = 0;
  std::string line;
  size_t lineno = 0;
  constexpr long kMaxIndex = 2147483647L;
  const std::string valid = " (a line is `label index:value ...` with finite numbers and increasing indices >= 1)";
  while (std::getline(in, line)) {
    ++lineno;
    const std::string where = path + ":" + std::to_string(lineno) + ": ";
    if (line.find('\0') != std::string::npos) throw UserError(where + "holds a NUL byte; not a LIBSVM text file");
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const char* p = line.c_str() + first;
    char* end = nullptr;
    const double label = std::strtod(p, &end);
    if (end == p || !ends_token(*end))
      throw UserError(where + "expected a numeric label at the start of the line, got '" + token_at(p) + "'" + valid);
    if (!std::isfinite(label)) throw UserError(where + "label '" + token_at(p) + "' is not finite" + valid);
    p = end;
    const Index row = static_cast<Index>(labels.size());
    Index prev = 0;
    while (true) {
      while (*p == ' ' || *p == '\t' || *p == '\r') ++p;
      if (*p == '\0' || *p == '#') break;
      const char* tok = p;
      errno = 0;
      const long idx = std::strtol(p, &end, 10);
      if (end == p || *end != ':' || idx < 1 || !(*p >= '0' && *p <= '9'))
        throw UserError(where + "expected index:value with an integer index >= 1, got '" + token_at(tok) + "'" + valid);
      if (errno == ERANGE || idx > kMaxIndex)
        throw UserError(where + "feature index " + token_at(tok).substr(0, token_at(tok).find(':')) +
                        " is beyond 2147483647" + valid);
      p = end + 1;
      if (*p == ' ' || *p == '\t' || *p == '\0')
        throw UserError(where + "missing value after index " + std::to_string(idx) + valid);
      const double v = std::strtod(p, &end);
      if (end == p || !ends_token(*end))
        throw UserError(where + "malformed value in '" + token_at(tok) + "'" + valid);
      if (!std::isfinite(v)) throw UserError(where + "value in '" + token_at(tok) + "' is not finite" + valid);
      p = end;
      if (idx <= prev)
        throw UserError(where + "indices must increase (" + std::to_string(idx) + " follows " + std::to_string(prev) + ")");
      prev = idx;
      entries.push_back({row, static_cast<Index>(idx - 1), v});
      if (idx > max_col) max_col = idx, max_col_line = lineno;
    }
    labels.push_back(label);
    label_lines.push_back(lineno);
  }
  if (labels.empty()) throw UserError(path + ": no samples found (empty LIBSVM file?)" + valid);
  if (max_col == 0)
    throw UserError(path + ": has labels but no features (no index:value pair on any of its " +
                    std::to_string(labels.size()) + " lines)" + valid);
  if (dim > 0 && max_col > dim)
    throw UserError(path + ":" + std::to_string(max_col_line) + ": has feature index " + std::to_string(max_col) +
                    " > objective.dim = " + std::to_string(dim));
  const Index d = dim > 0 ? dim : max_col;
  // label check before the allocation: a wrong file fails fast
  bool has_neg = false;
  for (size_t i = 0; binary_labels && i < labels.size(); ++i) {
    const double l = labels[i];
    if (!(l == 1 || l == 0 || l == -1))
      throw UserError(path + ":" + std::to_string(label_lines[i]) + ": label " + number_g(l) +
                      " is not binary (valid: -1/+1 or 0/1)");
    has_neg |= l < 0;
  }
  const Index n = static_cast<Index>(labels.size()), nnz = static_cast<Index>(entries.size());
  const bool sparse = storage == DataStorage::Sparse || (storage == DataStorage::Auto && auto_stores_sparse(n, d, nnz));
  LinearData data;
  if (sparse) {
    // CSR with 32-bit indices: Eigen's default StorageIndex
    if (nnz > kMaxIndex)
      throw UserError(path + ": " + std::to_string(nnz) + " nonzeros exceed the 2147483647 a CSR matrix with 32-bit indices holds");
    check_memory(12.0 * static_cast<double>(nnz) + 4.0 * static_cast<double>(n + 1),
                 path + ": the CSR data matrix (" + std::to_string(nnz) + " nonzeros, " + std::to_string(n) + " x " +
                     std::to_string(d) + "), which",
                 "the file holds more nonzeros than memory allows");
    // CSR holds a stray index of 10^9 in a few bytes, but every vector of a run (w, gradients,
    // the constants' solver work: about 10) has d entries: refused here, naming the line
    check_memory(10.0 * static_cast<double>(d) * sizeof(double),
                 path + ":" + std::to_string(max_col_line) + ": feature index " + std::to_string(max_col) +
                     " makes d = " + std::to_string(d) + "; the ~10 vectors of length d a run keeps",
                 "check that index (the feature count is the largest index)");
    // entries come row by row with increasing indices: CSR's own order, filled without a sort
    data.X_sparse.resize(n, d);
    data.X_sparse.reserve(nnz);
    size_t e = 0;
    for (Index row = 0; row < n; ++row) {
      data.X_sparse.startVec(row);
      for (; e < entries.size() && entries[e].row == row; ++e) data.X_sparse.insertBack(row, entries[e].col) = entries[e].v;
    }
    data.X_sparse.finalize();
  } else {
    check_memory(static_cast<double>(n) * static_cast<double>(d) * sizeof(double),
                 path + ":" + std::to_string(max_col_line) + ": feature index " + std::to_string(max_col) +
                     " makes the dense data matrix " + std::to_string(n) + " x " + std::to_string(d) + ", which",
                 "check that index (the feature count is the largest index), or store the data sparse: "
                 "objective.storage = \"sparse\"");
    data.X = Mat::Zero(n, d);
    for (const auto& e : entries) data.X(e.row, e.col) = e.v;
  }
  data.y.resize(static_cast<Index>(labels.size()));
  // labels: {−1, +1} or {0, 1} (phishing) → {0, 1}; real targets (least squares) as they are
  for (size_t i = 0; i < labels.size(); ++i) {
    const double l = labels[i];
    data.y(static_cast<Index>(i)) = !binary_labels ? l : (has_neg ? l > 0 : l == 1) ? 1.0 : 0.0;
  }
  data.description = "libsvm " + std::filesystem::path(path).filename().string();
  return data;
}

namespace {
// a device, pipe or socket (/dev/zero, /dev/stdin) has no size and may never end: refused
// before a reader grows a line or a corpus without bound (a directory keeps its own message)
const std::string& data_file(const std::string& path, const std::string& key) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (!ec && st.type() != fs::file_type::regular && st.type() != fs::file_type::directory)
    throw UserError("config: " + key + " = \"" + path + "\": not a regular file (a device, pipe or socket may never "
                    "end); valid: a data file on disk");
  return path;
}
}  // namespace

std::string resolve_data_file(const std::string& file, const std::string& data_dir, const std::string& key) {
  namespace fs = std::filesystem;
  if (file.empty()) throw UserError("config: " + key + " is empty; name a LIBSVM file, e.g. w7a.libsvm or phishing.libsvm");
  if (fs::path(file).is_absolute()) {
    if (!fs::exists(file)) throw UserError("config: " + key + " = \"" + file + "\": file not found");
    return data_file(file, key);
  }
  std::vector<std::string> dirs;
  if (!data_dir.empty()) dirs.push_back(data_dir);
  if (const char* env = std::getenv("STALE_DATA_DIR")) dirs.push_back(env);
  dirs.push_back("../shared/data");
  dirs.push_back("data");
  dirs.push_back(".");
  for (const auto& d : dirs) {
    const fs::path p = fs::path(d) / file;
    if (fs::exists(p)) return data_file(p.string(), key);
  }
  std::string tried;
  for (const auto& d : dirs) tried += (tried.empty() ? "" : ", ") + d;
  throw UserError("config: " + key + " = \"" + file + "\": file not found in " + tried +
                  " (set objective.data_dir or STALE_DATA_DIR, or run scripts/download_data.sh)");
}

}  // namespace stale
