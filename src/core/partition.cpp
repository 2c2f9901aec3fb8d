#include "src/core/partition.hpp"

#include <algorithm>

namespace stale {

BlockPartition::BlockPartition(Index dim, int stages) {
  STALE_CHECK(stages >= 1 && dim >= stages, "need 1 <= stages <= dim");
  offsets_.assign(stages + 1, 0);
  const Index base = dim / stages, extra = dim % stages;
  for (int s = 0; s < stages; ++s) offsets_[s + 1] = offsets_[s] + base + (s < extra ? 1 : 0);
  max_size_ = base + (extra > 0 ? 1 : 0);
}

BlockPartition::BlockPartition(std::vector<Index> offsets) : offsets_(std::move(offsets)) {
  STALE_CHECK(offsets_.size() >= 2 && offsets_.front() == 0, "offsets start at 0");
  for (size_t i = 1; i < offsets_.size(); ++i)
    STALE_CHECK(offsets_[i] > offsets_[i - 1], "blocks must be non-empty");
  for (int s = 0; s < stages(); ++s) max_size_ = std::max(max_size_, size(s));
}

}  // namespace stale
