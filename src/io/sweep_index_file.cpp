#include "src/io/sweep_index_file.hpp"

#include <unistd.h>

#include <filesystem>

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
    const auto k = h5::read_vector_int(f.id(), "metrics/k");
    const auto t = h5::read_vector_double(f.id(), "metrics/time");
    const auto sub = h5::read_vector_double(f.id(), "metrics/subopt");
    row.k = k.empty() ? NAN : static_cast<double>(k.back());
    row.time = last_of(t);
    row.loss = last_of(h5::read_vector_double(f.id(), "metrics/loss"));
    row.subopt = last_of(sub);
    row.grad_norm_sq = last_of(h5::read_vector_double(f.id(), "metrics/grad_norm_sq"));
    row.grad_norm_sq_mean = last_of(h5::read_vector_double(f.id(), "metrics/grad_norm_sq_mean"));
    row.bound = last_of(h5::read_vector_double(f.id(), "metrics/bound"));
    if (epsilon > 0)
      for (size_t i = 0; i < sub.size(); ++i)
        if (sub[i] <= epsilon) {
          row.time_to_eps_k = static_cast<double>(k[i]);
          row.time_to_eps = t[i];
          break;
        }
  } catch (const UserError&) {
    row.status = "unreadable";
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
    auto g = h5::create_group(f.id(), "axes");
    for (const auto& [key, values] : t.axes) h5::write_strings(g.id(), key, values);
    for (const auto& [name, values] : t.columns) h5::write_vector(f.id(), name, values);
  }
  std::filesystem::rename(partial, path);
}

}  // namespace stale
