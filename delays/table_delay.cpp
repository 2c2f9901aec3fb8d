// Replays a recorded delay table (K rows × S blocks): from a CSV, or from the /delays dataset
// of a run or schedule file, so RPD can follow exactly the delays a schedule produced.
#include <algorithm>
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

std::vector<int64_t> read_csv(const std::string& path, int64_t& rows, int& cols) {
  std::ifstream in(path);
  if (!in) throw UserError("config: delay.path = \"" + path + "\": cannot open");
  std::vector<int64_t> out;
  std::string line;
  rows = 0;
  cols = -1;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    std::stringstream ss(line);
    std::string cell;
    int c = 0;
    while (std::getline(ss, cell, ',')) {
      try {
        size_t used = 0;
        out.push_back(std::stoll(cell, &used));
      } catch (const std::exception&) {
        if (rows == 0 && c == 0) break;  // a header line
        throw UserError(path + ":" + std::to_string(lineno) + ": '" + cell + "' is not an integer delay");
      }
      ++c;
    }
    if (c == 0) continue;
    if (cols >= 0 && c != cols)
      throw UserError(path + ":" + std::to_string(lineno) + ": has " + std::to_string(c) + " columns, expected " + std::to_string(cols));
    cols = c;
    ++rows;
  }
  return out;
}

}  // namespace

std::unique_ptr<DelayModel> make_table_delay(std::vector<int64_t> table, int64_t rows, int cols, const std::string& origin) {
  return std::make_unique<TableDelay>(std::move(table), rows, cols, origin);
}

std::unique_ptr<DelayModel> make_table_delay(const std::string& path, int stages) {
  if (path.empty()) throw UserError("config: delay.path is empty; the table delay model needs a .csv or .h5 file");
  if (!std::filesystem::exists(path)) throw UserError("config: delay.path = \"" + path + "\": file not found");
  std::vector<int64_t> t;
  int64_t rows = 0;
  int cols = 0;
  const auto ext = std::filesystem::path(path).extension().string();
  if (ext == ".h5" || ext == ".hdf5") {
    t = read_delay_table_h5(path, rows, cols);
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
