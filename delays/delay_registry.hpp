#pragma once
// The delay-model registry (src/core/registry.hpp): every model registers itself from its own
// file with the delay.* keys it reads and its factory; delay.name's choices, `stale list`, the
// README's table and the unread-key rule read it.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "delays/delay_model.hpp"
#include "src/core/registry.hpp"

namespace stale {

struct DelayEntry {
  std::string name;
  std::string summary;
  int rank = 0;
  std::vector<std::string> keys;  // delay.* keys it reads besides delay.name
  std::function<std::unique_ptr<DelayModel>(const DelayContext&)> make;
};

using DelayRegistry = Registry<DelayEntry>;

const DelayEntry& delay_entry(const std::string& name);

}  // namespace stale
