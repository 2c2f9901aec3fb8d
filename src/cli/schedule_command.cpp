#include "src/cli/schedule_command.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "src/core/error.hpp"
#include "src/core/memory.hpp"
#include "src/io/schedule_file.hpp"
#include "src/pipeline/chrome_trace.hpp"
#include "src/pipeline/cost_model.hpp"
#include "src/pipeline/schedule.hpp"
#include "src/pipeline/simulator.hpp"

namespace stale {

namespace {

struct ScheduleCommand {
  std::string name;
  ScheduleParams params;
  std::vector<std::string> costs;
  std::string out, trace;
  int64_t steady_margin = -1;
};

ScheduleCommand& command() {
  static ScheduleCommand c;
  return c;
}

void make_parent(const std::string& path) {
  const auto parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) throw UserError(path + ": cannot create directory " + parent.string() + ": " + ec.message());
}

void print_summary(const Schedule& s, const SimResult& r) {
  const bool steady = r.steady_delays.updates() > 0;
  const DelayStats& d = steady ? r.steady_delays : r.delays;
  std::printf("schedule %s: stages=%d chunks=%d microbatches=%lld accumulation=%d", s.name.c_str(), s.stages,
              s.chunks, static_cast<long long>(s.microbatches), s.accumulation);
  if (schedule_info(s.name).replicated) std::printf(" replicas=%d local_steps=%d", s.replicas, s.local_steps);
  std::printf("\n");
  std::printf("makespan %.6g  bubble %.4f  updates %lld  delay max %lld mean %.4f (all updates)",
              r.makespan, r.bubble_overall, static_cast<long long>(r.total_updates),
              static_cast<long long>(r.delays.max_overall()), r.delays.mean_overall());
  if (steady)
    std::printf("; steady state (micro-batches %lld..%lld): max %lld mean %.4f", static_cast<long long>(r.steady_margin),
                static_cast<long long>(s.microbatches - r.steady_margin - 1),
                static_cast<long long>(d.max_overall()), d.mean_overall());
  std::printf("\n");
  const char* which = steady ? "steady" : "all";
  if (s.chunks == 1) {
    std::printf("%5s %10s %7s %8s %8s %7s %9s %9s %9s %9s\n", "stage", "busy", "bubble", "inflight", "versions",
                "crossed", "upd.max", "upd.mean", "read.max", "read.mean");
    for (int st = 0; st < s.stages; ++st)
      std::printf("%5d %10.6g %7.4f %8lld %8lld %7lld %9lld %9.3f %9lld %9.3f\n", st, r.busy[st], r.bubble[st],
                  static_cast<long long>(r.peak_inflight[st]), static_cast<long long>(r.peak_versions[st]),
                  static_cast<long long>(r.max_crossed[st]), static_cast<long long>(d.max_by_update_block(st)),
                  d.mean_by_update_block(st), static_cast<long long>(d.max_by_read_block(st)), d.mean_by_read_block(st));
  } else {
    std::printf("%5s %10s %7s %8s %8s\n", "stage", "busy", "bubble", "inflight", "versions");
    for (int st = 0; st < s.stages; ++st)
      std::printf("%5d %10.6g %7.4f %8lld %8lld\n", st, r.busy[st], r.bubble[st],
                  static_cast<long long>(r.peak_inflight[st]), static_cast<long long>(r.peak_versions[st]));
    std::printf("%5s %5s %7s %9s %9s %9s %9s\n", "block", "stage", "crossed", "upd.max", "upd.mean", "read.max",
                "read.mean");
    for (int b = 0; b < s.blocks(); ++b)
      std::printf("%5d %5d %7lld %9lld %9.3f %9lld %9.3f\n", b, s.device_of(b), static_cast<long long>(r.max_crossed[b]),
                  static_cast<long long>(d.max_by_update_block(b)), d.mean_by_update_block(b),
                  static_cast<long long>(d.max_by_read_block(b)), d.mean_by_read_block(b));
  }
  std::printf("(inflight: peak activations held; versions: peak block versions stored; crossed: most updates of the\n"
              " stage's block between one micro-batch's F and B; upd.*: delays of the stage's updates over all blocks;\n"
              " read.*: delays of the stage's block over all updates; %s updates)\n", which);
}

}  // namespace

