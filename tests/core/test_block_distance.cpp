// src/core/block_distance.hpp: the stale distance of an RPD update. Exact equalities only: the
// fast path of four-coordinate blocks and the reference against a loop written here (blocks of
// four in the project's order, spelled out below; other blocks as Eigen segments), for
// partitions with and without the fast path, fresh blocks, and a non-finite value in a fresh
// block (which must not enter); z contiguous and z block by block. Nothing here depends on the
// vector width the build targets: these hold for x86-64, x86-64-v3 and AVX-512 builds alike.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "src/core/block_distance.hpp"
#include "src/core/rng.hpp"

TEST_SUITE_BEGIN("core");

using namespace stale;

namespace {
// ((x0² + x2²) + (x1² + x3²)) with every product rounded before it is added: each square is
// forced through memory, so no compiler can fuse it into the sum
double four_in_project_order(const double* z, const double* w) {
  volatile double sq[4];
  for (int j = 0; j < 4; ++j) sq[j] = (z[j] - w[j]) * (z[j] - w[j]);
  const double even = sq[0] + sq[2], odd = sq[1] + sq[3];
  return even + odd;
}
}  // namespace

TEST_CASE("BlockOfFourIsSummedInTheProjectsOrderOnEveryTarget") {
  Rng rng(7, Stream::Eval);
  for (int trial = 0; trial < 2000; ++trial) {
    double z[4], w[4];
    for (int j = 0; j < 4; ++j) {
      w[j] = rng.normal() * std::pow(10.0, static_cast<double>(rng.uniform_int(9)) - 4);
      z[j] = w[j] + rng.normal() * std::pow(10.0, static_cast<double>(rng.uniform_int(9)) - 4);
    }
    // the project's order only: whether Eigen's squaredNorm sums four values the same way is
    // Eigen's business (it did on x86-64-v3 with Eigen 3.4, which the golden digests pin)
    CHECK(block_of_four_sq_distance(z, w) == four_in_project_order(z, w));
  }
}

TEST_CASE("StaleDistanceSumsEachBlockInTheProjectsOrderBitForBit") {
  Rng rng(5, Stream::Eval);
  std::vector<BlockPartition> partitions;
  for (const auto& [dim, stages] : {std::pair<Index, int>{512, 128}, {16, 4}, {20, 5}, {24, 6}, {512, 8}, {513, 128}, {7, 3}})
    partitions.emplace_back(dim, stages);
  partitions.emplace_back(std::vector<Index>{0, 3, 8, 12, 16});  // d = 4 S, but not blocks of four
  for (const BlockPartition& P : partitions) {
    const Index dim = P.dim();
    const int stages = P.stages();
    CAPTURE(dim);
    CAPTURE(stages);
    for (int trial = 0; trial < 50; ++trial) {
      Vec z(dim), w(dim);
      for (Index i = 0; i < dim; ++i) w(i) = rng.normal() * std::pow(10.0, static_cast<double>(rng.uniform_int(9)) - 4);
      std::vector<int64_t> delays(static_cast<size_t>(stages));
      for (int s = 0; s < stages; ++s) {
        delays[static_cast<size_t>(s)] = static_cast<int64_t>(rng.uniform_int(4));  // a quarter fresh
        for (Index i = P.offset(s); i < P.offset(s + 1); ++i)
          z(i) = delays[static_cast<size_t>(s)] == 0 ? w(i) : w(i) + rng.normal() * 1e-3;
      }
      if (trial % 10 == 9) {  // a diverged iterate: non-finite values in a fresh block only
        for (int s = 0; s < stages; ++s)
          if (delays[static_cast<size_t>(s)] == 0) {
            z(P.offset(s)) = w(P.offset(s)) = std::numeric_limits<double>::infinity();
            break;
          }
      }
      const bool fours = dim == 4 * static_cast<Index>(stages) && P.max_size() == 4;
      double loop = 0;
      for (int s = 0; s < stages; ++s)
        if (delays[static_cast<size_t>(s)] > 0)
          loop += fours ? four_in_project_order(z.data() + P.offset(s), w.data() + P.offset(s))
                        : (P.block(z, s) - P.block(w, s)).squaredNorm();
      REQUIRE(std::isfinite(loop));
      CHECK(stale_sq_distance(z.data(), w.data(), P, delays) == loop);
      CHECK(stale_sq_distance_reference(z.data(), w.data(), P, delays) == loop);
      // z's blocks read in place, each in storage of its own (as from the version store)
      std::vector<Vec> apart(static_cast<size_t>(stages));
      std::vector<const double*> blocks;
      for (int s = 0; s < stages; ++s) blocks.push_back((apart[static_cast<size_t>(s)] = P.block(z, s)).data());
      CHECK(stale_sq_distance(blocks, w.data(), P, delays) == loop);
    }
  }
}

TEST_SUITE_END();
