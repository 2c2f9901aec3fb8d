#include "objectives/objective_factory.hpp"

#include "objectives/charlm.hpp"
#include "objectives/data/libsvm.hpp"
#include "objectives/linear_constants.hpp"
#include "objectives/linear_model_cpu.hpp"
#include "objectives/linear_model_cuda.hpp"
#include "src/core/error.hpp"

namespace stale {

std::shared_ptr<LinearData> make_linear_data(const Config& cfg) {
  const std::string& name = cfg.get_string("objective.name");
  const std::string& gen = cfg.get_string("objective.generator");
  const Index n = cfg.get_int("objective.samples"), d = cfg.get_int("objective.dim");
  const uint64_t seed = static_cast<uint64_t>(cfg.get_int("seed"));
  const bool quad_gen = gen == "random" || gen == "nesterov" || gen == "spectrum";
  if (name == "quadratic" && !quad_gen)
    config_error("objective.generator", "\"" + gen + "\" is not a quadratic generator; choose one of: random, nesterov, spectrum");
  if (name == "logistic" && quad_gen)
    config_error("objective.generator", "\"" + gen + "\" is not a logistic generator; choose one of: synthetic, libsvm");

  auto data = std::make_shared<LinearData>();
  if (gen == "libsvm") {
    const std::string path = resolve_data_file(cfg.get_string("objective.data"), cfg.get_string("objective.data_dir"));
    *data = load_libsvm(path);
  } else {
    if (gen == "random") *data = make_random_least_squares(n, d, seed);
    else if (gen == "nesterov") *data = make_nesterov_least_squares(n, d, cfg.get_float("objective.mu"), seed);
    else if (gen == "spectrum")
      *data = make_spectrum_least_squares(n, d, cfg.get_float("objective.mu"), cfg.get_float("objective.L"),
                                          cfg.get_string("objective.spectrum") == "geometric", seed);
    else *data = make_synthetic_logistic(n, d, seed);
  }
  const Index bs = cfg.get_int("objective.batch_size");
  if (bs > data->n())
    config_error("objective.batch_size", std::to_string(bs) + " exceeds the number of samples " + std::to_string(data->n()));
  partition_batches(*data, bs);
  return data;
}

std::unique_ptr<Objective> make_objective(const Config& cfg, BackendKind backend) {
  if (cfg.get_string("objective.name") == "charlm") return make_charlm(cfg, backend);  // objectives/charlm.hpp
  if (cfg.get_string("precision") == "tf32")
    config_error("precision", "\"tf32\" is the char-level GPT's tensor-core mode; linear models take float64 | float32");
  const int S = static_cast<int>(cfg.get_int("objective.stages"));
  auto data = make_linear_data(cfg);
  if (S > data->d())
    config_error("objective.stages", "S = " + std::to_string(S) + " exceeds the dimension d = " + std::to_string(data->d()) +
                                         "; every stage needs at least one coordinate");
  const bool logistic = cfg.get_string("objective.name") == "logistic";
  const double l2 = logistic ? cfg.get_float("objective.l2") : 0.0;
  std::unique_ptr<Objective> cpu;
  ObjectiveConstants constants;
  if (logistic) {
    auto f = std::make_unique<LogisticCpu>(data, S, l2);
    constants = logistic_constants(*f);
    f->set_constants(constants);
    cpu = std::move(f);
  } else {
    auto f = std::make_unique<LeastSquaresCpu>(data, S, 0.0);
    constants = least_squares_constants(*f);
    f->set_constants(constants);
    cpu = std::move(f);
  }
  if (backend == BackendKind::Cpu) return cpu;
  const Precision prec = cfg.get_string("precision") == "float32" ? Precision::Float32 : Precision::Float64;
  return make_linear_model_cuda(data, S, l2, logistic ? LinearLoss::Logistic : LinearLoss::Squared, prec, constants);
}

}  // namespace stale
