#include "src/io/schedule_file.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "src/io/h5.hpp"

namespace stale {

bool write_schedule_group(hid_t parent, const Schedule& s, const SimResult& r, bool timeline);

namespace {

// DelayStats as per-block vectors (and the pair matrices when kept), computed here from its
// data members so that stale_io needs no symbol of stale_pipeline
void write_delay_stats(hid_t g, const std::string& prefix, const DelayStats& st) {
  const int nb = st.blocks;
  int64_t total = 0, overall_max = -1;
  double overall_sum = 0;
  std::vector<double> mean_u(nb, 0.0), mean_r(nb, 0.0);
  for (int a = 0; a < nb; ++a) {
    total += st.count[a];
    overall_max = std::max(overall_max, st.update_max[a]);
    overall_sum += static_cast<double>(st.update_sum[a]);
    if (st.count[a] > 0) mean_u[a] = static_cast<double>(st.update_sum[a]) / (static_cast<double>(st.count[a]) * nb);
  }
  for (int j = 0; j < nb; ++j) mean_r[j] = total > 0 ? static_cast<double>(st.read_sum[j]) / static_cast<double>(total) : 0.0;
  h5::write_vector(g, prefix + "count", st.count);
  h5::write_vector(g, prefix + "max_by_update_block", st.update_max);
  h5::write_vector(g, prefix + "mean_by_update_block", mean_u);
  h5::write_vector(g, prefix + "max_by_read_block", st.read_max);
  h5::write_vector(g, prefix + "mean_by_read_block", mean_r);
  if (!st.pair_max.empty()) {
    std::vector<double> mean(static_cast<size_t>(nb) * nb, 0.0);
    for (int a = 0; a < nb; ++a)
      for (int j = 0; j < nb; ++j)
        if (st.count[a] > 0)
          mean[static_cast<size_t>(a) * nb + j] =
              static_cast<double>(st.pair_sum[static_cast<size_t>(a) * nb + j]) / static_cast<double>(st.count[a]);
    h5::write_matrix(g, prefix + "max", st.pair_max.data(), nb, nb);
    h5::write_matrix(g, prefix + "mean", mean.data(), nb, nb);
  }
  h5::write_attr(g, prefix + "max_delay", overall_max);
  h5::write_attr(g, prefix + "mean_delay", total > 0 ? overall_sum / (static_cast<double>(total) * nb) : 0.0);
  h5::write_attr(g, prefix + "updates", total);
}

template <class T>
std::vector<int64_t> widen(const std::vector<T>& v) {
  return std::vector<int64_t>(v.begin(), v.end());
}

void write_body(hid_t file, const Schedule& s, const SimResult& r, const ScheduleFileOptions& o,
                std::string& omitted) {
  const int nb = s.blocks();
  auto fits = [&](int64_t cells) { return cells <= o.max_table_entries; };
  auto omit = [&](const std::string& what) { omitted += (omitted.empty() ? "" : ",") + what; };

  h5::write_attr(file, "file_kind", std::string("stale schedule"));
  h5::write_attr(file, "schema_version", int64_t{1});
  h5::write_attr(file, "schedule", s.name);
  h5::write_attr(file, "stages", int64_t{s.stages});
  h5::write_attr(file, "chunks", int64_t{s.chunks});
  h5::write_attr(file, "blocks", int64_t{nb});
  h5::write_attr(file, "microbatches", s.microbatches);
  h5::write_attr(file, "accumulation", int64_t{s.accumulation});
  h5::write_attr(file, "replicas", int64_t{s.replicas});
  h5::write_attr(file, "local_steps", int64_t{s.local_steps});
  h5::write_attr(file, "stash", int64_t{s.stash});
  h5::write_attr(file, "split_backward", int64_t{s.split_backward});
  h5::write_attr(file, "costs", o.costs);

  if (!write_schedule_group(file, s, r, o.timeline))
    omit("schedule/op table");

  if (!r.updates.empty()) {
    h5::Handle g = h5::create_group(file, "updates");
    const size_t K = r.updates.size();
    std::vector<int64_t> index(K), block(K), replica(K), mb(K), oldest(K);
    std::vector<double> start(K), end(K);
    for (size_t k = 0; k < K; ++k) {
      const Update& u = r.updates[k];
      index[k] = u.index, block[k] = u.block, replica[k] = u.replica, mb[k] = u.microbatch, oldest[k] = u.oldest;
      start[k] = u.start, end[k] = u.end;
    }
    h5::write_vector(g.id(), "index", index);
    h5::write_vector(g.id(), "block", block);
    h5::write_vector(g.id(), "replica", replica);
    h5::write_vector(g.id(), "microbatch", mb);
    h5::write_vector(g.id(), "oldest", oldest);
    h5::write_vector(g.id(), "start", start);
    h5::write_vector(g.id(), "end", end);
  }

  const int64_t K = static_cast<int64_t>(r.delay_table.size()) / std::max(nb, 1);
  if (!r.delay_table.empty() && fits(K * nb)) {
    h5::write_matrix(file, "delays", r.delay_table.data(), K, nb);
    if (!r.delay_table_backward.empty())
      h5::write_matrix(file, "delays_backward", r.delay_table_backward.data(), K, nb);
  } else {
    omit("delays");
  }

  {
    h5::Handle g = h5::create_group(file, "delay_summary");
    write_delay_stats(g.id(), "", r.delays);
    write_delay_stats(g.id(), "steady_", r.steady_delays);
    h5::write_attr(g.id(), "steady_margin", r.steady_margin);
    h5::write_vector(g.id(), "max_crossed", r.max_crossed);
    h5::write_vector(g.id(), "updates_per_block", r.updates_per_block);
  }

  const int64_t cells = s.microbatches * nb;
  if (!r.forward_read.empty() && fits(cells)) {
    h5::Handle g = h5::create_group(file, "reads");
    h5::write_matrix(g.id(), "forward_index", r.forward_read.data(), s.microbatches, nb);
    const auto fv = widen(r.forward_version);
    h5::write_matrix(g.id(), "forward_version", fv.data(), s.microbatches, nb);
    if (!r.backward_read.empty()) {
      h5::write_matrix(g.id(), "backward_index", r.backward_read.data(), s.microbatches, nb);
      const auto bv = widen(r.backward_version);
      h5::write_matrix(g.id(), "backward_version", bv.data(), s.microbatches, nb);
    }
  } else {
    omit("reads");
  }
}

}  // namespace

bool write_schedule_group(hid_t parent, const Schedule& s, const SimResult& r, bool timeline) {
  h5::Handle g = h5::create_group(parent, "schedule");
  h5::write_attr(g.id(), "makespan", r.makespan);
  h5::write_attr(g.id(), "bubble_fraction", r.bubble_overall);
  h5::write_attr(g.id(), "kinds", std::string("F,B,W"));
  h5::write_vector(g.id(), "bubble_fraction", r.bubble);
  h5::write_vector(g.id(), "busy", r.busy);
  h5::write_vector(g.id(), "peak_inflight", r.peak_inflight);
  h5::write_vector(g.id(), "peak_versions", r.peak_versions);
  h5::write_vector(g.id(), "inflight_bound", s.inflight_bound);
  const bool have_timeline = r.start.size() == s.ops.size();
  if (timeline && have_timeline) {
    const OpTable t = op_table(s);
    h5::write_vector(g.id(), "start", r.start);
    h5::write_vector(g.id(), "end", r.end);
    h5::write_vector(g.id(), "stage", t.stage);
    h5::write_vector(g.id(), "block", t.block);
    h5::write_vector(g.id(), "kind", t.kind);
    h5::write_vector(g.id(), "microbatch", t.microbatch);
    h5::write_vector(g.id(), "flags", t.flags);
  }
  return timeline && have_timeline;
}

void write_schedule_file(const std::string& path, const Schedule& s, const SimResult& r,
                         const ScheduleFileOptions& options) {
  const std::string partial = path + ".partial";
  try {
    std::string omitted;
    {
      h5::Handle file = h5::create_file(partial);
      write_body(file.id(), s, r, options, omitted);
      h5::write_attr(file.id(), "omitted", omitted);
    }
    std::error_code ec;
    std::filesystem::rename(partial, path, ec);
    if (ec) throw UserError(path + ": cannot rename " + partial + " into place: " + ec.message());
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(partial, ec);
    throw;
  }
}

}  // namespace stale
