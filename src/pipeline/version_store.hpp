#pragma once
// The one place staleness lives (docs/design.md "VersionStore"). w_k is the model after k block
// updates; a read of block i at iterate j ∈ [k − bound, k] returns the value block i had in
// w_j. Per block only the versions a read can still reach are kept: at most bound + 1 of them
// (at most `bound` versions can become current inside the window, plus the one that was
// current at its start) in a ring of a power of two slots, never the whole history. A ring starts small and
// doubles when full: with S blocks updated in turn a block holds about bound / S live
// versions, and sizing every ring for bound + 1 made a run at S = 128, δ = 16320 hold 67 MB
// of slots whose random reads missed every cache.
//
// Finding the version current at j: versions are numbered per block (0 = w_0's block); every
// B iterates (B = S rounded up to a power of two) the store notes each block's newest number
// in a bucket entry, and each commit inside the bucket appends the iterate at which its version
// became current to the block's entry (up to three; about B/S versions, one, fall in a bucket
// when blocks are drawn uniformly). A read at j counts the entry's iterates ≤ j: one 16-byte
// entry, no walk through the ring, unless all three are ≤ j and the ring's own iterates decide
// the rest. A binary search over the ring (7 dependent loads at ~128 versions a block) was 38 %
// of an RPD run at S = 128, δ = 16,320; stepping through the ring's iterates from the bucket's
// first version was still a third of it, and as much at δ = 200, where everything sits in L1:
// instructions, not misses, which the entry's three compares cut.
//
// The iterates at which versions became current also sit in their own array per block, apart
// from the values (the commits' pruning and the rare long step read them). Iterates are
// stored as 32-bit numbers and compared modulo 2^32, exact while the window is below 2^31 (the
// bound is); an entry's version number likewise, rebuilt from the block's newest.
#include <cstdint>
#include <cstddef>
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
  // at[i] = the first value of block i as it was in w_{k − delays[i]}, for every block at once
  // (the blocks' cache misses overlap), valid until the next commit
  void locate(const std::vector<int64_t>& delays, std::vector<const double*>& at) const;
  // w_{k+1} = w_k with block i replaced; k ← k + 1
  void commit(int block, ConstVecRef value);
  int versions_held(int block) const { return static_cast<int>(rings_[block].newest - rings_[block].oldest + 1); }

 private:
  // Version v lives at slot v & (cap − 1): the iterate at which it became current in `when`,
  // its d_s values in `values`.
  struct Ring {
    std::vector<uint32_t> when;   // cap
    std::vector<double> values;   // cap × d_s
    Index size = 0;               // d_s
    int64_t cap = 0;              // a power of two, grown by doubling
    int64_t oldest = 0, newest = 0;  // the live versions' numbers
    int64_t at(int64_t v) const { return v & (cap - 1); }
    double* value(int64_t v) { return values.data() + at(v) * size; }
    const double* value(int64_t v) const { return values.data() + at(v) * size; }
    // version v was current at iterate j or before (both inside a window below 2^31)
    bool current_by(int64_t v, int64_t j) const { return reached(when[static_cast<size_t>(at(v))], j); }
  };
  // A block's bucket entry: the version current at the bucket's start (its low 32 bits) and
  // the iterates at which the next three became current (the bucket's end where fewer did)
  struct alignas(16) Entry {
    uint32_t first;
    uint32_t when[3];
  };
  // block i's version current at iterate j (j inside the window, e its bucket's entry)
  const double* find(const Ring& r, const Entry& e, int64_t j) const;
  // an iterate stored as 32 bits, `when`, is at most j (both inside a window below 2^31)
  static bool reached(uint32_t when, int64_t j) { return static_cast<int32_t>(when - static_cast<uint32_t>(j)) <= 0; }
  size_t bucket_index(int block, int64_t j) const {
    return static_cast<size_t>(block * buckets_ + ((j >> bucket_shift_) & (buckets_ - 1)));
  }
  const Entry* bucket_entry(int block, int64_t j) const { return &at_bucket_[bucket_index(block, j)]; }
  // the first iterate past j's bucket: an entry's "no version" (no read in the bucket reaches it)
  uint32_t bucket_end(int64_t j) const {
    return static_cast<uint32_t>((j | ((int64_t{1} << bucket_shift_) - 1)) + 1);
  }
  // the first value of block i's version current at iterate j (j inside the window)
  const double* version_at(int block, int64_t j) const;
  void note_bucket();  // every block's entry opens at iterate k_ (k_ a multiple of B)
  BlockPartition blocks_;
  int64_t bound_;
  int64_t k_ = 0;
  Vec w_;
  std::vector<Ring> rings_;
  int bucket_shift_ = 0;           // B = 2^bucket_shift_
  int64_t buckets_ = 1;            // buckets kept per block (a power of two covering the window)
  std::vector<Entry> at_bucket_;   // [block · buckets_ + bucket mod buckets_]
};

}  // namespace stale
