#pragma once
// Shared by the GPU suites: device gating, random points, and the CPU twin of a config.
//
// A test without a device reports itself skipped (tests/support/skip.hpp: the marker CTest
// turns into "skipped") and returns. With STALE_REQUIRE_GPU=1 (scripts/gpu_check.sh sets it)
// a missing device is a failure, so a GPU machine that silently fell back cannot report green.
#include <doctest/doctest.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "objectives/objective_factory.hpp"
#include "src/backend/backend.hpp"
#include "src/core/rng.hpp"
#include "tests/support/finite_difference.hpp"
#include "tests/support/skip.hpp"
#include "tests/support/test_util.hpp"

namespace stale::test {

inline bool gpu_required() {
  const char* v = std::getenv("STALE_REQUIRE_GPU");
  return v && std::string(v) == "1";
}

// the test is skipped: say why (or fail when a device is required)
inline void skip_test(const std::string& why) {
  if (gpu_required()) FAIL("STALE_REQUIRE_GPU=1 but the test would be skipped: " << why);
  report_skipped(why);
}

// true when the test can run on a device; otherwise skips (or fails when required)
inline bool have_gpu() {
  if (cuda_device_count() > 0) return true;
  skip_test("no usable CUDA device: " + cuda_unavailable_reason());
  return false;
}

inline Vec random_vec(Index d, uint64_t seed, double scale = 0.3) {
  Rng rng(seed, Stream::Init, 77);
  Vec w(d);
  for (Index i = 0; i < d; ++i) w(i) = scale * rng.normal();
  return w;
}

inline Mat random_mat(Index d, Index P, uint64_t seed, double scale = 0.3) {
  Mat Z(d, P);
  for (Index p = 0; p < P; ++p) Z.col(p) = random_vec(d, seed * 1000 + static_cast<uint64_t>(p), scale);
  return Z;
}


// the tolerance each precision is held to against the float64 CPU twin
inline double tolerance(const Config& cfg) { return cfg.get_string("precision") == "float32" ? 1e-5 : 1e-12; }

}  // namespace stale::test
