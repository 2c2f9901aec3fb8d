#pragma once
// The split of w ∈ R^d into S contiguous, near-equal blocks (docs/theory.md §1, §7): the first
// d mod S blocks get one extra coordinate. Block s is pipeline stage s.
#include <string>
#include <vector>

#include "src/core/error.hpp"
#include "src/core/types.hpp"

namespace stale {

class BlockPartition {
 public:
  BlockPartition() = default;
  BlockPartition(Index dim, int stages);
  // explicit boundaries (e.g. a transformer whose stages have unequal parameter counts)
  explicit BlockPartition(std::vector<Index> offsets);

  int stages() const { return static_cast<int>(offsets_.size()) - 1; }
  Index dim() const { return offsets_.back(); }
  Index offset(int s) const { return offsets_[s]; }
  Index size(int s) const { return offsets_[s + 1] - offsets_[s]; }
  Index max_size() const { return max_size_; }
  const std::vector<Index>& offsets() const { return offsets_; }

  auto block(Vec& w, int s) const { return w.segment(offset(s), size(s)); }
  auto block(const Vec& w, int s) const { return w.segment(offset(s), size(s)); }

 private:
  std::vector<Index> offsets_{0};
  Index max_size_ = 0;  // kept: an RPD update asks for it (block_distance)
};

}  // namespace stale
