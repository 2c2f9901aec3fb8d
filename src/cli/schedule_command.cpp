#include "src/cli/schedule_command.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include "src/commands/simulate_schedule.hpp"
#include "src/pipeline/schedule.hpp"
#include "src/pipeline/simulator.hpp"

namespace stale {

namespace {

// the options parse straight into the command layer's request
ScheduleRequest& command() {
  static ScheduleRequest c;
  return c;
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
  ScheduleRequest& c = command();
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
                  "forward=1,1,2,1), overlap (dualpipev's F&B pairs, 0..1), latency, jitter, straggler_prob, straggler_slowdown, pareto_alpha, seed");
  sub->add_option("--steady-margin", c.steady_margin,
                  "micro-batches left out at each end for the steady-state delays (default 2 x blocks)");
  sub->add_option("--out,-o", c.out, "write the schedule file (HDF5)");
  sub->add_option("--trace", c.trace, "write a Chrome trace (JSON, loads in Perfetto)");
}

int run_schedule_command() {
  const ScheduleRequest& c = command();
  const ScheduleOutcome o = simulate_schedule(c);
  print_summary(o.schedule, o.result);
  if (!c.out.empty()) std::printf("wrote %s\n", c.out.c_str());
  if (!c.trace.empty()) std::printf("wrote %s\n", c.trace.c_str());
  return 0;
}

}  // namespace stale
