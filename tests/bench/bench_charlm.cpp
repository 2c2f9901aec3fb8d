// Throughput of the character-level GPT: tokens per second of one forward + backward
// (batch_value_grad: the whole model on one mini-batch of B·T tokens), and the fraction of
// the GEMM peak measured in this program that the model's FLOPs reach.
//  - CPU: the float32 twin (the E5 training path) on the E5 CPU model and on a wider one;
//    the peak is Eigen's float32 GEMM (1024³) on all OpenMP threads.
//  - GPU: the float32 CUDA twin on the E5 paper-scale model (S = 16, E = 256); the peak is
//    cuBLAS SGEMM (4096³, FP32 without TF32). Skipped without a device.
// FLOPs counted: 6 · N · (parameters in matrix products: 12E² per block + the LM head) for
// the linear layers (2 forward + 4 backward per weight and token), plus 12 · B · T² · E per
// block for attention (scores and weighted sums over the full T × T, forward 4, backward 8).
// Elementwise layers, LayerNorm and the host-side loss head are not counted: they are the
// overhead the fraction exposes.
//
//   ./bench_charlm --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>

#include "objectives/charlm.hpp"
#include "objectives/charlm_cpu.hpp"
#include "objectives/charlm_cuda.hpp"
#include "objectives/charlm_cuda_engine.hpp"
#include "objectives/data/libsvm.hpp"
#include "src/backend/backend.hpp"

using namespace stale;

namespace {

double model_flops(const CharLmShape& sh) {
  const double N = static_cast<double>(sh.N()), E = sh.E, L = sh.layers(), T = sh.T, B = sh.B;
  const double matmul_params = L * 12.0 * E * E + sh.V * E;
  return 6.0 * N * matmul_params + L * 12.0 * B * T * T * E;
}

// float32 GEMM throughput of Eigen on all threads (best of 5 runs of n³)
double cpu_sgemm_flops() {
  static const double peak = [] {
    const int n = 1024;
    Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n), c(n, n);
    c.noalias() = a * b;  // warm-up
    double best = 1e30;
    for (int r = 0; r < 5; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      c.noalias() = a * b;
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    benchmark::DoNotOptimize(c.data());
    return 2.0 * n * n * n / best;
  }();
  return peak;
}

std::shared_ptr<const CharLmData> shakespeare(int B, int T) {
  auto text = std::make_shared<TextData>(load_text(resolve_data_file("tinyshakespeare.txt", "")));
  return std::make_shared<CharLmData>(text, B, T, Index(B) * 64, 0);
}

CharLmShape shape(int E, int NH, int T, int B, int S) {
  CharLmShape sh;
  sh.V = 65, sh.E = E, sh.NH = NH, sh.T = T, sh.B = B, sh.S = S;
  return sh;
}

// counters from the loop's own wall time (Google Benchmark shows rates with a "/s" suffix,
// which a fraction should not have)
void report(benchmark::State& state, const CharLmShape& sh, double peak, double seconds) {
  const double its = static_cast<double>(state.iterations());
  const double flops = its * model_flops(sh) / seconds;
  state.SetItemsProcessed(state.iterations() * sh.N());  // tokens
  state.counters["tokens_per_s"] = its * static_cast<double>(sh.N()) / seconds;
  state.counters["GFLOP_per_s"] = flops * 1e-9;
  state.counters["peak_GFLOP_per_s"] = peak * 1e-9;
  state.counters["peak_fraction"] = flops / peak;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// args: E, heads, T, B, S
void BM_CharLmCpuForwardBackward(benchmark::State& state) {
  const CharLmShape sh = shape(state.range(0), state.range(1), state.range(2), state.range(3), state.range(4));
  CharLmCpu<float> f(shakespeare(sh.B, sh.T), sh);
  const Vec w = f.initial_point(0);
  Vec g;
  const double peak = cpu_sgemm_flops();
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) benchmark::DoNotOptimize(f.batch_value_grad(w, 0, g));
  report(state, sh, peak, seconds_since(t0));
}
// the E5 CPU model (210k parameters), and a wider 4-block model (E = 256, T = 128)
BENCHMARK(BM_CharLmCpuForwardBackward)->Args({64, 4, 32, 16, 6})->Args({256, 8, 128, 8, 6})->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_CpuSgemmPeak(benchmark::State& state) {
  const int n = 1024;
  Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n), c(n, n);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP_per_s"] = benchmark::Counter(2.0 * n * n * n * 1e-9 * static_cast<double>(state.iterations()),
                                                     benchmark::Counter::kIsRate);
}
BENCHMARK(BM_CpuSgemmPeak)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CharLmCudaForwardBackward(benchmark::State& state) {
  if (cuda_device_count() == 0 || !charlm_cuda_compiled()) {
    std::string why = "no GPU: ";
    why += charlm_cuda_compiled() ? cuda_unavailable_reason() : std::string("built without CUDA");
    state.SkipWithError(why.c_str());
    return;
  }
  const CharLmShape sh = shape(state.range(0), state.range(1), state.range(2), state.range(3), state.range(4));
  auto f = make_charlm_cuda(shakespeare(sh.B, sh.T), sh, true);
  const Vec w = f->initial_point(0);
  Vec g;
  const double peak = cuda_sgemm_flops(4096);
  f->batch_value_grad(w, 0, g);  // warm-up: allocations, cuBLAS heuristics
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) benchmark::DoNotOptimize(f->batch_value_grad(w, 0, g));
  report(state, sh, peak, seconds_since(t0));
}
// the E5 paper-scale model: 14 blocks, E = 256, 8 heads, T = 128, B = 16 (11.1M parameters)
BENCHMARK(BM_CharLmCudaForwardBackward)->Args({256, 8, 128, 16, 16})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
