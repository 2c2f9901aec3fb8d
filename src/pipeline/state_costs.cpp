#include "src/pipeline/state_costs.hpp"

#include <algorithm>
#include <cmath>

#include "src/core/error.hpp"

namespace stale {

Coupling parse_coupling(const std::string& name) {
  if (name == "none") return Coupling::None;
  if (name == "data") return Coupling::Data;
  if (name == "gradient") return Coupling::Gradient;
  if (name == "weight") return Coupling::Weight;
  throw UserError("costs.coupling = \"" + name + "\": expected one of none, data, gradient, weight");
}

const char* coupling_name(Coupling c) {
  switch (c) {
    case Coupling::None: return "none";
    case Coupling::Data: return "data";
    case Coupling::Gradient: return "gradient";
    case Coupling::Weight: return "weight";
  }
  return "none";
}

StateCosts::StateCosts(Coupling coupling, double scale, int blocks, std::vector<double> batch_costs)
    : coupling_(coupling), scale_(scale) {
  first_norm_.assign(blocks, 0.0);
  last_factor_.assign(blocks, 1.0);
  if (coupling_ != Coupling::Data) return;
  STALE_CHECK(!batch_costs.empty(), "data coupling needs one cost per mini-batch");
  double mean = 0;
  for (double c : batch_costs) {
    if (!(c > 0) || !std::isfinite(c))
      throw UserError("costs.coupling = \"data\": a mini-batch has data cost " + std::to_string(c) +
                      "; every batch needs a positive cost (a batch whose rows are all zero has none)");
    mean += c;
  }
  mean /= static_cast<double>(batch_costs.size());
  data_factor_.resize(batch_costs.size());
  for (size_t m = 0; m < batch_costs.size(); ++m) data_factor_[m] = clamp(std::pow(batch_costs[m] / mean, scale_));
}

double StateCosts::clamp(double f) const { return std::min(1e9, std::max(1e-9, f)); }

double StateCosts::factor(int block, bool gradient_op, const OpState& state) {
  switch (coupling_) {
    case Coupling::None:
      return 1.0;
    case Coupling::Data:
      STALE_CHECK(state.batch >= 0 && state.batch < static_cast<int>(data_factor_.size()), "op batch out of range");
      return data_factor_[state.batch];
    case Coupling::Gradient:
      if (gradient_op && state.gradient) {
        const double n = state.gradient->norm();
        if (std::isfinite(n)) {
          if (first_norm_[block] == 0) first_norm_[block] = n;
          if (first_norm_[block] > 0) last_factor_[block] = clamp(std::pow(n / first_norm_[block], scale_));
        }
      }
      return last_factor_[block];
    case Coupling::Weight:
      if (state.weights && state.weights_size > 0) {
        const double rms = Eigen::Map<const Vec>(state.weights, state.weights_size).norm() /
                           std::sqrt(static_cast<double>(state.weights_size));
        if (std::isfinite(rms)) last_factor_[block] = clamp(std::pow(1.0 + rms, scale_));
      }
      return last_factor_[block];
  }
  return 1.0;
}

double StateCosts::frozen_factor(int block, int batch) const {
  switch (coupling_) {
    case Coupling::None: return 1.0;
    case Coupling::Data: return data_factor_[batch];
    case Coupling::Gradient:
    case Coupling::Weight: return last_factor_[block];
  }
  return 1.0;
}

void StateCosts::save(StateBag& b) const {
  b.put_doubles("coupling_first_norm", first_norm_);
  b.put_doubles("coupling_last_factor", last_factor_);
}

void StateCosts::restore(const StateBag& b) {
  const auto& first = b.get_doubles("coupling_first_norm");
  const auto& last = b.get_doubles("coupling_last_factor");
  if (first.size() != first_norm_.size() || last.size() != last_factor_.size())
    throw UserError("checkpoint: the coupled costs' state has " + std::to_string(first.size()) + " blocks, the run " +
                    std::to_string(first_norm_.size()));
  first_norm_ = first;
  last_factor_ = last;
}

}  // namespace stale
