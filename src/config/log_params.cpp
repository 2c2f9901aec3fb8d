#include "src/config/log_params.hpp"

#include "src/config/config.hpp"

namespace stale {

namespace {
// the schema already refuses anything but these three (its choice list)
AutoChoice auto_choice(const Config& cfg, const std::string& key) {
  const std::string& v = cfg.get_string(key);
  if (v == "auto") return AutoChoice::Auto;
  if (v == "true") return AutoChoice::On;
  if (v == "false") return AutoChoice::Off;
  config_error(key, "\"" + v + "\"; choose auto, true or false");
}
}  // namespace

LogParams LogParams::from_config(const Config& cfg) {
  LogParams p;
  p.every = cfg.get_int("log.every");
  p.iterates_every = cfg.get_int("log.iterates_every");
  p.exact_mean = auto_choice(cfg, "log.exact_mean");
  p.L_estimate = auto_choice(cfg, "log.L_estimate");
  p.L_power_steps = static_cast<int>(cfg.get_int("log.L_power_steps"));
  p.divergence = cfg.get_float("log.divergence");
  p.delay_window = cfg.get_int("log.delay_window");
  p.delays = cfg.get_bool("log.delays");
  p.out = cfg.get_string("log.out");
  p.progress = cfg.get_bool("log.progress");
  p.flush_seconds = cfg.get_float("log.flush_seconds");
  return p;
}

}  // namespace stale
