// Throughput of schedule generation and simulation at the size the delay-scaling and E4
// experiments reach (S = 128, M = 1e5: 2.6e7 ops), so that the simulator is never what an
// experiment waits for. Reported as ops per second.
//   lean:  summary only (makespan, bubbles, memory, per-stage delay statistics)
//   stats-off: timing and memory only, the floor of the event loop
//   full:  also the timeline, read tables and update list (what --out writes)
#include <benchmark/benchmark.h>

#include "src/pipeline/schedule.hpp"
#include "src/pipeline/simulator.hpp"

using namespace stale;

namespace {

const Schedule& cached(const std::string& name, int S, int64_t M) {
  static std::string key;
  static Schedule s;
  const std::string k = name + "/" + std::to_string(S) + "/" + std::to_string(M);
  if (k != key) {
    s = Schedule{};
    s = make_schedule(name, {S, M});
    key = k;
  }
  return s;
}

void BM_Generate(benchmark::State& state, const std::string& name) {
  const int S = static_cast<int>(state.range(0));
  const int64_t M = state.range(1);
  int64_t ops = 0;
  for (auto _ : state) {
    const Schedule s = make_schedule(name, {S, M});
    ops += s.size();
    benchmark::DoNotOptimize(s.ops.data());
  }
  state.counters["ops/s"] = benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsRate);
}

void BM_Simulate(benchmark::State& state, const std::string& name, SimOptions opt) {
  const int S = static_cast<int>(state.range(0));
  const int64_t M = state.range(1);
  const Schedule& s = cached(name, S, M);
  int64_t ops = 0;
  for (auto _ : state) {
    const SimResult r = simulate(s, {}, opt);
    benchmark::DoNotOptimize(r.makespan);
    ops += s.size();
  }
  state.counters["ops/s"] = benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsRate);
}

const SimOptions kLean{.timeline = false, .reads = false, .updates = false, .delay_table = false, .delay_stats = true};
const SimOptions kNoStats{.timeline = false, .reads = false, .updates = false, .delay_table = false, .delay_stats = false};
const SimOptions kFull{.timeline = true, .reads = true, .updates = true, .delay_table = false, .delay_stats = true};

}  // namespace

BENCHMARK_CAPTURE(BM_Generate, pipedream, std::string("pipedream"))->Args({128, 100000})->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK_CAPTURE(BM_Generate, 1f1b_flush, std::string("1f1b-flush"))->Args({128, 100000})->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK_CAPTURE(BM_Simulate, pipedream_lean, std::string("pipedream"), kLean)->Args({128, 100000})->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK_CAPTURE(BM_Simulate, pipedream_stats_off, std::string("pipedream"), kNoStats)->Args({128, 100000})->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK_CAPTURE(BM_Simulate, pipedream_full, std::string("pipedream"), kFull)->Args({128, 100000})->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK_CAPTURE(BM_Simulate, paci_lean, std::string("paci"), kLean)->Args({128, 100000})->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK_CAPTURE(BM_Simulate, gpipe_lean, std::string("gpipe"), kLean)->Args({128, 100000})->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK_CAPTURE(BM_Simulate, pipedream_lean_small, std::string("pipedream"), kLean)->Args({8, 100000})->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
