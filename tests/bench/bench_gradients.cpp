// Gradient throughput of the linear models on both backends, each number reported as a
// fraction of a limit measured by this same program on this same machine.
//
// The workload: full-data least-squares gradients (value_grad_many) at P points for
// d ∈ {512, 4096, 16384}, P ∈ {1, 8, 64}, with n = d samples so that the data matrix
// (n × d) dominates memory traffic. Either backend reads X twice per call (X·Z, then Xᵀ·R)
// whatever P is, so:
//   P = 1 is GEMV-shaped, bandwidth-bound: reported as GB/s = 2·n·d·sizeof(T) / t and
//         frac_bw = GB/s ÷ measured bandwidth;
//   P > 1 is GEMM-shaped: reported as GFLOP/s = 4·n·d·P / t and frac_peak = GFLOP/s ÷ the
//         measured GEMM peak of the same precision.
// grad/s = P / t compares batching against P = 1 directly.
//
// Limits (BM_Limits_*): CPU — a STREAM triad over 3 × 256 MiB arrays on all OpenMP threads
// (24 bytes per element, the STREAM convention) and an Eigen DGEMM (2048³); GPU — a 1 GiB
// device-to-device cudaMemcpy (read + write bytes) and cuBLAS DGEMM / SGEMM at 8192³.
// BM_GpuTransfer measures what every GPU call pays besides compute: d values up and d
// values down through the objective's own pinned staging path, with one synchronisation.
//
// GPU cases skip with a message when no device is present. Only one n × d matrix is alive
// at a time (2 GiB at d = 16384 in float64), so benchmarks are registered in order of d.
#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "objectives/linear/linear_cuda_engine.hpp"
#include "objectives/linear/linear_model_cpu.hpp"
#include "objectives/linear/linear_model_cuda.hpp"
#include "src/backend/backend.hpp"
#include "src/core/rng.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

using namespace stale;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// ---- limits ---------------------------------------------------------------------------------

struct CpuLimits {
  double stream_bytes_per_s = 0, dgemm_flops = 0;
};

const CpuLimits& cpu_limits() {
  static const CpuLimits lim = [] {
    CpuLimits l;
    const Index N = Index(1) << 25;  // 256 MiB per array: far beyond any cache
    std::vector<double> a(N), b(N), c(N);
#pragma omp parallel for schedule(static)
    for (Index i = 0; i < N; ++i) a[i] = 0, b[i] = 1, c[i] = 2;  // first touch by the threads that use them
    double best = 1e300;
    for (int r = 0; r < 6; ++r) {
      const auto t0 = Clock::now();
#pragma omp parallel for schedule(static)
      for (Index i = 0; i < N; ++i) a[i] = b[i] + 3.0 * c[i];
      best = std::min(best, seconds_since(t0));
    }
    benchmark::DoNotOptimize(a.data());
    l.stream_bytes_per_s = 24.0 * static_cast<double>(N) / best;

    const Index K = 2048;
    const Mat A = Mat::Random(K, K), B = Mat::Random(K, K);
    Mat C(K, K);
    best = 1e300;
    for (int r = 0; r < 3; ++r) {
      const auto t0 = Clock::now();
      C.noalias() = A * B;
      best = std::min(best, seconds_since(t0));
    }
    benchmark::DoNotOptimize(C.data());
    l.dgemm_flops = 2.0 * K * K * static_cast<double>(K) / best;
    return l;
  }();
  return lim;
}

bool have_gpu(benchmark::State& state) {
  if (cuda_device_count() > 0) return true;
  state.SkipWithError(("no CUDA device: " + cuda_unavailable_reason()).c_str());
  return false;
}

const CudaDeviceLimits& gpu_limits() {
  static const CudaDeviceLimits lim = measure_cuda_device_limits();
  return lim;
}

void BM_Limits_Cpu(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(cpu_limits());
  state.counters["GB/s"] = cpu_limits().stream_bytes_per_s / 1e9;
  state.counters["GFLOP/s"] = cpu_limits().dgemm_flops / 1e9;
#ifdef _OPENMP
  state.counters["threads"] = omp_get_max_threads();
#endif
}

void BM_Limits_Gpu(benchmark::State& state) {
  if (!have_gpu(state)) return;
  for (auto _ : state) benchmark::DoNotOptimize(gpu_limits());
  state.counters["GB/s"] = gpu_limits().copy_bytes_per_s / 1e9;
  state.counters["DGEMM_GFLOP/s"] = gpu_limits().dgemm_flops / 1e9;
  state.counters["SGEMM_GFLOP/s"] = gpu_limits().sgemm_flops / 1e9;
  state.SetLabel(gpu_limits().device);
}

// ---- problems: one data matrix alive at a time ------------------------------------------------

struct Problem {
  Index d = 0;
  std::shared_ptr<LinearData> data;
  std::unique_ptr<Objective> cpu, gpu;
  int gpu_precision = -1;
};

