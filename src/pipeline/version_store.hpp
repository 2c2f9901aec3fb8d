#pragma once
// The one place staleness lives (docs/design.md "VersionStore"). w_k is the model after k block
// updates; a read of block i at iterate j ∈ [k − bound, k] returns the value block i had in
// w_j. Per block only the versions a read can still reach are kept: a ring that grows to at
// most bound + 1 slots (at most `bound` versions can become current inside the window, plus
// the one that was current at its start), never the whole history. A ring starts small and
// doubles when full: with S blocks updated in turn a block holds about bound / S live
// versions, and sizing every ring for bound + 1 made a run at S = 128, δ = 16320 hold 67 MB
// of slots whose random reads missed every cache.
#include <cstdint>
#include <vector>

#include "src/core/partition.hpp"
#include "src/core/types.hpp"

namespace stale {

class VersionStore {
 public:
  VersionStore(const BlockPartition& blocks, const Vec& w0, int64_t bound);

  const Vec& current() const { return w_; }
  int64_t updates() const { return k_; }
  int64_t bound() const { return bound_; }
  const BlockPartition& blocks() const { return blocks_; }

  // block i as it was in w_j (k − bound ≤ j ≤ k)
  Eigen::Map<const Vec> read(int block, int64_t j) const;
  // z with z^(i) = block i of w_{k − delays[i]}: the mixed point of docs/theory.md §1
  void gather(const std::vector<int64_t>& delays, Vec& z) const;
  // w_{k+1} = w_k with block i replaced; k ← k + 1
  void commit(int block, ConstVecRef value);
  int versions_held(int block) const { return static_cast<int>(rings_[block].count); }

 private:
  struct Ring {
    Mat slots;                       // d_s × cap
    std::vector<int64_t> valid_from; // iterate at which the slot's value became current
    int64_t cap = 0;                 // slots allocated (≤ bound + 1)
    int64_t head = 0;                // slot of the newest version
    int64_t count = 0;
  };
  // the first value of block i's version current at iterate j (j inside the window)
  const double* version_at(int block, int64_t j) const;
  BlockPartition blocks_;
  int64_t bound_;
  int64_t k_ = 0;
  Vec w_;
  std::vector<Ring> rings_;
};

}  // namespace stale
