#include "delays/delay_model.hpp"
#include "optimizers/method.hpp"
#include "src/config/config.hpp"

namespace stale {

std::unique_ptr<Method> make_sgd(const MethodParams& p);
std::unique_ptr<Method> make_bcd(const MethodParams& p);
std::unique_ptr<Method> make_rpd(const MethodParams& p, std::shared_ptr<const DelayModel> delays);

MethodParams MethodParams::from_config(const Config& cfg) {
  MethodParams p;
  p.lr = cfg.get_float("method.lr");
  p.updates = cfg.get_int("method.updates");
  p.seed = static_cast<uint64_t>(cfg.get_int("seed"));
  p.grad_noise_std = cfg.get_float("objective.grad_noise_std");
  p.cyclic_batches = cfg.get_string("method.batch_order") == "cyclic";
  return p;
}

std::unique_ptr<Method> make_method(const Config& cfg, const Objective& f) {
  const MethodParams p = MethodParams::from_config(cfg);
  const std::string& name = cfg.get_string("method.name");
  if (name != "rpd" && cfg.get_string("delay.name") != "zero")
    config_error("delay.name", "\"" + cfg.get_string("delay.name") + "\" is set but method.name = \"" + name +
                                   "\" reads fresh weights; delay models apply to method.name = \"rpd\"");
  if (name == "sgd") return make_sgd(p);
  if (name == "bcd") return make_bcd(p);
  if (name == "rpd") return make_rpd(p, make_delay_model(cfg, f.stages(), p.updates));
  config_error("method.name", "\"" + name + "\" is not valid; choose one of: sgd, bcd, rpd");
}

}  // namespace stale
