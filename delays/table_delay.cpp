// Replays a recorded delay table (K rows × S blocks): from a CSV, or from the /delays dataset
// of a run or schedule file, so RPD can follow exactly the delays a schedule produced.
#include <algorithm>
#include <charconv>
#include <optional>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "delays/delay_registry.hpp"
#include "src/config/config.hpp"
#include "src/core/error.hpp"
#include "src/io/delay_table_file.hpp"

namespace stale {
namespace {

class TableDelay final : public DelayModel {
 public:
  TableDelay(std::vector<int64_t> t, int64_t rows, int cols, std::string path)
      : t_(std::move(t)), rows_(rows), cols_(cols), path_(std::move(path)) {
    for (int64_t k = 0; k < rows_; ++k)
      for (int i = 0; i < cols_; ++i) {
        const int64_t v = t_[k * cols_ + i];
        if (v < 0 || v > k)
          throw UserError(path_ + ": delay table row " + std::to_string(k) + ", block " + std::to_string(i) + " = " +
                          std::to_string(v) + " is invalid; a delay must lie in 0..k");
        bound_ = std::max(bound_, v);
        sum_ += static_cast<double>(v);
      }
  }
  std::string name() const override { return "table"; }
  int64_t bound() const override { return bound_; }
  int64_t delay(int64_t k, int block) const override {
    STALE_CHECK(k < rows_, "update beyond the delay table; make_delay_model checks method.updates");
    return t_[k * cols_ + block];
  }
  double steady_state_mean() const override { return sum_ / static_cast<double>(std::max<int64_t>(1, rows_ * cols_)); }
  int64_t horizon() const override { return rows_; }

 private:
  std::vector<int64_t> t_;
  int64_t rows_;
  int cols_;
  std::string path_;
  int64_t bound_ = 0;
  double sum_ = 0;
};

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  const auto b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

// a whole cell as a (possibly negative) 64-bit integer: "2abc", "1.5", "" and "9e99" are not
std::optional<int64_t> parse_cell(const std::string& cell) {
  int64_t v = 0;
  const char* b = cell.data();
  const char* e = b + cell.size();
  if (b == e) return std::nullopt;
  const auto r = std::from_chars(b, e, v);
  if (r.ec != std::errc() || r.ptr != e) return std::nullopt;
  return v;
}

// K rows × S comma-separated integer cells; '#' lines and blank lines are skipped, and one
// header line (a first line whose first cell is not a number) is allowed. Strict: every
// other cell must be a whole integer, every row as wide as the first.
std::vector<int64_t> read_csv(const std::string& path, int64_t& rows, int& cols) {
  std::ifstream in(path);
  if (!in) throw UserError("config: delay.path = \"" + path + "\": cannot open");
  const std::string valid = "; valid: K rows of S comma-separated integers 0..k (one row per update, one column per block)";
  std::vector<int64_t> out;
  std::string line;
  rows = 0;
  cols = -1;
  size_t lineno = 0;
  bool header_seen = false;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string where = path + ":" + std::to_string(lineno) + ": ";
    // Excel's "CSV UTF-8" starts with a byte-order mark: without stripping it the first row
    // reads as a header and is silently lost
    if (lineno == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    // a NUL is never text: a binary file, or UTF-16 ("Unicode text") whose every other byte is 0
    if (line.find('\0') != std::string::npos)
      throw UserError(where + "contains a NUL byte (a binary file, or UTF-16 text: save it as CSV UTF-8)" + valid);
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    std::vector<std::string> cells;
    size_t pos = 0;
    while (true) {
      const size_t comma = t.find(',', pos);
      cells.push_back(trim(t.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos)));
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    if (rows == 0 && !header_seen && !parse_cell(cells[0])) {
      header_seen = true;  // a header line
      continue;
    }
    for (size_t c = 0; c < cells.size(); ++c) {
      const auto v = parse_cell(cells[c]);
      if (!v)
        throw UserError(where + "column " + std::to_string(c + 1) + ": '" + cells[c].substr(0, 40) +
                        "' is not an integer delay" + valid);
      out.push_back(*v);
    }
    const int c = static_cast<int>(cells.size());
    if (cols >= 0 && c != cols)
      throw UserError(where + "has " + std::to_string(c) + " columns, expected " + std::to_string(cols) + " like the first row" + valid);
    cols = c;
    ++rows;
  }
  if (rows == 0) throw UserError(path + ": no delay rows (empty table)" + valid);
  return out;
}

}  // namespace

std::unique_ptr<DelayModel> make_table_delay(std::vector<int64_t> table, int64_t rows, int cols, const std::string& origin) {
  return std::make_unique<TableDelay>(std::move(table), rows, cols, origin);
}

std::unique_ptr<DelayModel> make_table_delay(const std::string& path, int stages) {
  if (path.empty()) throw UserError("config: delay.path is empty; the table delay model needs a .csv or .h5 file");
  if (!std::filesystem::exists(path)) throw UserError("config: delay.path = \"" + path + "\": file not found");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UserError("config: delay.path = \"" + path + "\": is a directory; give a .csv or .h5 file");
  // a device or pipe (/dev/zero) has no end: its one endless "line" would grow without bound
  if (!std::filesystem::is_regular_file(path, ec))
    throw UserError("config: delay.path = \"" + path + "\": not a regular file (a device, pipe or socket may never end); "
                    "give a .csv or .h5 file");
  std::vector<int64_t> t;
  int64_t rows = 0;
  int cols = 0;
  const auto ext = std::filesystem::path(path).extension().string();
  if (ext == ".h5" || ext == ".hdf5") {
    t = read_delay_table_h5(path, rows, cols);
    if (rows == 0 || cols == 0 || cols > 65535)
      throw UserError("config: delay.path = \"" + path + "\": /delays is " + std::to_string(rows) + " x " +
                      std::to_string(cols) + "; valid: K rows x S columns with K, S >= 1");
  } else {
    t = read_csv(path, rows, cols);
  }
  if (cols != stages)
    throw UserError("config: delay.path = \"" + path + "\": table has " + std::to_string(cols) + " columns but objective.stages = " +
                    std::to_string(stages));
  return std::make_unique<TableDelay>(std::move(t), rows, cols, path);
}

namespace {
const bool registered = DelayRegistry::add(
    {"table", "replay a K x S table: a CSV, or /delays of a run or schedule .h5 file", 4, {"delay.path"},
     [](const DelayContext& c) {
       const std::string& path = c.cfg.get_string("delay.path");
       auto model = make_table_delay(path, c.stages);
       if (model->horizon() < c.updates)
         config_error("method.updates", std::to_string(c.updates) + " updates but the delay table " + path +
                                            " has only " + std::to_string(model->horizon()) + " rows");
       return model;
     }});
}  // namespace

}  // namespace stale
