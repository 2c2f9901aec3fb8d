// Replays a recorded delay table (P rows × S blocks): from a CSV, or from the /delays dataset
// of a run or schedule file, so RPD can follow exactly the delays a schedule produced — or a
// per-stage pattern measured on a cluster, repeated (delay.table_repeat) and capped at k.
// The formats are documented in README.md "Delay tables".
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
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

// Update k reads row k (or k mod P when the table repeats), each entry capped at k: a table
// measured in a cluster's steady state has delays the first updates cannot have, and the
// built-in models cap the same way (min(δ, k)). Capped entries are counted for the run file.
class TableDelay final : public DelayModel {
 public:
  // from_file: a researcher's table (delay.name = "table"), whose run file records its rows and
  // capping; a schedule's table (delay.name = "schedule") is exact and never capped
  TableDelay(std::vector<int64_t> t, int64_t rows, int cols, std::string origin, bool repeat, bool from_file)
      : t_(std::move(t)), rows_(rows), cols_(cols), origin_(std::move(origin)), repeat_(repeat), from_file_(from_file) {
    for (int64_t r = 0; r < rows_; ++r)
      for (int i = 0; i < cols_; ++i) {
        const int64_t v = t_[r * cols_ + i];
        // a simulated schedule's table is checked as before: above k it would be a simulator bug
        if (v < 0 || (!from_file_ && !repeat_ && v > r))
          throw UserError(origin_ + ": delay table row " + std::to_string(r) + ", block " + std::to_string(i) + " = " +
                          std::to_string(v) + " is invalid; a delay must be >= 0" + (from_file_ ? "" : " and <= k"));
        raw_max_ = std::max(raw_max_, v);
        // a repeated table's steady state is its pattern; a table read once is what it delays
        const int64_t read = repeat_ ? v : std::min(v, r);
        bound_ = std::max(bound_, read);
        sum_ += static_cast<double>(read);
      }
  }
  std::string name() const override { return "table"; }
  int64_t bound() const override { return bound_; }
  int64_t delay(int64_t k, int block) const override { return std::min(row(k)[block], k); }
  void delays(int64_t k, std::vector<int64_t>& d) const override {
    const int64_t* r = row(k);
    for (size_t i = 0; i < d.size(); ++i) d[i] = std::min(r[i], k);
  }
  double steady_state_mean() const override { return sum_ / static_cast<double>(std::max<int64_t>(1, rows_ * cols_)); }
  int64_t horizon() const override { return repeat_ ? INT64_MAX : rows_; }
  std::vector<std::pair<std::string, int64_t>> run_attributes(int64_t updates) const override {
    if (!from_file_) return {};
    // only an entry above its k is capped, so only updates below the largest entry can be
    int64_t capped = 0;
    const int64_t last = std::min({updates, horizon(), raw_max_});
    for (int64_t k = 0; k < last; ++k) {
      const int64_t* r = row(k);
      for (int i = 0; i < cols_; ++i) capped += r[i] > k;
    }
    return {{"delay_table_rows", rows_},
            {"delay_table_repeat", int64_t{repeat_}},
            {"delay_table_capped", int64_t{capped > 0}},
            {"delay_table_capped_entries", capped}};
  }

