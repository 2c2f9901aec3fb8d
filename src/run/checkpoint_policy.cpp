#include "src/run/checkpoint_policy.hpp"

#include <utility>

namespace stale {

void CheckpointPolicy::write(StateBag&& method_state, StateBag&& metrics_state, int64_t k, bool stopping) {
  if (!log_) return;
  // the layout every checkpoint has had: old .partial files resume
  StateBag b;
  b.put_bag("method", std::move(method_state));
  b.put_bag("metrics", std::move(metrics_state));
  log_->write_checkpoint(std::move(b), k);
  flush_pending_ = false;
  if (stopping) stop_checkpointed_ = true;
}

}  // namespace stale
