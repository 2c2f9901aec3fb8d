#pragma once
// Logged rows that all show one block (issue 51, item 4). A schedule updates the blocks in a
// fixed cycle; when log.every is a multiple of that cycle every logged row is the same block's
// update, so the per-update series (/metrics/stage, batch, stale_dist, batch_loss) describe one
// stage although they look like the whole model's. The rule: warn when more than half of the
// logged rows are one block's update and there are at least two blocks, and name a cadence
// that spreads the rows (the next larger one with at most half on a block).
#include <cstdint>
#include <string>
#include <vector>

#include "src/pipeline/simulator.hpp"

namespace stale {

struct LoggedBlocks {
  int64_t rows = 0;      // logged rows after an update (k = every, 2·every, … ≤ K)
  int64_t top_rows = 0;  // of them, the most frequent block's
  int32_t top_block = -1;
};

// the blocks of the logged rows, from the serial update order of the run's schedule
LoggedBlocks logged_blocks(const std::vector<Update>& updates, int64_t every, int64_t updates_done);

// the one-line warning (without "warning: "), or "" when the rows spread over the blocks
std::string log_aliasing_warning(const std::vector<Update>& updates, int64_t every, int64_t updates_done,
                                 int64_t blocks);

}  // namespace stale
