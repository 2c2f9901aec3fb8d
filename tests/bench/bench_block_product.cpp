// The trackers' product Y += H[:, s] D (src/core/block_product.hpp) at E1's sizes: H is 512 × 512,
// a stage's block 512 × 64, the stage cycling as in a run (so the block comes from L2/L3, not
// L1), D one column (a run) or P (a lockstep ensemble). Side by side: P Eigen GEMVs (the
// tracker before), one Eigen GEMM (which packs its operand on every call), the kernel in
// place and on the packed blocks.
#include <benchmark/benchmark.h>

#include <vector>

#include "src/core/block_product.hpp"
#include "src/core/rng.hpp"

using namespace stale;

namespace {
constexpr Index kD = 512, kStages = 8, kDs = 64;

struct Setup {
  Mat H;
  std::vector<Index> offsets;
  ColumnBlockProducts packed;
  Setup() : H(kD, kD) {
    Rng rng(3, Stream::Eval);
    for (Index i = 0; i < H.size(); ++i) H.data()[i] = rng.normal();
    for (Index s = 0; s <= kStages; ++s) offsets.push_back(s * kDs);
    packed = ColumnBlockProducts(H.data(), kD, kD, offsets, size_t{1} << 30);
  }
};
const Setup& setup() {
  static const Setup s;
  return s;
}

Mat columns(Index P) {
  Rng rng(5, Stream::Eval);
  Mat D(kDs, P);
  for (Index i = 0; i < D.size(); ++i) D.data()[i] = rng.normal();
  return D;
}

// times product(s, D, Y) with the stage cycling, as a run's tracker does
template <class Product>
void time_product(benchmark::State& state, Product product) {
  const Index P = state.range(0);
  const Mat D = columns(P);
  Mat Y = Mat::Zero(kD, P);
  int s = 0;
  for (auto _ : state) {
    product(s, D, Y);
    s = (s + 1) % kStages;
    benchmark::DoNotOptimize(Y.data());
  }
  state.SetItemsProcessed(state.iterations() * P);
}

void BM_EigenGemvs(benchmark::State& state) {
  Vec d(kDs);
  time_product(state, [&](int s, const Mat& D, Mat& Y) {
    for (Index p = 0; p < D.cols(); ++p) {
      d = D.col(p);
      Y.col(p).noalias() += setup().H.middleCols(s * kDs, kDs) * d;
    }
  });
}

void BM_EigenGemm(benchmark::State& state) {
  time_product(state, [](int s, const Mat& D, Mat& Y) { Y.noalias() += setup().H.middleCols(s * kDs, kDs) * D; });
}

void BM_KernelInPlace(benchmark::State& state) {
  time_product(state, [](int s, const Mat& D, Mat& Y) {
    add_block_product(setup().H.data() + s * kDs * kD, kD, kD, kDs, D.data(), kDs, Y.data(), kD, D.cols());
  });
}

void BM_KernelPacked(benchmark::State& state) {
  time_product(state, [](int s, const Mat& D, Mat& Y) { setup().packed.add(s, D.data(), kDs, Y.data(), kD, D.cols()); });
}
}  // namespace

BENCHMARK(BM_EigenGemvs)->Arg(1)->Arg(4)->Arg(9);
BENCHMARK(BM_EigenGemm)->Arg(1)->Arg(4)->Arg(9);
BENCHMARK(BM_KernelInPlace)->Arg(1)->Arg(4)->Arg(9);
BENCHMARK(BM_KernelPacked)->Arg(1)->Arg(4)->Arg(9);
BENCHMARK_MAIN();
