// Updates per second of an RPD run on the random quadratic (d = 512, n = 600, batch 10,
// S = 8, uniform delays δ = 60), with metrics every update and every 100 updates, written
// to a run file as in `stale run`. The incremental tracker (residual and gradient moved by
// the Hessian's columns) should make metrics-every-update cost about one more block update,
// not a full O(n·d) gradient.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "objectives/objective_factory.hpp"
#include "src/core/rng.hpp"
#include "optimizers/method.hpp"
#include "src/io/run_file.hpp"
#include "src/run/metrics_observer.hpp"

using namespace stale;

namespace {
Config bench_config(int64_t updates) {
  Config c = Config::from_string(R"(
backend = "cpu"
[objective]
name = "quadratic"
generator = "random"
dim = 512
samples = 600
batch_size = 10
stages = 8
[method]
name = "rpd"
lr = 0.015625
[delay]
name = "uniform"
max = 60
)", "bench");
  c.apply_override("method.updates=" + std::to_string(updates));
  return c;
}

void BM_RpdUpdates(benchmark::State& state) {
  const int64_t every = state.range(0), K = 20000;
  const bool exact_mean = state.range(1) != 0;
  Config cfg = bench_config(K);
  auto f = make_objective(cfg, BackendKind::Cpu);
  auto method = make_method(cfg, *f);
  const std::string path = (std::filesystem::temp_directory_path() / "stale-bench-rpd.h5").string();
  for (auto _ : state) {
    RunFile log(path, f->dim(), f->stages(), true);
    MetricsOptions opt;
    opt.every = every;
    opt.iterates_every = 0;
    opt.exact_mean = exact_mean;
    opt.lr = cfg.get_float("method.lr");
    opt.delta = method->delay_bound(*f);
    opt.updates = K;
    MetricsObserver obs(*f, &log, opt);
    Vec w = Vec::Zero(f->dim());
    method->run(*f, w, obs);
    obs.finish(w);
    log.finish("ok", 0);  // the rows are written, as a run writes them
    std::filesystem::remove(path);
  }
  state.SetItemsProcessed(state.iterations() * K);
  state.counters["updates_per_s"] = benchmark::Counter(static_cast<double>(K), benchmark::Counter::kIsIterationInvariantRate);
}

// the cost of the update alone: no observer work beyond bookkeeping
class NullObserver final : public RunObserver {
 public:
  void on_start(const Vec&) override {}
  void on_update(const UpdateEvent&, ConstVecRef, const Vec&) override {}
  bool should_stop() const override { return false; }
};

void BM_RpdUpdatesNoMetrics(benchmark::State& state) {
  const int64_t K = 20000;
  Config cfg = bench_config(K);
  auto f = make_objective(cfg, BackendKind::Cpu);
  auto method = make_method(cfg, *f);
  for (auto _ : state) {
    NullObserver obs;
    Vec w = Vec::Zero(f->dim());
    method->run(*f, w, obs);
    benchmark::DoNotOptimize(w.data());
  }
  state.counters["updates_per_s"] = benchmark::Counter(static_cast<double>(K), benchmark::Counter::kIsIterationInvariantRate);
}
// The arithmetic floor of one RPD update with exact metrics at these sizes (b = 10, d = 512,
// d_s = 64): the mini-batch activation at the mixed point (b × d), the block gradient
// (b × d_s, transposed) and the tracker's Hessian-column update (d × d_s) — about 38k
// multiply-adds, timed here as the same three GEMVs on one thread.
void BM_RpdUpdateFloor(benchmark::State& state) {
  const Index b = 10, d = 512, ds = 64;
  Rng rng(1, Stream::Eval);
  Mat Xb(b, d), H(d, ds);
  Vec z(d), r(b), g(ds), delta(ds), grad(d);
  for (Index i = 0; i < Xb.size(); ++i) Xb.data()[i] = rng.normal();
  for (Index i = 0; i < H.size(); ++i) H.data()[i] = rng.normal();
  for (Index i = 0; i < d; ++i) z(i) = rng.normal(), grad(i) = 0;
  for (Index i = 0; i < ds; ++i) delta(i) = rng.normal();
  for (auto _ : state) {
    r.noalias() = Xb * z;
    g.noalias() = Xb.middleCols(128, ds).transpose() * r;
    grad.noalias() += H * delta;
    benchmark::DoNotOptimize(g.data());
    benchmark::DoNotOptimize(grad.data());
  }
  state.counters["multiply_adds"] = static_cast<double>(b * d + b * ds + d * ds);
}
}  // namespace

BENCHMARK(BM_RpdUpdateFloor);
BENCHMARK(BM_RpdUpdatesNoMetrics)->Unit(benchmark::kMillisecond);
// args: log every, exact running mean (1) or sampled at logged steps (0)
BENCHMARK(BM_RpdUpdates)->Args({1, 1})->Args({100, 1})->Args({100, 0})->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
