#include "src/pipeline/version_store.hpp"

#include <algorithm>

#include "src/core/error.hpp"

namespace stale {

namespace {
int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}
}  // namespace

VersionStore::VersionStore(const BlockPartition& blocks, const Vec& w0, int64_t bound)
    : blocks_(blocks), bound_(bound), w_(w0) {
  STALE_CHECK(bound >= 0, "delay bound must be >= 0");
  STALE_CHECK(bound < (int64_t{1} << 31), "delay bound below 2^31 (iterates are compared modulo 2^32)");
  STALE_CHECK(w0.size() == blocks.dim(), "w0 has the partition's dimension");
  const int S = blocks.stages();
  rings_.resize(S);
  const int64_t cap = std::min<int64_t>(pow2_at_least(bound + 1), 8);
  for (int s = 0; s < S; ++s) {
    Ring& r = rings_[s];
    r.cap = cap;
    r.size = blocks.size(s);
    r.when.assign(static_cast<size_t>(cap), 0);
    r.values.assign(static_cast<size_t>(cap * r.size), 0.0);
    Eigen::Map<Vec>(r.value(0), r.size) = blocks.block(w0, s);
  }
  while ((int64_t{1} << bucket_shift_) < S) ++bucket_shift_;
  // bucket b is read while j ≥ k − bound can fall in it: at most (bound >> shift) + 2 at once
  buckets_ = pow2_at_least((bound >> bucket_shift_) + 2);
  at_bucket_.resize(static_cast<size_t>(S * buckets_));
  note_bucket();  // bucket 0: every block's version 0
}

void VersionStore::note_bucket() {
  const uint32_t end = bucket_end(k_);
  for (int s = 0; s < static_cast<int>(rings_.size()); ++s)
    at_bucket_[bucket_index(s, k_)] = Entry{static_cast<uint32_t>(rings_[s].newest), {end, end, end}};
}

namespace {
[[noreturn, gnu::cold, gnu::noinline]] void lost_version() {
  throw InternalError("version store lost a reachable version (ring too small)");
}
}  // namespace

inline const double* VersionStore::find(const Ring& r, const Entry& e, int64_t j) const {
  const int64_t first = r.newest - static_cast<uint32_t>(static_cast<uint32_t>(r.newest) - e.first);
  const int64_t steps = int64_t{reached(e.when[0], j)} + reached(e.when[1], j) + reached(e.when[2], j);
  int64_t v = first + steps;
  if (steps == 3) {
    // more than three versions may have become current in the bucket: the ring decides, from
    // its oldest live version where the third has been dropped (the oldest is current at the
    // window's start, so by j).
    // Steps past the ones current by j four at a time without a branch per version (a loop's
    // exit mispredicted on most reads); the live versions' iterates increase, so the ones
    // current by j are a prefix and their count is the step.
    v = std::max(v, r.oldest);
    for (;;) {
      const int64_t live = r.newest - v;
      const int64_t step = (live >= 1 && r.current_by(v + 1, j)) + (live >= 2 && r.current_by(v + 2, j)) +
                           (live >= 3 && r.current_by(v + 3, j)) + (live >= 4 && r.current_by(v + 4, j));
      v += step;
      if (step < 4) break;
    }
  }
  // the entry's answer needs no look at the ring's iterates; a version outside the live ones
  // would mean the ring lost one a read can reach
  if (v < r.oldest || v > r.newest) lost_version();
  return r.value(v);
}

const double* VersionStore::version_at(int block, int64_t j) const {
  return find(rings_[block], *bucket_entry(block, j), j);
}

Eigen::Map<const Vec> VersionStore::read(int block, int64_t j) const {
  STALE_CHECK(j <= k_ && j >= k_ - bound_ && j >= 0, "read outside the window [k − bound, k]");
  return Eigen::Map<const Vec>(version_at(block, j), blocks_.size(block));
}

void VersionStore::locate(const std::vector<int64_t>& delays, std::vector<const double*>& at) const {
  const int S = blocks_.stages();
  const int64_t reach = std::min(bound_, k_);
  for (int s = 0; s < S; ++s) STALE_CHECK(delays[s] >= 0 && delays[s] <= reach, "read outside the window [k − bound, k]");
  // Two passes, so that the blocks' cache misses overlap instead of each read waiting for its
  // own: the bucket entries (prefetched), then the search and a prefetch of the value found.
  thread_local std::vector<const Entry*> entry;
  entry.resize(static_cast<size_t>(S));
  at.resize(static_cast<size_t>(S));
  for (int s = 0; s < S; ++s) {
    entry[static_cast<size_t>(s)] = bucket_entry(s, k_ - delays[s]);
    __builtin_prefetch(entry[static_cast<size_t>(s)]);
  }
  for (int s = 0; s < S; ++s) {
    const double* v = delays[s] == 0 ? w_.data() + blocks_.offset(s)
                                     : find(rings_[s], *entry[static_cast<size_t>(s)], k_ - delays[s]);
    // the first lines of the block (an ensemble's block holds every column's values; past
    // 512 bytes the hardware's own prefetcher follows the copy)
    const Index bytes = std::min<Index>(blocks_.size(s), 64) * static_cast<Index>(sizeof(double));
    for (Index line = 0; line < bytes; line += 64) __builtin_prefetch(reinterpret_cast<const char*>(v) + line);
    at[static_cast<size_t>(s)] = v;
  }
}

void VersionStore::commit(int block, ConstVecRef value) {
  ++k_;
  blocks_.block(w_, block) = value;
  Ring& r = rings_[block];
  if (bound_ == 0) {  // fresh reads only: the one slot holds the current value
    r.oldest = ++r.newest;
  } else {
    // drop versions no read can reach any more: the oldest is dead once the next one was
    // already current at the window's start k − bound
    while (r.oldest < r.newest && r.current_by(r.oldest + 1, k_ - bound_)) ++r.oldest;
    if (r.newest - r.oldest + 1 == r.cap) {
      // full: double it (a power of two; never more versions than bound + 1)
      STALE_CHECK(r.cap < bound_ + 1, "ring overflow: more than bound versions inside the window");
      Ring grown;
      grown.size = r.size;
      grown.cap = 2 * r.cap;
      grown.oldest = r.oldest;
      grown.newest = r.newest;
      grown.when.assign(static_cast<size_t>(grown.cap), 0);
      grown.values.assign(static_cast<size_t>(grown.cap * r.size), 0.0);
      for (int64_t v = r.oldest; v <= r.newest; ++v) {
        grown.when[static_cast<size_t>(grown.at(v))] = r.when[static_cast<size_t>(r.at(v))];
        std::copy_n(r.value(v), r.size, grown.value(v));
      }
      r = std::move(grown);
    }
    ++r.newest;
  }
  r.when[static_cast<size_t>(r.at(r.newest))] = static_cast<uint32_t>(k_);
  Eigen::Map<Vec>(r.value(r.newest), value.size()) = value;
  if ((k_ & ((int64_t{1} << bucket_shift_) - 1)) == 0) {
    note_bucket();
  } else {
    // the block's entry in k_'s bucket: the first of its three free iterates (a fourth version
    // in the bucket is left to the ring's iterates)
    Entry& e = at_bucket_[bucket_index(block, k_)];
    const uint32_t end = bucket_end(k_);
    for (uint32_t& w : e.when)
      if (w == end) {
        w = static_cast<uint32_t>(k_);
        break;
      }
  }
}

}  // namespace stale