void add_schedule_command(CLI::App& app) {
  ScheduleCommand& c = command();
  std::string names;
  for (const auto& n : schedule_names()) names += (names.empty() ? "" : ", ") + n;
  auto* sub = app.add_subcommand("schedule", "simulate a pipeline schedule: timeline, bubbles, memory, delays");
  sub->add_option("name", c.name, "schedule: " + names)->required();
  sub->add_option("--stages,-S", c.params.stages, "pipeline stages (devices)")->required();
  sub->add_option("--microbatches,-M", c.params.microbatches, "micro-batches in total")->required();
  sub->add_option("--accumulation,-a", c.params.accumulation,
                  "micro-batches per optimizer step (flush schedules: per mini-batch; default: the schedule's)");
  sub->add_option("--replicas,-R", c.params.replicas, "localsgd: replicas (default: stages)");
  sub->add_option("--local-steps,-H", c.params.local_steps, "localsgd: local steps per round (default 1)");
  sub->add_option("--chunks,-v", c.params.chunks, "interleaved: model chunks per device (default 2)");
  sub->add_option("--costs", c.costs,
                  "cost model, key=value ...: forward, backward, weight (one value or one per stage, e.g. "
                  "forward=1,1,2,1), latency, jitter, straggler_prob, straggler_slowdown, pareto_alpha, seed");
  sub->add_option("--steady-margin", c.steady_margin,
                  "micro-batches left out at each end for the steady-state delays (default 2 x blocks)");
  sub->add_option("--out,-o", c.out, "write the schedule file (HDF5)");
  sub->add_option("--trace", c.trace, "write a Chrome trace (JSON, loads in Perfetto)");
}

int run_schedule_command() {
  const ScheduleCommand& c = command();
  const CostModel costs = CostModel::parse(c.costs);
  {
    // the schedule is data (8-byte ops) and the simulator records each op's times and reads:
    // sized before anything is built, so --microbatches 2e9 is a one-line error, not bad_alloc
    // the schedule's defaults for chunks and replicas (they do not depend on M, which is checked here)
    ScheduleParams one = c.params;
    one.microbatches = 1;
    const ScheduleParams p = resolve_schedule_params(c.name, one);
    const double chunks = std::max(1, p.chunks);
    const double replicas = std::max(1, p.replicas);
    const double ops = 3.0 * static_cast<double>(c.params.microbatches) * std::max(1, c.params.stages) * chunks * replicas;
    check_memory(ops * 48.0, "--microbatches × --stages = " + std::to_string(c.params.microbatches) + " × " +
                                 std::to_string(c.params.stages) + ": a schedule of about " + std::to_string(static_cast<long long>(ops)) + " ops",
                 "reduce --microbatches");
  }
  const Schedule s = make_schedule(c.name, c.params);
  costs.check_stages(s.stages);

  SimOptions opt;
  opt.steady_margin = c.steady_margin;
  opt.timeline = !c.out.empty() || !c.trace.empty();
  opt.updates = !c.out.empty();
  opt.reads = !c.out.empty();
  if (!c.out.empty()) {
    // keep the full delay table only when the file will hold it
    int64_t K = 0;
    const OpKind g = s.gradient_kind();
    for (const Op& op : s.ops) K += op.kind == g && op.updates();
    opt.delay_table = K * s.blocks() <= ScheduleFileOptions{}.max_table_entries;
    opt.delay_pairs = opt.delay_table;  // the pair matrices cost what the table costs
  }
  const SimResult r = simulate(s, costs, opt);
  print_summary(s, r);
  if (!c.out.empty()) {
    make_parent(c.out);
    ScheduleFileOptions fo;
    fo.costs = costs.describe();
    write_schedule_file(c.out, s, r, fo);
    std::printf("wrote %s\n", c.out.c_str());
  }
  if (!c.trace.empty()) {
    make_parent(c.trace);
    write_chrome_trace(c.trace, s, r);
    std::printf("wrote %s\n", c.trace.c_str());
  }
  return 0;
}

}  // namespace stale
