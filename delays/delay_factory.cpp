#include <algorithm>
#include <vector>

#include "delays/delay_registry.hpp"
#include "src/config/config.hpp"
#include "src/core/error.hpp"

namespace stale {

namespace {
const bool choices = set_choice_source("delay.name", [] { return DelayRegistry::names(); });
}  // namespace

const DelayEntry& delay_entry(const std::string& name) {
  if (const DelayEntry* e = DelayRegistry::find(name)) return *e;
  config_error("delay.name", "\"" + name + "\" is not valid; choose one of: " + DelayRegistry::names_text());
}

int64_t DelayModel::largest_delay(int64_t updates, int blocks) const {
  int64_t best = 0;
  std::vector<int64_t> row(static_cast<size_t>(blocks));
  for (int64_t k = std::min(updates, horizon()) - 1; k >= 0 && std::min(bound(), k) > best; --k) {
    delays(k, row);
    for (int64_t d : row) best = std::max(best, d);
  }
  return best;
}

std::unique_ptr<DelayModel> make_delay_model(const DelayContext& context) {
  return delay_entry(context.cfg.get_string("delay.name")).make(context);
}

std::unique_ptr<DelayModel> make_delay_model(const Config& cfg, int stages, int64_t updates) {
  return make_delay_model(DelayContext{cfg, stages, updates});
}

}  // namespace stale
