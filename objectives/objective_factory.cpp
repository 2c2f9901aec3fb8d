#include "objectives/objective_factory.hpp"

#include <algorithm>
#include <filesystem>

#include "objectives/data/data_file.hpp"
#include "objectives/objective_registry.hpp"
#include "objectives/data/libsvm.hpp"
#include "objectives/linear/linear_constants.hpp"
#include "objectives/linear/linear_constants_sparse.hpp"
#include "objectives/linear/linear_export.hpp"
#include "objectives/linear/linear_model_cpu.hpp"
#include "objectives/linear/linear_model_cpu_sparse.hpp"
#include "objectives/linear/linear_model_cuda.hpp"
#include "src/core/error.hpp"

namespace stale {

std::shared_ptr<LinearData> make_linear_data(const Config& cfg) {
  const std::string& name = cfg.get_string("objective.name");
  const std::string& gen = cfg.get_string("objective.generator");
  const Index n = cfg.get_int("objective.samples"), d = cfg.get_int("objective.dim");
  const uint64_t seed = static_cast<uint64_t>(cfg.get_int("seed"));
  const ObjectiveEntry& entry = objective_entry(name);
  if (std::none_of(entry.generators.begin(), entry.generators.end(), [&](const GeneratorSpec& g) { return g.name == gen; })) {
    std::string valid;
    for (const auto& g : entry.generators) valid += (valid.empty() ? "" : ", ") + g.name;
    config_error("objective.generator", "\"" + gen + "\" is not a " + name + " generator; choose one of: " + valid);
  }

  auto data = std::make_shared<LinearData>();
  const std::string& storage = cfg.get_string("objective.storage");  // read by libsvm and file only
  if (gen == "libsvm") {
    const std::string path = resolve_data_file(cfg.get_string("objective.data"), cfg.get_string("objective.data_dir"));
    *data = load_libsvm(path, 0, true, parse_data_storage(storage));
    data->source_path = std::filesystem::absolute(path).lexically_normal().string();
  } else if (gen == "file" && storage != "dense") {  // CSR is a LIBSVM file's (the other formats are dense arrays)
    const std::string& spec = cfg.get_string("objective.data");
    const std::string format = data_file_format(spec);
    if (format != "libsvm" && storage == "sparse")
      config_error("objective.storage", "\"sparse\" is for LIBSVM files; objective.data = \"" + spec + "\" is " + format +
                                            ", read dense (choose auto or dense)");
    if (format == "libsvm") {
      const std::string path = resolve_data_file(spec, cfg.get_string("objective.data_dir"));
      *data = load_libsvm(path, 0, name == "logistic", parse_data_storage(storage));
      data->source_path = std::filesystem::absolute(path).lexically_normal().string();
    } else {
      *data = load_linear_data_file(spec, cfg.get_string("objective.data_dir"), cfg.get_string("objective.label_column"),
                                    name == "logistic");
    }
  } else if (gen == "file") {  // the user's own X, y: .npz, .npy pair, HDF5, CSV or LIBSVM
    *data = load_linear_data_file(cfg.get_string("objective.data"), cfg.get_string("objective.data_dir"),
                                  cfg.get_string("objective.label_column"), name == "logistic");
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

namespace {
void check_linear_precision(const Config& cfg) {
  if (cfg.get_string("precision") == "tf32")
    config_error("precision", "\"tf32\" is the char-level GPT's tensor-core mode; linear models take float64 | float32");
}
}  // namespace

std::unique_ptr<Objective> make_linear_objective_on(const Config& cfg, std::shared_ptr<LinearData> data,
                                                    BackendKind backend) {
  check_linear_precision(cfg);
  const int S = static_cast<int>(cfg.get_int("objective.stages"));
  if (S > data->d())
    config_error("objective.stages", "S = " + std::to_string(S) + " exceeds the dimension d = " + std::to_string(data->d()) +
                                         "; every stage needs at least one coordinate");
  const bool logistic = cfg.get_string("objective.name") == "logistic";
  const double l2 = logistic ? cfg.get_float("objective.l2") : 0.0;
  // the convex part's constants are computed first (the solvers minimise convex_value), then
  // set_constants turns them into f's own (objectives/linear/nonconvex_regularizer.hpp)
  const NonconvexRegularizer reg{cfg.get_float("objective.nonconvex_reg")};
  if (data->sparse()) {
    // the CSR twin runs on the cpu only; backend = auto takes it there, an explicit cuda is refused
    if (backend == BackendKind::Cuda && cfg.get_string("backend") == "cuda")
      config_error("backend", "\"cuda\" holds the data dense; data stored sparse (objective.storage) run on backend = \"cpu\"");
    std::unique_ptr<Objective> f;
    if (logistic) {
      auto lg = std::make_unique<LogisticCpuSparse>(data, S, l2, reg);
      lg->set_constants(logistic_constants(*lg));
      f = std::move(lg);
    } else {
      auto ls = std::make_unique<LeastSquaresCpuSparse>(data, S, 0.0, reg);
      ls->set_constants(least_squares_constants(*ls));
      f = std::move(ls);
    }
    f->set_data_file(data->source_path);
    return f;
  }
  std::unique_ptr<Objective> cpu;
  ObjectiveConstants constants;
  if (logistic) {
    auto f = std::make_unique<LogisticCpu>(data, S, l2, reg);
    f->set_constants(logistic_constants(*f));
    constants = f->constants();
    cpu = std::move(f);
  } else {
    auto f = std::make_unique<LeastSquaresCpu>(data, S, 0.0, reg);
    f->set_constants(least_squares_constants(*f));
    constants = f->constants();
    cpu = std::move(f);
  }
  cpu->set_data_file(data->source_path);
  if (backend == BackendKind::Cpu) return cpu;
  const Precision prec = cfg.get_string("precision") == "float32" ? Precision::Float32 : Precision::Float64;
  auto gpu =
      make_linear_model_cuda(data, S, l2, reg, logistic ? LinearLoss::Logistic : LinearLoss::Squared, prec, constants);
  gpu->set_data_file(data->source_path);
  return gpu;
}

namespace {

std::vector<std::string> generator_names() {
  std::vector<std::string> out;
  for (const auto& e : ObjectiveRegistry::entries())
    for (const auto& g : e.generators)
      if (std::find(out.begin(), out.end(), g.name) == out.end()) out.push_back(g.name);
  return out;
}
const bool name_choices = set_choice_source("objective.name", [] { return ObjectiveRegistry::names(); });
const bool generator_choices = set_choice_source("objective.generator", generator_names);

// least squares or logistic regression over generated or loaded data (the linear models)
std::unique_ptr<Objective> make_linear_objective(const Config& cfg, BackendKind backend) {
  check_linear_precision(cfg);  // before the data: a tf32 config is refused for what it asks, not its generator
  return make_linear_objective_on(cfg, make_linear_data(cfg), backend);
}

// the linear models' memory before they are built: the data and the d × d matrices their
// constants come from
ObjectiveFootprint linear_footprint(const Config& cfg, const FootprintContext&) {
  ObjectiveFootprint fp;
  fp.parameter_keys = "objective.dim";
  const std::string gen = cfg.get_string("objective.generator");
  if (gen == "libsvm") return fp;  // the file's feature count: load_libsvm sizes X before allocating it
  const double n = static_cast<double>(cfg.get_int("objective.samples"));
  const double d = static_cast<double>(cfg.get_int("objective.dim"));
  fp.parameters = d;
  // the random generator orthogonalises an n × d matrix (Householder QR, Q formed): ~3 copies
  const double copies = gen == "random" ? 3.0 : 1.0;
  fp.memory.push_back({"data X", "objective.samples × objective.dim = " + format_count(n) + " × " + format_count(d),
                       copies * n * d * 8.0});
  // L, μ from the d × d Gram/Hessian, f_* by LDLT (quadratic) or damped Newton (logistic);
  // nesterov and spectrum build the Hessian itself as well
  const double dd = (cfg.get_string("objective.name") == "logistic" ? 3.0 : 2.0) +
                    (gen == "nesterov" || gen == "spectrum" ? 1.0 : 0.0);
  fp.memory.push_back({"d × d Hessian", "objective.dim × objective.dim = " + format_count(d) + " × " + format_count(d),
                       dd * d * d * 8.0});
  return fp;
}

const bool quadratic = ObjectiveRegistry::add(
    {"quadratic", "least squares (1/2n)||Xw - y||^2 with exact L, mu, f_* and w_*; nonconvex with objective.nonconvex_reg (f_* a lower bound)", 0,
     {"objective.generator", "objective.nonconvex_reg"},
     {{"random", {"objective.dim", "objective.samples"}},
      {"nesterov", {"objective.dim", "objective.samples", "objective.mu"}},
      {"spectrum", {"objective.dim", "objective.samples", "objective.mu", "objective.L", "objective.spectrum"}},
      {"file", {"objective.data", "objective.data_dir", "objective.label_column", "objective.storage"}}},
     make_linear_objective, linear_footprint, /*shared_across_runs=*/true, /*ensembles_on_cpu=*/true,
     /*fixed_hessian=*/true, /*generates_text=*/false, ArrayData::Targets, linear_objective_export});
const bool logistic = ObjectiveRegistry::add(
    {"logistic", "L2-regularised logistic regression; L an upper bound, f_* by Newton; nonconvex with objective.nonconvex_reg", 1,
     {"objective.generator", "objective.l2", "objective.nonconvex_reg"},
     {{"synthetic", {"objective.dim", "objective.samples"}},
      {"libsvm", {"objective.data", "objective.data_dir", "objective.storage"}},
      {"file", {"objective.data", "objective.data_dir", "objective.label_column", "objective.storage"}}},
     make_linear_objective, linear_footprint, /*shared_across_runs=*/true, /*ensembles_on_cpu=*/true,
     /*fixed_hessian=*/false, /*generates_text=*/false, ArrayData::Labels, linear_objective_export});

}  // namespace

const ObjectiveEntry& objective_entry(const std::string& name) {
  if (const ObjectiveEntry* e = ObjectiveRegistry::find(name)) return *e;
  config_error("objective.name", "\"" + name + "\" is not valid; choose one of: " + ObjectiveRegistry::names_text());
}

// the entries with a trait, as text: "a or b", "a, b or c"
static std::string objectives_where(bool (*has)(const ObjectiveEntry&)) {
  std::vector<std::string> names;
  for (const ObjectiveEntry& e : ObjectiveRegistry::entries())
    if (has(e)) names.push_back(e.name);
  std::string text;
  for (size_t i = 0; i < names.size(); ++i)
    text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return text;
}

std::string objectives_taking_arrays() {
  return objectives_where([](const ObjectiveEntry& e) { return e.array_data != ArrayData::None; });
}

std::string objectives_exporting_arrays() {
  return objectives_where([](const ObjectiveEntry& e) { return static_cast<bool>(e.export_arrays); });
}

std::unique_ptr<Objective> make_objective(const Config& cfg, BackendKind backend) {
  return objective_entry(cfg.get_string("objective.name")).make(cfg, backend);
}

std::unique_ptr<Objective> make_objective(const Config& cfg) {
  return make_objective(cfg, resolve_backend(cfg.get_string("backend")));
}

std::string objective_description(const Objective& f, const Config& cfg) {
  return f.description().empty() ? cfg.get_string("objective.generator") : f.description();
}

}  // namespace stale
