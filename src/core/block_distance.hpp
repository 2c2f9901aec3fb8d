#pragma once
// The stale distance an RPD update logs: ‖z − w_k‖² = Σ_i ‖z^(i) − w_k^(i)‖² over the blocks
// read stale (delay > 0; a fresh block's difference is zero, and a diverged iterate's NaN must
// not enter through it), summed block after block. A block of four coordinates is summed in the
// project's own order (block_of_four_sq_distance: the same bits on every instruction set), any
// other block as Eigen's squaredNorm of the segment sums it on the build's target.
#include <cstdint>
#include <vector>

#include "src/core/partition.hpp"
#include "src/core/types.hpp"

namespace stale {

// ((x0² + x2²) + (x1² + x3²)), x = z − w, with no fused multiply-add
double block_of_four_sq_distance(const double* z, const double* w);

// Blocks of four coordinates (d = 4 S: E4 at S = 128) reduce four blocks at once in that order
// (AVX2); any other partition takes the plain loop. tests/core/test_block_distance.cpp checks
// both against the reference bit for bit.
double stale_sq_distance(const double* z, const double* w, const BlockPartition& P, const std::vector<int64_t>& delays);
// the same with z's block i starting at blocks[i] (read in place from the version store)
double stale_sq_distance(const std::vector<const double*>& blocks, const double* w, const BlockPartition& P,
                         const std::vector<int64_t>& delays);
// the plain loop, block after block: the reference
double stale_sq_distance_reference(const double* z, const double* w, const BlockPartition& P,
                                   const std::vector<int64_t>& delays);

}  // namespace stale
