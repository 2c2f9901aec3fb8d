#include "delays/delay_model.hpp"
#include "src/config/config.hpp"
#include "src/core/error.hpp"

namespace stale {

std::unique_ptr<DelayModel> make_delay_model(const Config& cfg, int stages, int64_t updates) {
  const std::string& name = cfg.get_string("delay.name");
  const int64_t delta = cfg.get_int("delay.max");
  const uint64_t seed = static_cast<uint64_t>(cfg.get_int("seed"));
  if (name == "zero") return make_zero_delay();
  if (name == "constant") return make_constant_delay(delta);
  if (name == "uniform") return make_uniform_delay(delta, seed);
  if (name == "geometric") {
    if (cfg.get_float("delay.mean") > 0 && delta == 0)
      config_error("delay.max", "the geometric model needs a truncation bound delay.max >= 1");
    return make_geometric_delay(cfg.get_float("delay.mean"), delta, seed);
  }
  if (name == "table") {
    std::string path = cfg.get_string("delay.path");
    auto model = make_table_delay(path, stages);
    if (model->horizon() < updates)
      config_error("method.updates", std::to_string(updates) + " updates but the delay table " + path + " has only " +
                                         std::to_string(model->horizon()) + " rows");
    return model;
  }
  config_error("delay.name", "\"" + name + "\" is not valid; choose one of: zero, constant, uniform, geometric, table");
}

}  // namespace stale
