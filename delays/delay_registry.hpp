#pragma once
// The delay-model registry (src/core/registry.hpp): every model registers itself from its own
// file with the delay.* keys it reads and its factory; delay.name's choices, `stale list`, the
// README's table and the unread-key rule read it.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "delays/delay_model.hpp"
#include "src/config/config.hpp"
#include "src/core/registry.hpp"

namespace stale {

struct DelayEntry {
  std::string name;
  std::string summary;
  int rank = 0;
  std::vector<std::string> keys;  // delay.* keys it reads besides delay.name
  std::function<std::unique_ptr<DelayModel>(const DelayContext&)> make;
  // versions of each coordinate rpd's version store holds under this model, from the config and
  // the stage count (the resource estimate); empty: as many as the run's reads reach, not
  // known up front (a replayed table), or none (zero delay)
  std::function<double(const Config&, double stages)> versions_held;
  bool simulates_schedule = false;  // the model is a simulated schedule's delay table
  // the one delay δ every read has, from the config (zero: 0, constant: delay.max); empty for
  // a model whose delays vary. The stability predictor's recursion reads it.
  std::function<int64_t(const Config&)> fixed_delay = {};
};

// versions_held of the models bounded by delay.max: a ring of δ + 1 versions
inline double versions_up_to_delay_max(const Config& cfg, double) {
  return static_cast<double>(cfg.get_int("delay.max")) + 1.0;
}

using DelayRegistry = Registry<DelayEntry>;

const DelayEntry& delay_entry(const std::string& name);

}  // namespace stale
