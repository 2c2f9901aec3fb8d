#include "src/io/sweep_index_file.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string_view>
#include <variant>

#include "src/core/error.hpp"
#include "src/io/h5.hpp"

namespace stale {

namespace {
double last_of(const std::vector<double>& v) { return v.empty() ? NAN : v.back(); }
}  // namespace

RunSummary read_run_summary(const std::string& path, double epsilon) {
  RunSummary row;
  try {
    auto f = h5::open_file_readonly(path);
    row.status = h5::read_attr_string(f.id(), "status");
    row.wall = h5::read_attr_double(f.id(), "wall_seconds");
    std::map<std::string, std::vector<double>> read;  // /metrics series by name, each read once
    auto series = [&](const std::string& name) -> const std::vector<double>& {
      auto it = read.find(name);
      if (it == read.end()) {
        std::vector<hsize_t> dims;
        it = read.emplace(name, h5::read_array_double(f.id(), "metrics/" + name, dims)).first;
      }
      return it->second;
    };
    for (const auto& c : index_columns())
      if (c.metric) row.*c.member = last_of(series(c.metric));
    // /theory is written when a run ends (ok or diverged)
    if (h5::exists(f.id(), "theory")) {
      const auto theory = h5::open_group(f.id(), "theory");
      row.delta = h5::read_attr_double(theory.id(), "delta");
      if (h5::attr_exists(theory.id(), "lr_within_1_over_L"))  // a run file older than the attribute: NaN
        row.lr_within_1_over_L = static_cast<double>(h5::read_attr_int(theory.id(), "lr_within_1_over_L"));
      row.L = h5::read_attr_double(theory.id(), "L");
      if (h5::attr_exists(theory.id(), "bound_uses_estimated_L"))  // older files: their L was certified or NaN
        row.L_estimated = static_cast<double>(h5::read_attr_int(theory.id(), "bound_uses_estimated_L"));
      else
        row.L_estimated = std::isfinite(row.L) ? 0.0 : NAN;
    }
    const auto& k = series("k");
    const auto& t = series("time");
    const auto& sub = series("subopt");
    // series of unequal lengths (a damaged file) are read as far as all of them go
    if (epsilon > 0)
      for (size_t i = 0; i < std::min({sub.size(), k.size(), t.size()}); ++i)
        if (sub[i] <= epsilon) {
          row.time_to_eps_k = k[i];
          row.time_to_eps = t[i];
          break;
        }
  } catch (const UserError&) {
    row.status = "unreadable";
  }
  return row;
}

RunSummary run_summary_of(const std::string& status, double wall, int64_t delta, bool lr_within_1_over_L, double L,
                          bool L_estimated, const MetricsRow& last, const std::vector<SuboptLow>& lows, double epsilon) {
  RunSummary row;
  row.status = status;
  row.wall = wall;
  row.delta = static_cast<double>(delta);
  row.lr_within_1_over_L = lr_within_1_over_L ? 1.0 : 0.0;
  row.L = L;
  row.L_estimated = L_estimated ? 1.0 : 0.0;
  for (const auto& c : index_columns()) {
    if (!c.metric) continue;
    for (const auto& m : metric_columns())
      if (std::string_view(m.name) == c.metric)
        row.*c.member = std::visit([&](auto member) { return static_cast<double>(last.*member); }, m.member);
  }
  if (epsilon > 0)
    for (const auto& low : lows)
      if (low.subopt <= epsilon) {
        row.time_to_eps_k = low.k;
        row.time_to_eps = low.time;
        break;
      }
  return row;
}

void write_index_h5(const std::string& path, const IndexTable& t) {
  // the temporary name carries the pid: shards of one sweep may write the index at once
  const std::string partial = path + ".partial." + std::to_string(getpid());
  {
    auto f = h5::create_file(partial);
    h5::write_attr(f.id(), "sweep", t.sweep);
    h5::write_attr(f.id(), "base", t.base);
    h5::write_attr(f.id(), "epsilon", t.epsilon);
    h5::write_strings(f.id(), "run", t.run);
    h5::write_strings(f.id(), "status", t.status);
    h5::write_strings(f.id(), "path", t.path);
    h5::write_vector(f.id(), "position", t.position);
    h5::write_vector(f.id(), "duplicate_of", t.duplicate_of);
    {
      auto d = h5::open_dataset(f.id(), "duplicate_of");
      h5::write_attr(d.id(), "description",
                     std::string("grid position of the earlier point that is the same run (its row names the same "
                                 "run file); -1 for a point that is not a duplicate"));
    }
    auto g = h5::create_group(f.id(), "axes");
    for (const auto& [key, values] : t.axes) h5::write_strings(g.id(), key, values);
    for (const auto& [column, values] : t.columns) {
      h5::write_vector(f.id(), column->name, values);
      auto d = h5::open_dataset(f.id(), column->name);
      h5::write_attr(d.id(), "unit", std::string(column->unit));
      h5::write_attr(d.id(), "description", std::string(column->description));
    }
  }
  std::filesystem::rename(partial, path);
}

}  // namespace stale