 private:
  const int64_t* row(int64_t k) const {
    STALE_CHECK(repeat_ || k < rows_, "update beyond the delay table; the table's registry entry checks method.updates");
    return t_.data() + (repeat_ ? k % rows_ : k) * cols_;
  }
  std::vector<int64_t> t_;
  int64_t rows_;
  int cols_;
  std::string origin_;
  bool repeat_, from_file_;
  int64_t raw_max_ = 0, bound_ = 0;
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

// a header cell: a name such as "stage0" or "b 1" — it begins with a letter, an underscore or
// a quote, and is not a number strtod reads whole ("nan", "inf")
bool is_name(const std::string& cell) {
  if (cell.empty()) return false;
  const unsigned char c0 = static_cast<unsigned char>(cell[0]);
  if (!std::isalpha(c0) && c0 != '_' && c0 != '"' && c0 != '\'') return false;
  char* end = nullptr;
  std::strtod(cell.c_str(), &end);
  return end != cell.c_str() + cell.size();
}

// P rows × S comma-separated integer cells (README "Delay tables"); '#' lines and blank lines
// are skipped. The first row is a header only when every cell is a name: a first row of
// numbers and garbage is a corrupt delay row, not a header, and an error naming its cell
// (file:row:column, the row being the file's line).
std::vector<int64_t> read_csv(const std::string& path, int64_t& rows, int& cols) {
  std::ifstream in(path);
  if (!in) throw UserError("config: delay.path = \"" + path + "\": cannot open");
  const std::string valid =
      "; valid: one row per update, one comma-separated integer delay >= 0 per block, an optional header of names "
      "(README \"Delay tables\")";
  std::vector<int64_t> out;
  std::string line;
  rows = 0;
  cols = -1;
  size_t lineno = 0;
  bool first = true;
  while (std::getline(in, line)) {
    ++lineno;
    // Excel's "CSV UTF-8" starts with a byte-order mark: without stripping it the first row
    // reads as neither a header nor a delay row
    if (lineno == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    // a NUL is never text: a binary file, or UTF-16 ("Unicode text") whose every other byte is 0
    if (line.find('\0') != std::string::npos)
      throw UserError(path + ":" + std::to_string(lineno) +
                      ": contains a NUL byte (a binary file, or UTF-16 text: save it as CSV UTF-8)" + valid);
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
    const auto where = [&](size_t c) { return path + ":" + std::to_string(lineno) + ":" + std::to_string(c + 1) + ": "; };
    const auto quoted = [&](size_t c) { return "'" + cells[c].substr(0, 40) + "'"; };
    if (first) {
      first = false;
      const auto names = static_cast<size_t>(std::count_if(cells.begin(), cells.end(), is_name));
      if (names == cells.size()) continue;  // the header
      if (names > 0) {
        // part names, part not: a header with a stray cell when it begins with a name, else a
        // delay row with a corrupt cell; either way the cell that breaks the row is named
        const bool header_like = is_name(cells[0]);
        size_t c = 0;
        while (c < cells.size() && (header_like ? is_name(cells[c]) : parse_cell(cells[c]).has_value())) ++c;
        throw UserError(where(c) + quoted(c) + (header_like ? " is not a name" : " is not an integer delay") +
                        ", and the first row mixes names and other cells: it is neither a header (names only, e.g. "
                        "stage0,stage1) nor a delay row (integers only)" + valid);
      }
    }
    for (size_t c = 0; c < cells.size(); ++c) {
      const auto v = parse_cell(cells[c]);
      if (!v)
        throw UserError(where(c) + quoted(c) + " is not an integer delay" +
                        (cells[c].find(';') != std::string::npos ? " (cells are separated by commas)" : "") + valid);
      if (*v < 0) throw UserError(where(c) + quoted(c) + " is negative; a delay is >= 0" + valid);
      out.push_back(*v);
    }
    const int c = static_cast<int>(cells.size());
    if (cols >= 0 && c != cols)
      throw UserError(path + ":" + std::to_string(lineno) + ": has " + std::to_string(c) + " columns, expected " +
                      std::to_string(cols) + " like the first row" + valid);
    cols = c;
    ++rows;
  }
  if (rows == 0) throw UserError(path + ": no delay rows (empty table)" + valid);
  return out;
}

}  // namespace

std::unique_ptr<DelayModel> make_table_delay(std::vector<int64_t> table, int64_t rows, int cols, const std::string& origin,
                                             bool repeat) {
  return std::make_unique<TableDelay>(std::move(table), rows, cols, origin, repeat, false);
}

std::unique_ptr<DelayModel> make_table_delay(const std::string& path, int stages, bool repeat) {
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
  return std::make_unique<TableDelay>(std::move(t), rows, cols, path, repeat, true);
}

namespace {
const bool registered = DelayRegistry::add(
    {"table",
     "replay a table of delays (one row per update, one column per block; a CSV, or /delays of a run or schedule .h5 "
     "file), each capped at min(d, k); delay.table_repeat repeats a periodic one",
     4, {"delay.path", "delay.table_repeat"},
     [](const DelayContext& c) {
       const std::string& path = c.cfg.get_string("delay.path");
       auto model = make_table_delay(path, c.stages, c.cfg.get_bool("delay.table_repeat"));
       if (model->horizon() < c.updates)
         config_error("method.updates", std::to_string(c.updates) + " updates but the delay table " + path + " has only " +
                                            std::to_string(model->horizon()) +
                                            " rows; set delay.table_repeat = true to repeat it periodically (update k "
                                            "reads row k mod " + std::to_string(model->horizon()) +
                                            "), or give one row per update");
       return model;
     },
     // the versions a replayed table's reads reach are known once it is read (its largest delay)
     nullptr, /*simulates_schedule=*/false});
}  // namespace

}  // namespace stale
