#include "src/pipeline/coupled_timeline.hpp"

#include "src/core/error.hpp"

namespace stale {

namespace {
SimOptions with_reads(SimOptions o) {
  // the delay rows are read off the read tables and the update list as the run goes
  o.reads = true;
  o.updates = true;
  o.timeline = true;
  return o;
}
}  // namespace

CoupledTimeline::CoupledTimeline(const Schedule& schedule, const CostModel& costs, StateCosts state_costs,
                                 std::vector<int> batch_of, int64_t moment_window, const SimOptions& options)
    : s_(schedule),
      sim_(schedule, costs, with_reads(options)),
      state_(std::move(state_costs)),
      batch_of_(std::move(batch_of)),
      moments_(moment_window, schedule.blocks()) {
  STALE_CHECK(static_cast<int64_t>(batch_of_.size()) >= schedule.microbatches, "one batch per micro-batch");
}

int64_t CoupledTimeline::next() {
  STALE_CHECK(!result_, "the coupled timeline was already closed");
  current_ = sim_.next();
  return current_;
}

const OpTiming& CoupledTimeline::finish(const OpState& state) {
  STALE_CHECK(current_ >= 0, "CoupledTimeline::finish without an op from next()");
  const Op& op = s_.ops[current_];
  const double factor =
      replayed_ < replay_.size() ? replay_[replayed_++] : state_.factor(op.block, op.kind == s_.gradient_kind(), state);
  factors_.push_back(factor);
  // nominal × 1.0 is the nominal duration exactly: Coupling::None is the simulator bit for bit
  const Update* u = sim_.finish(sim_.nominal_duration() * factor);
  const SimResult& r = sim_.partial();
  timing_.end = r.end[current_];
  timing_.delays = nullptr;
  if (u && s_.replicas == 1) {
    row_ = r.delay_row(*u);
    moments_.add(row_);
    timing_.delays = &row_;
  }
  current_ = -1;
  return timing_;
}

void CoupledTimeline::save(StateBag& b) const {
  b.put_doubles("coupled_factors", factors_);
  state_.save(b);
}

void CoupledTimeline::restore(const StateBag& b) {
  STALE_CHECK(factors_.empty(), "a coupled timeline is restored before any op");
  if (!b.has("coupled_factors"))
    throw UserError("checkpoint: a run with coupled costs needs its timeline's factors, which this checkpoint lacks");
  replay_ = b.get_doubles("coupled_factors");
  replayed_ = 0;
  state_.restore(b);
}

DelayMoments CoupledTimeline::moments() {
  moments_.close();
  return moments_;
}

std::shared_ptr<const SimResult> CoupledTimeline::timeline() {
  if (result_) return result_;
  for (int64_t i; (i = sim_.next()) >= 0;) {
    const Op& op = s_.ops[i];
    sim_.finish(sim_.nominal_duration() * state_.frozen_factor(op.block, batch_of_[op.microbatch]));
  }
  result_ = std::make_shared<const SimResult>(sim_.result());
  return result_;
}

}  // namespace stale
