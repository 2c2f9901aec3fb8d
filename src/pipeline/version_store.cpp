#include "src/pipeline/version_store.hpp"

#include "src/core/error.hpp"

namespace stale {

VersionStore::VersionStore(const BlockPartition& blocks, const Vec& w0, int64_t bound)
    : blocks_(blocks), bound_(bound), w_(w0) {
  STALE_CHECK(bound >= 0, "delay bound must be >= 0");
  STALE_CHECK(w0.size() == blocks.dim(), "w0 has the partition's dimension");
  rings_.resize(blocks.stages());
  const int64_t cap = bound + 1;
  for (int s = 0; s < blocks.stages(); ++s) {
    Ring& r = rings_[s];
    r.slots.resize(blocks.size(s), cap);
    r.valid_from.assign(cap, 0);
    r.slots.col(0) = blocks.block(w0, s);
    r.head = 0;
    r.count = 1;
  }
}

Eigen::Map<const Vec> VersionStore::read(int block, int64_t j) const {
  STALE_CHECK(j <= k_ && j >= k_ - bound_ && j >= 0, "read outside the window [k − bound, k]");
  const Ring& r = rings_[block];
  const int64_t cap = bound_ + 1;
  auto slot_of = [&](int64_t n) { return ((r.head - n) % cap + cap) % cap; };  // n-th newest
  // valid_from decreases with n: binary search for the newest version current at j
  int64_t lo = 0, hi = r.count - 1;
  if (r.valid_from[slot_of(hi)] > j) throw InternalError("version store lost a reachable version (ring too small)");
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (r.valid_from[slot_of(mid)] <= j) hi = mid;
    else lo = mid + 1;
  }
  const int64_t slot = slot_of(lo);
  return Eigen::Map<const Vec>(r.slots.col(slot).data(), r.slots.rows());
}

void VersionStore::gather(const std::vector<int64_t>& delays, Vec& z) const {
  z.resize(w_.size());
  for (int s = 0; s < blocks_.stages(); ++s) {
    if (delays[s] == 0) blocks_.block(z, s) = blocks_.block(w_, s);
    else blocks_.block(z, s) = read(s, k_ - delays[s]);
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
  const int64_t cap = bound_ + 1;
  // drop versions no read can reach any more: the oldest is dead once the next one was
  // already current at the window's start k − bound
  while (r.count > 1) {
    const int64_t oldest = ((r.head - (r.count - 1)) % cap + cap) % cap;
    if (r.valid_from[(oldest + 1) % cap] <= k_ - bound_) --r.count;
    else break;
  }
  STALE_CHECK(r.count < cap, "ring overflow: more than bound versions inside the window");
  r.head = (r.head + 1) % cap;
  r.slots.col(r.head) = value;
  r.valid_from[r.head] = k_;
  ++r.count;
}

}  // namespace stale
