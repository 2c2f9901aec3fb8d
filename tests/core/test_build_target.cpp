// The build's promise of the same bits on every machine of its target (CMakeLists.txt, "the
// instruction-set target"): what the code may not read from the machine it runs on.
#include <doctest/doctest.h>

#include <cstring>

#include "src/core/build_info.hpp"
#include "src/core/cpu_target.hpp"
#include "src/core/types.hpp"

TEST_SUITE_BEGIN("core");

// Eigen splits a matrix product's sums into blocks as deep as its L1 size allows; read with cpuid
// that is 248 terms on a 32 KiB L1 and 376 on a 48 KiB one (an Intel Xeon of 2026), and a product
// over n = 600 samples then carries other bits. The build fixes the sizes (EIGEN_NO_CPUID).
TEST_CASE("EigenBlocksProductsForFixedCacheSizesNotTheMachines") {
  std::ptrdiff_t l1 = 0, l2 = 0, l3 = 0;
  Eigen::internal::manage_caching_sizes(Eigen::GetAction, &l1, &l2, &l3);
  CHECK(l1 == 32 * 1024);
  CHECK(l2 == 256 * 1024);
  CHECK(l3 == 2 * 1024 * 1024);
}

TEST_CASE("ThisCpuRunsTheBuildsTarget") {
  CHECK(std::strlen(stale::build::cpu_target) > 0);
  CHECK(stale::cpu_target_mismatch() == "");  // else main() refuses in one line, before any work
}

TEST_SUITE_END();
