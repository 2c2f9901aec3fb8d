// The host-side precision conversion of the CUDA twins' transfers
// (objectives/charlm/host_precision_convert.hpp), on the CPU: double → float rounds to nearest even
// (the values a device-side __double2float_rn gives), float → double is exact, every element
// is written once, and the result is the same for every thread split.
#include <doctest/doctest.h>

#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <utility>
#include <vector>

#include "objectives/charlm/host_precision_convert.hpp"
#include "src/core/rng.hpp"

TEST_SUITE_BEGIN("objectives");

using namespace stale;

namespace {

// random doubles over many binades, plus the edge cases of the conversion
std::vector<double> awkward_doubles(int64_t n, uint64_t seed) {
  Rng rng(seed, Stream::Init, 5);
  std::vector<double> v(n);
  for (auto& x : v) x = rng.normal() * std::ldexp(1.0, static_cast<int>(rng.uniform() * 60.0) - 30);
  const double edge[] = {0.0,
                         -0.0,
                         1.0 + std::ldexp(1.0, -24),      // halfway between 1 and 1 + 2^-23: ties to even (1)
                         1.0 + 3 * std::ldexp(1.0, -24),  // halfway, ties to even (1 + 2^-22)
                         static_cast<double>(FLT_MAX) * 2,  // overflows to +inf
                         std::ldexp(1.0, -140),           // a float subnormal
                         std::ldexp(1.0, -160),           // below the float range: 0
                         std::numeric_limits<double>::infinity(),
                         -std::numeric_limits<double>::infinity()};
  for (size_t i = 0; i < std::size(edge) && i < v.size(); ++i) v[i * 7 % v.size()] = edge[i];
  return v;
}

}  // namespace

TEST_CASE("ParallelChunksCoverTheRangeOnceForEverySplit") {
  for (int64_t n : {0, 1, 7, 1000, 4099})
    for (int threads : {1, 2, 3, 8})
      for (int64_t min_per_thread : {1, 5, 1 << 20}) {
        CAPTURE(n);
        CAPTURE(threads);
        CAPTURE(min_per_thread);
        std::vector<int> hits(n, 0);
        std::vector<std::pair<int64_t, int64_t>> ranges(16);
        std::atomic<int> next{0};
        parallel_chunks(
            n,
            [&](int64_t a, int64_t b) {
              ranges[next++] = {a, b};
              for (int64_t i = a; i < b; ++i) ++hits[i];  // chunks are disjoint: no race
            },
            threads, min_per_thread);
        const int calls = next.load();
        CHECK(calls <= threads);
        CHECK((n == 0 ? calls == 0 : calls >= 1));
        for (int64_t i = 0; i < n; ++i) REQUIRE(hits[i] == 1);
      }
}

TEST_CASE("HostDoubleToFloatRoundsToNearestEvenAndIsThreadIndependent") {
  const int64_t n = 5003;
  const std::vector<double> src = awkward_doubles(n, 3);
  std::vector<float> ref(n);
  for (int64_t i = 0; i < n; ++i) ref[i] = static_cast<float>(src[i]);
  // known values of round-to-nearest-even
  CHECK(static_cast<float>(1.0 + std::ldexp(1.0, -24)) == 1.0f);
  CHECK(static_cast<float>(1.0 + 3 * std::ldexp(1.0, -24)) == 1.0f + std::ldexp(1.0f, -22));
  CHECK(std::isinf(static_cast<float>(static_cast<double>(FLT_MAX) * 2)));
  CHECK(static_cast<float>(std::ldexp(1.0, -140)) == std::ldexp(1.0f, -140));  // subnormal kept, not flushed
  for (int threads : {1, 2, 3, 8}) {
    CAPTURE(threads);
    std::vector<float> out(n, std::numeric_limits<float>::quiet_NaN());  // poisoned: every element must be written
    convert_on_host(out.data(), src.data(), n, threads, 16);
    CHECK(std::memcmp(out.data(), ref.data(), sizeof(float) * n) == 0);
    // float → double → float is the identity, and float → double is exact
    std::vector<double> back(n, std::numeric_limits<double>::quiet_NaN());
    convert_on_host(back.data(), out.data(), n, threads, 16);
    for (int64_t i = 0; i < n; ++i) REQUIRE((back[i] == static_cast<double>(out[i]) || std::isnan(out[i])));
    std::vector<float> again(n);
    convert_on_host(again.data(), back.data(), n, threads, 16);
    CHECK(std::memcmp(again.data(), out.data(), sizeof(float) * n) == 0);
  }
}

TEST_SUITE_END();