Problem& problem(Index d) {
  static Problem p;
  if (p.d != d) {
    p.gpu.reset();
    p.cpu.reset();
    p.data.reset();
    // n = d Gaussian rows; one batch holding every row (the full-data case)
    auto data = std::make_shared<LinearData>();
    data->X.resize(d, d);
    Rng rng(1, Stream::DataGen, static_cast<uint64_t>(d));
    for (Index i = 0; i < data->X.size(); ++i) data->X.data()[i] = rng.normal();
    data->y = Vec::Zero(d);
    for (Index i = 0; i < d; ++i) data->y(i) = rng.normal();
    partition_batches(*data, d);
    p.data = data;
    p.cpu = std::make_unique<LeastSquaresCpu>(data, 8, 0.0);
    p.d = d;
  }
  return p;
}

const Objective& gpu_objective(Index d, Precision prec) {
  Problem& p = problem(d);
  if (p.gpu_precision != static_cast<int>(prec) || !p.gpu) {
    p.gpu.reset();
    p.gpu = make_linear_model_cuda(p.data, 8, 0.0, NonconvexRegularizer{}, LinearLoss::Squared, prec, ObjectiveConstants{});
    p.gpu_precision = static_cast<int>(prec);
  }
  return *p.gpu;
}

Mat points(Index d, Index P) {
  Rng rng(2, Stream::Init, static_cast<uint64_t>(P));
  Mat Z(d, P);
  for (Index i = 0; i < Z.size(); ++i) Z.data()[i] = 0.01 * rng.normal();
  return Z;
}

// times f.value_grad_many at P points; counters as in the file comment
void run_gradients(benchmark::State& state, const Objective& f, double elem_bytes, double bw_limit,
                   double flop_limit) {
  const Index d = f.dim(), n = f.num_samples(), P = state.range(1);
  const Mat Z = points(d, P);
  Mat G;
  Vec values;
  f.value_grad_many(Z, G, values);  // warm-up: workspaces, caches, cuBLAS heuristics
  const auto t0 = Clock::now();
  for (auto _ : state) {
    f.value_grad_many(Z, G, values);
    benchmark::DoNotOptimize(G.data());
  }
  const double t = seconds_since(t0) / static_cast<double>(state.iterations());
  const double bytes = 2.0 * static_cast<double>(n) * d * elem_bytes, flops = 4.0 * static_cast<double>(n) * d * P;
  state.counters["GB/s"] = bytes / t / 1e9;
  state.counters["GFLOP/s"] = flops / t / 1e9;
  state.counters["grad/s"] = static_cast<double>(P) / t;
  state.counters["frac_bw"] = bytes / t / bw_limit;
  state.counters["frac_peak"] = flops / t / flop_limit;
}

void BM_Gradients_Cpu(benchmark::State& state) {
  const Objective& f = *problem(state.range(0)).cpu;
  run_gradients(state, f, 8.0, cpu_limits().stream_bytes_per_s, cpu_limits().dgemm_flops);
}

void BM_Gradients_GpuF64(benchmark::State& state) {
  if (!have_gpu(state)) return;
  const Objective& f = gpu_objective(state.range(0), Precision::Float64);
  run_gradients(state, f, 8.0, gpu_limits().copy_bytes_per_s, gpu_limits().dgemm_flops);
}

void BM_Gradients_GpuF32(benchmark::State& state) {
  if (!have_gpu(state)) return;
  const Objective& f = gpu_objective(state.range(0), Precision::Float32);
  run_gradients(state, f, 4.0, gpu_limits().copy_bytes_per_s, gpu_limits().sgemm_flops);
}

// d values up, d values down, one synchronisation: the transfer share of a P = 1 GPU call
void BM_GpuTransfer(benchmark::State& state) {
  if (!have_gpu(state)) return;
  const Index d = state.range(0);
  // the transfer path does not depend on the data: a 1 × 1 problem keeps the device free
  static const double one = 1.0;
  static const auto engine = make_linear_cuda_engine({&one, &one, &one, 1, 1, {0, 1}}, LinearLoss::Squared, Precision::Float64);
  std::vector<double> in(d, 1.0), out(d);
  engine->round_trip(in.data(), out.data(), d);
  const auto t0 = Clock::now();
  for (auto _ : state) {
    engine->round_trip(in.data(), out.data(), d);
    benchmark::DoNotOptimize(out.data());
  }
  const double t = seconds_since(t0) / static_cast<double>(state.iterations());
  state.counters["us"] = t * 1e6;
  state.counters["GB/s"] = 2.0 * 8.0 * d / t / 1e9;
}

}  // namespace

BENCHMARK(BM_Limits_Cpu)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Limits_Gpu)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// registered d by d so that one data matrix is alive at a time
#define STALE_GRADIENT_BENCHMARKS(D)                                                                   \
  BENCHMARK(BM_Gradients_Cpu)->ArgsProduct({{D}, {1, 8, 64}})->UseRealTime()->Unit(benchmark::kMicrosecond);    \
  BENCHMARK(BM_Gradients_GpuF64)->ArgsProduct({{D}, {1, 8, 64}})->UseRealTime()->Unit(benchmark::kMicrosecond); \
  BENCHMARK(BM_Gradients_GpuF32)->ArgsProduct({{D}, {1, 8, 64}})->UseRealTime()->Unit(benchmark::kMicrosecond); \
  BENCHMARK(BM_GpuTransfer)->Arg(D)->UseRealTime()->Unit(benchmark::kMicrosecond);
STALE_GRADIENT_BENCHMARKS(512)
STALE_GRADIENT_BENCHMARKS(4096)
STALE_GRADIENT_BENCHMARKS(16384)

BENCHMARK_MAIN();
