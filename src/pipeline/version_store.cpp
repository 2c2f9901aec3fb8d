#include "src/pipeline/version_store.hpp"

#include <algorithm>

#include "src/core/error.hpp"

namespace stale {

VersionStore::VersionStore(const BlockPartition& blocks, const Vec& w0, int64_t bound)
    : blocks_(blocks), bound_(bound), w_(w0) {
  STALE_CHECK(bound >= 0, "delay bound must be >= 0");
  STALE_CHECK(w0.size() == blocks.dim(), "w0 has the partition's dimension");
  rings_.resize(blocks.stages());
  const int64_t cap = std::min<int64_t>(bound + 1, 8);
  for (int s = 0; s < blocks.stages(); ++s) {
    Ring& r = rings_[s];
    r.cap = cap;
    r.slots.resize(blocks.size(s), cap);
    r.valid_from.assign(cap, 0);
    r.slots.col(0) = blocks.block(w0, s);
    r.head = 0;
    r.count = 1;
  }
}

const double* VersionStore::version_at(int block, int64_t j) const {
  const Ring& r = rings_[block];
  const int64_t cap = r.cap;
  // n-th newest (0 ≤ n < cap): one conditional add, not a division
  auto slot_of = [&](int64_t n) {
    const int64_t s = r.head - n;
    return s < 0 ? s + cap : s;
  };
  if (r.valid_from[slot_of(r.count - 1)] > j) throw InternalError("version store lost a reachable version (ring too small)");
  // valid_from decreases with n: the newest version current at j is the first n with
  // valid_from ≤ j. A branch-free lower bound (the comparison picks, it does not jump): with
  // about δ/S versions a block and S random reads an update, mispredicted branches of an
  // ordinary binary search were a fifth of an RPD update at S = 128, δ = 16,320.
  int64_t base = 0, len = r.count;
  while (len > 1) {
    const int64_t half = len / 2;
    base = r.valid_from[slot_of(base + half - 1)] <= j ? base : base + half;
    len -= half;
  }
  return r.slots.col(slot_of(base)).data();
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
  // the searches first, each prefetching the version it found, then the copies: the blocks'
  // cache misses overlap instead of each copy waiting for its own
  std::vector<const double*> from(static_cast<size_t>(S));
  for (int s = 0; s < S; ++s) {
    const double* v = delays[s] == 0 ? w_.data() + blocks_.offset(s) : version_at(s, k_ - delays[s]);
    __builtin_prefetch(v);
    from[static_cast<size_t>(s)] = v;
  }
  for (int s = 0; s < S; ++s) {
    const Index off = blocks_.offset(s), ds = blocks_.size(s);
    z.segment(off, ds) = Eigen::Map<const Vec>(from[static_cast<size_t>(s)], ds);  // inlined: a memmove call per block cost more than its copy
  }
}

void VersionStore::commit(int block, ConstVecRef value) {
  ++k_;
  blocks_.block(w_, block) = value;
  if (bound_ == 0) {
    rings_[block].slots.col(0) = value;
    rings_[block].valid_from[0] = k_;
    return;
  }
  Ring& r = rings_[block];
  int64_t cap = r.cap;
  // drop versions no read can reach any more: the oldest is dead once the next one was
  // already current at the window's start k − bound
  while (r.count > 1) {
    int64_t oldest = r.head - (r.count - 1);
    if (oldest < 0) oldest += cap;
    const int64_t next = oldest + 1 == cap ? 0 : oldest + 1;
    if (r.valid_from[next] <= k_ - bound_) --r.count;
    else break;
  }
  if (r.count == cap) {
    // full: double it (at most bound + 1), oldest version first
    STALE_CHECK(cap < bound_ + 1, "ring overflow: more than bound versions inside the window");
    const int64_t grown = std::min<int64_t>(bound_ + 1, 2 * cap);
    Mat slots(r.slots.rows(), grown);
    std::vector<int64_t> valid(grown, 0);
    for (int64_t n = 0; n < r.count; ++n) {
      int64_t from = r.head - (r.count - 1) + n;
      if (from < 0) from += cap;
      slots.col(n) = r.slots.col(from);
      valid[n] = r.valid_from[from];
    }
    r.slots.swap(slots);
    r.valid_from.swap(valid);
    r.head = r.count - 1;
    r.cap = cap = grown;
  }
  r.head = r.head + 1 == cap ? 0 : r.head + 1;
  r.slots.col(r.head) = value;
  r.valid_from[r.head] = k_;
  ++r.count;
}

}  // namespace stale
