#include "src/run/log_aliasing.hpp"

#include <algorithm>
#include <map>

namespace stale {

LoggedBlocks logged_blocks(const std::vector<Update>& updates, int64_t every, int64_t updates_done) {
  LoggedBlocks out;
  if (every < 1) return out;
  std::map<int32_t, int64_t> count;
  const int64_t last = std::min<int64_t>(updates_done, static_cast<int64_t>(updates.size()));
  for (int64_t k = every; k <= last; k += every) ++count[updates[static_cast<size_t>(k - 1)].block];  // row k: update k − 1
  for (const auto& [block, n] : count) {
    out.rows += n;
    if (n > out.top_rows) out.top_rows = n, out.top_block = block;
  }
  return out;
}

std::string log_aliasing_warning(const std::vector<Update>& updates, int64_t every, int64_t updates_done,
                                 int64_t blocks) {
  auto aliased = [&](const LoggedBlocks& b) { return b.rows >= 4 && 2 * b.top_rows > b.rows; };
  const LoggedBlocks b = logged_blocks(updates, every, updates_done);
  if (blocks < 2 || !aliased(b)) return "";
  std::string better;
  for (int64_t e = every + 1; e <= every + 2 * blocks && better.empty(); ++e)
    if (!aliased(logged_blocks(updates, e, updates_done))) better = std::to_string(e);
  return "log.every = " + std::to_string(every) + ": " + std::to_string(b.top_rows) + " of " + std::to_string(b.rows) +
         " logged rows are block " + std::to_string(b.top_block) +
         "'s update (the schedule updates the blocks in a cycle that log.every is a multiple of), so the per-update "
         "series stage, batch, stale_dist and batch_loss describe that block only" +
         (better.empty() ? std::string("; choose a cadence coprime to the number of blocks")
                         : "; log.every = " + better + " spreads them over the blocks");
}

}  // namespace stale
