#include "src/commands/simulate_schedule.hpp"

#include <algorithm>
#include <filesystem>
#include <string>

#include "src/checks/resource_estimate.hpp"
#include "src/core/error.hpp"
#include "src/core/memory.hpp"
#include "src/io/schedule_file.hpp"
#include "src/pipeline/chrome_trace.hpp"

namespace stale {

namespace {

void make_parent(const std::string& path) {
  const auto parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) throw UserError(path + ": cannot create directory " + parent.string() + ": " + ec.message());
}

std::string sizes_named(const ScheduleParams& p) {
  return "microbatches × stages = " + std::to_string(p.microbatches) + " × " + std::to_string(p.stages);
}

}  // namespace

ScheduleOutcome simulate_schedule(const ScheduleRequest& req) {
  ScheduleOutcome o;
  o.costs = CostModel::parse(req.costs);
  const bool file = !req.out.empty();
  const bool timeline = file || !req.trace.empty() || req.keep_timeline;
  {
    // the schedule is data (8-byte ops), sized before it is built so that --microbatches 2e9 is
    // a one-line error rather than bad_alloc or the kernel's OOM killer. The schedule's own
    // defaults for chunks and replicas do not depend on M (checked by make_schedule).
    ScheduleParams one = req.params;
    one.microbatches = 1;
    const ScheduleParams p = resolve_schedule_params(req.name, one);
    const double ops = 3.0 * static_cast<double>(req.params.microbatches) * std::max(1, req.params.stages) *
                       std::max(1, p.chunks) * std::max(1, p.replicas);
    // the run estimate's bytes per op (the op, the simulator's per-op state and delay
    // bookkeeping); 16 more for the timeline's start and end; the read tables are per
    // (micro-batch, block), below an op each
    const double per_op = kScheduleOpBytes + (timeline ? 16.0 + 8.0 : 0.0) + req.caller_bytes_per_op;
    check_memory(ops * per_op,
                 sizes_named(req.params) + ": a schedule of about " + std::to_string(static_cast<long long>(ops)) + " ops",
                 "reduce microbatches (--microbatches)");
  }
  o.schedule = make_schedule(req.name, req.params);
  const Schedule& s = o.schedule;
  o.costs.check_stages(s.stages);

  SimOptions opt;
  opt.steady_margin = req.steady_margin;
  opt.timeline = timeline;
  opt.updates = file || req.keep_timeline;
  opt.reads = file || req.keep_timeline;
  // the full delay tables, counted now that the schedule says how many updates it makes
  int64_t K = 0;
  const OpKind g = s.gradient_kind();
  for (const Op& op : s.ops) K += op.kind == g && op.updates();
  const double entries = static_cast<double>(K) * s.blocks();
  switch (req.delay_table) {
    case ScheduleRequest::Tables::Never: o.delay_table = false; break;
    case ScheduleRequest::Tables::Always: o.delay_table = true; break;
    case ScheduleRequest::Tables::Auto:
      o.delay_table = (file || req.keep_timeline) && entries <= static_cast<double>(ScheduleFileOptions{}.max_table_entries);
  }
  if (o.delay_table) {
    // forward and backward tables, each copied once more by a caller that keeps them
    const double copies = req.caller_bytes_per_op > 0 ? 2.0 : 1.0;
    check_memory(entries * 8.0 * 2.0 * copies,
                 sizes_named(req.params) + ": delay tables of " + std::to_string(static_cast<long long>(K)) +
                     " updates × " + std::to_string(s.blocks()) + " blocks",
                 "leave the delay tables out (Python: delay_table=False) or reduce microbatches");
  }
  opt.delay_table = o.delay_table;
  opt.delay_pairs = o.delay_table && file;  // the pair matrices cost what the table costs
  o.result = simulate(s, o.costs, opt);
  if (file) {
    make_parent(req.out);
    ScheduleFileOptions fo;
    fo.costs = o.costs.describe();
    write_schedule_file(req.out, s, o.result, fo);
  }
  if (!req.trace.empty()) {
    make_parent(req.trace);
    write_chrome_trace(req.trace, s, o.result);
  }
  return o;
}

}  // namespace stale
