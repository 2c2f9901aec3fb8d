#pragma once
// The one loop of the fresh-read methods (sgd, bcd): each update reads the current iterate,
// takes a mini-batch gradient of the block(s) it steps and applies the block update rule.
// What differs between the two is how much one update steps, which their registry entries
// (sgd.cpp, bcd.cpp) pass here; their update equations open those files.
#include <memory>

#include "optimizers/method.hpp"

namespace stale {

enum class FreshStep {
  AllBlocks,   // every block at once on ∇f_m(w): one update advances k by S (sgd)
  DrawnBlock,  // one uniformly drawn block s_k on ∇_{w^(s_k)} f_m(w): k advances by 1 (bcd)
};

std::unique_ptr<Method> make_fresh_read_method(const char* name, const MethodParams& p, FreshStep step);

}  // namespace stale
