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
  STALE_CHECK(w0.size() == blocks.dim(), "w0 has the partition's dimension");
  const int S = blocks.stages();
  rings_.resize(S);
  const int64_t cap = std::min<int64_t>(pow2_at_least(bound + 1), 8);
  for (int s = 0; s < S; ++s) {
    Ring& r = rings_[s];
    r.cap = cap;
    r.stride = 1 + blocks.size(s);
    r.slots.assign(static_cast<size_t>(cap * r.stride), 0.0);
    double* v0 = r.slot(0);
    v0[0] = Ring::when(0);
    Eigen::Map<Vec>(v0 + 1, blocks.size(s)) = blocks.block(w0, s);
  }
  while ((int64_t{1} << bucket_shift_) < S) ++bucket_shift_;
  // bucket b is read while j ≥ k − bound can fall in it: at most (bound >> shift) + 2 at once
  buckets_ = pow2_at_least((bound >> bucket_shift_) + 2);
  at_bucket_.assign(static_cast<size_t>(S * buckets_), 0);
}

void VersionStore::note_bucket() {
  const int64_t b = (k_ >> bucket_shift_) & (buckets_ - 1);
  for (size_t s = 0; s < rings_.size(); ++s) at_bucket_[s * static_cast<size_t>(buckets_) + static_cast<size_t>(b)] = rings_[s].newest;
}

const double* VersionStore::find_from(const Ring& r, int64_t from, int64_t j) const {
  const double at = Ring::when(j);
  int64_t v = std::max(r.oldest, from);
  while (v < r.newest && r.slot(v + 1)[0] <= at) ++v;
  const double* slot = r.slot(v);
  if (slot[0] > at) throw InternalError("version store lost a reachable version (ring too small)");
  return slot + 1;
}

const double* VersionStore::version_at(int block, int64_t j) const {
  return find_from(rings_[block], *bucket_entry(block, j), j);
}

Eigen::Map<const Vec> VersionStore::read(int block, int64_t j) const {
  STALE_CHECK(j <= k_ && j >= k_ - bound_ && j >= 0, "read outside the window [k − bound, k]");
  return Eigen::Map<const Vec>(version_at(block, j), blocks_.size(block));
}

void VersionStore::gather(const std::vector<int64_t>& delays, Vec& z) const {
  const int S = blocks_.stages();
  const int64_t reach = std::min(bound_, k_);
  for (int s = 0; s < S; ++s) STALE_CHECK(delays[s] >= 0 && delays[s] <= reach, "read outside the window [k − bound, k]");
  z.resize(w_.size());
  // Three passes, each prefetching what the next one reads, so that the blocks' cache misses
  // (bucket entries, then versions: ~1.5 MB of store at S = 128, δ = 16,320) overlap instead
  // of each read waiting for its own.
  thread_local std::vector<const int64_t*> entry;
  thread_local std::vector<const double*> from;
  entry.resize(static_cast<size_t>(S));
  from.resize(static_cast<size_t>(S));
  for (int s = 0; s < S; ++s) {
    if (delays[s] == 0) continue;
    entry[static_cast<size_t>(s)] = bucket_entry(s, k_ - delays[s]);
    __builtin_prefetch(entry[static_cast<size_t>(s)]);
  }
  for (int s = 0; s < S; ++s) {
    if (delays[s] == 0) continue;
    const Ring& r = rings_[s];
    const double* first = r.slot(std::max(r.oldest, *entry[static_cast<size_t>(s)]));
    __builtin_prefetch(first);
    __builtin_prefetch(first + r.stride);  // the next version's iterate, which the search checks
  }
  for (int s = 0; s < S; ++s)
    from[static_cast<size_t>(s)] = delays[s] == 0 ? w_.data() + blocks_.offset(s)
                                                  : find_from(rings_[s], *entry[static_cast<size_t>(s)], k_ - delays[s]);
  for (int s = 0; s < S; ++s) {
    const Index off = blocks_.offset(s), ds = blocks_.size(s);
    z.segment(off, ds) = Eigen::Map<const Vec>(from[static_cast<size_t>(s)], ds);  // inlined: a memmove call per block cost more than its copy
  }
}

void VersionStore::commit(int block, ConstVecRef value) {
  ++k_;
  blocks_.block(w_, block) = value;
  Ring& r = rings_[block];
  const Index ds = value.size();
  if (bound_ == 0) {  // fresh reads only: the one slot holds the current value
    r.oldest = ++r.newest;
  } else {
    // drop versions no read can reach any more: the oldest is dead once the next one was
    // already current at the window's start k − bound
    while (r.oldest < r.newest && r.slot(r.oldest + 1)[0] <= Ring::when(k_ - bound_)) ++r.oldest;
    if (r.newest - r.oldest + 1 == r.cap) {
      // full: double it (a power of two; never more versions than bound + 1)
      STALE_CHECK(r.cap < bound_ + 1, "ring overflow: more than bound versions inside the window");
      Ring grown;
      grown.stride = r.stride;
      grown.cap = 2 * r.cap;
      grown.oldest = r.oldest;
      grown.newest = r.newest;
      grown.slots.assign(static_cast<size_t>(grown.cap * r.stride), 0.0);
      for (int64_t v = r.oldest; v <= r.newest; ++v) std::copy_n(r.slot(v), r.stride, grown.slot(v));
      r = std::move(grown);
    }
    ++r.newest;
  }
  double* slot = r.slot(r.newest);
  slot[0] = Ring::when(k_);
  Eigen::Map<Vec>(slot + 1, ds) = value;
  if ((k_ & ((int64_t{1} << bucket_shift_) - 1)) == 0) note_bucket();
}

}  // namespace stale
