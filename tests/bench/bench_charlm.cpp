// Throughput of the character-level GPT: tokens per second of one forward + backward
// (batch_value_grad: the whole model on one mini-batch of B·T tokens), and the fraction of
// the GEMM peak measured in this program that the model's FLOPs reach.
//  - CPU: the float32 twin (the E5 training path) on the E5 CPU model and on a wider one;
//    the peak is Eigen's float32 GEMM (1024³) on all OpenMP threads.
//  - GPU: the CUDA twin on the E5 paper-scale model (S = 16, E = 256) in float32 and tf32;
//    the peaks are cuBLAS SGEMM (4096³, random operands) in FP32 math (peak_fraction, the
//    float32 reference's ceiling) and in TF32 tensor-core math (tc_peak_fraction). The
//    device_* counters count only the device time of the layers (CUDA events inside the
//    engine), i.e. without the per-call transfer of w up and of the gradient down (2 × 11.1M
//    doubles) and the host loss head: what device-resident state could reach. Skipped
//    without a device.
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

#include "objectives/charlm/charlm.hpp"
#include "objectives/charlm/charlm_cpu.hpp"
#include "objectives/charlm/charlm_cuda.hpp"
#include "objectives/charlm/charlm_cuda_engine.hpp"
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

// measured once per program (4096³ on random operands)
double gpu_sgemm_peak() {
  static const double p = cuda_sgemm_flops(4096, false);
  return p;
}
double gpu_tf32_peak() {
  static const double p = cuda_sgemm_flops(4096, true);
  return p;
}

void BM_CharLmCudaForwardBackward(benchmark::State& state) {
  if (cuda_device_count() == 0 || !charlm_cuda_compiled()) {
    std::string why = "no GPU: ";
    why += charlm_cuda_compiled() ? cuda_unavailable_reason() : std::string("built without CUDA");
    state.SkipWithError(why.c_str());
    return;
  }
  const CharLmShape sh = shape(state.range(0), state.range(1), state.range(2), state.range(3), state.range(4));
  const auto prec = state.range(5) == 1 ? CharLmCudaPrecision::Tf32 : CharLmCudaPrecision::Float32;
  auto f = make_charlm_cuda(shakespeare(sh.B, sh.T), sh, prec);
  const Vec w = f->initial_point(0);
  Vec g;
  const double sgemm = gpu_sgemm_peak(), tc = gpu_tf32_peak();
  f->batch_value_grad(w, 0, g);  // warm-up: allocations, cuBLAS heuristics
  const double dev0 = charlm_cuda_compute_seconds(*f);
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) benchmark::DoNotOptimize(f->batch_value_grad(w, 0, g));
  const double wall = seconds_since(t0), dev = charlm_cuda_compute_seconds(*f) - dev0;
  report(state, sh, sgemm, wall);
  const double its = static_cast<double>(state.iterations());
  state.counters["tc_peak_fraction"] = its * model_flops(sh) / wall / tc;
  state.counters["device_ms_per_step"] = 1e3 * dev / its;
  state.counters["device_tokens_per_s"] = its * static_cast<double>(sh.N()) / dev;
  state.counters["device_tc_peak_fraction"] = its * model_flops(sh) / dev / tc;
  state.SetLabel(f->precision());
}
// the E5 paper-scale model: 14 blocks, E = 256, 8 heads, T = 128, B = 16 (11.1M parameters);
// the last argument is the precision (0: float32, 1: tf32)
BENCHMARK(BM_CharLmCudaForwardBackward)
    ->Args({256, 8, 128, 16, 16, 0})
    ->Args({256, 8, 128, 16, 16, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// the two GEMM ceilings the model is compared with
void BM_CudaGemmPeak(benchmark::State& state) {
  if (cuda_device_count() == 0 || !charlm_cuda_compiled()) {
    state.SkipWithError("no GPU");
    return;
  }
  for (auto _ : state) {
  }
  state.counters["SGEMM_GFLOP_per_s"] = gpu_sgemm_peak() * 1e-9;
  state.counters["TF32_GFLOP_per_s"] = gpu_tf32_peak() * 1e-9;
}
BENCHMARK(BM_CudaGemmPeak)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
