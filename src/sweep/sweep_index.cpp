// The sweep index: one row per grid point, read back from whatever run files exist
// (DIR/index.csv for people and pandas, DIR/index.h5 for h5py).
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "src/core/error.hpp"
#include "src/core/new_file.hpp"
#include "src/io/sweep_index_file.hpp"
#include "src/sweep/sweep.hpp"

namespace stale {

namespace fs = std::filesystem;

namespace {

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string num(double v) {
  if (std::isnan(v)) return "";
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

std::string unquote(const std::string& v) {
  return v.size() >= 2 && v.front() == '"' ? v.substr(1, v.size() - 2) : v;
}

}  // namespace

void write_text_file(const std::string& path, const std::string& text) {
  // the temporary name carries the pid: shards of one sweep may write the index at once
  const auto tmp = path + ".partial." + std::to_string(getpid());
  {
    NewFileStream out(tmp);  // never through a link at the temporary name (src/core/new_file.hpp)
    if (!out) throw UserError(path + ": cannot write (" + std::strerror(errno) + ")");
    out << text;
    out.close();
    if (!out) {
      // a full disk shows here (ENOSPC): no half-written file is left under either name
      const std::string why = std::strerror(errno);
      std::error_code ec;
      fs::remove(tmp, ec);
      throw UserError(path + ": cannot write " + std::to_string(text.size()) + " bytes (" + why + ")");
    }
  }
  fs::rename(tmp, path);
}

void write_sweep_index(const Sweep& sweep, const std::string& out_dir, const std::map<std::string, RunSummary>& finished) {
  const fs::path dir(out_dir);
  IndexTable t;
  t.sweep = sweep.path;
  t.base = sweep.base;
  t.epsilon = sweep.epsilon;
  std::vector<RunSummary> rows;
  for (const auto& r : sweep.runs) {
    t.duplicate_of.push_back(r.duplicate_of);
    const fs::path file = dir / "runs" / (r.hash + ".h5");
    RunSummary row;
    if (const auto it = finished.find(r.hash); it != finished.end()) row = it->second;
    else if (fs::exists(file)) row = read_run_summary(file.string(), sweep.epsilon);
    else if (fs::exists(dir / "logs" / (r.hash + ".log")) && !fs::exists(file.string() + ".partial"))
      row.status = "failed";
    rows.push_back(row);
    t.run.push_back(r.hash);
    t.position.push_back(r.position);
    t.status.push_back(row.status);
    t.path.push_back((fs::path("runs") / (r.hash + ".h5")).string());
  }
  for (size_t a = 0; a < sweep.axes.size(); ++a) {
    std::vector<std::string> col;
    for (const auto& r : sweep.runs) col.push_back(r.values[a].second);
    t.axes.emplace_back(sweep.axes[a], std::move(col));
  }
  for (const auto& c : index_columns()) {
    std::vector<double> col;
    for (const auto& r : rows) col.push_back(r.*c.member);
    t.columns.emplace_back(&c, std::move(col));
  }

  std::ostringstream csv;
  csv << "run,position,duplicate_of";
  for (const auto& a : sweep.axes) csv << "," << csv_escape(a);
  csv << ",status";
  for (const auto& c : index_columns()) csv << "," << c.name;
  csv << ",path\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    csv << t.run[i] << "," << t.position[i] << "," << (t.duplicate_of[i] < 0 ? "" : std::to_string(t.duplicate_of[i]));
    for (const auto& kv : sweep.runs[i].values) csv << "," << csv_escape(unquote(kv.second));
    csv << "," << t.status[i];
    for (const auto& c : index_columns()) csv << "," << num(rows[i].*c.member);
    csv << "," << t.path[i] << "\n";
  }
  write_text_file((dir / "index.csv").string(), csv.str());
  write_index_h5((dir / "index.h5").string(), t);
}

}  // namespace stale
