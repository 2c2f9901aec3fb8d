// The one list of config keys. The README's key table is generated from it
// (`stale keys --markdown`) and a test checks that the README holds every key.
// Top-level keys come first (TOML requires them before any [section]).
#include "src/config/config.hpp"

namespace stale {

namespace {
KeySpec Int(std::string k, int64_t d, std::string m, std::optional<double> lo = std::nullopt,
            std::optional<double> hi = std::nullopt) {
  return {std::move(k), KeyType::Int, d, std::move(m), {}, lo, hi};
}
KeySpec Float(std::string k, double d, std::string m, std::optional<double> lo = std::nullopt,
              bool lo_exclusive = false, std::optional<double> hi = std::nullopt) {
  KeySpec s{std::move(k), KeyType::Float, d, std::move(m), {}, lo, hi};
  s.min_exclusive = lo_exclusive;
  return s;
}
KeySpec Str(std::string k, std::string d, std::string m, std::vector<std::string> choices = {}) {
  KeySpec s{std::move(k), KeyType::String, std::move(d), std::move(m)};
  s.choices = std::move(choices);
  return s;
}
KeySpec Bool(std::string k, bool d, std::string m) { return KeySpec{std::move(k), KeyType::Bool, d, std::move(m)}; }
}  // namespace

const std::vector<KeySpec>& config_schema() {
  static const std::vector<KeySpec> schema = {
      Int("seed", 0, "base seed; every random stream (data, batches, stages, delays, noise) derives from it", 0),
      Str("backend", "auto", "where objectives evaluate: auto = cuda when compiled in and a device is present, else cpu",
          {"auto", "cpu", "cuda"}),
      Str("precision", "float64", "floating-point precision of the cuda backend (the cpu backend is always float64)",
          {"float64", "float32"}),

      Str("objective.name", "quadratic", "objective family", {"quadratic", "logistic"}),
      Str("objective.generator", "random",
          "data generator: random | nesterov | spectrum (quadratic); synthetic | libsvm (logistic)",
          {"random", "nesterov", "spectrum", "synthetic", "libsvm"}),
      Int("objective.dim", 512, "dimension d (ignored for libsvm: the file's feature count)", 1),
      Int("objective.samples", 600, "number of samples n (ignored for libsvm: the file's rows)", 1),
      Int("objective.batch_size", 10, "samples per mini-batch; the data is a fixed partition into n / batch_size batches", 1),
      Int("objective.stages", 8, "number of pipeline stages S = blocks of w (contiguous, near-equal)", 1),
      Float("objective.mu", 0.01, "nesterov: μ in the Hessian T + μI; spectrum: smallest eigenvalue", 0.0, true),
      Float("objective.L", 1.0, "spectrum: largest eigenvalue of the Hessian", 0.0, true),
      Str("objective.spectrum", "geometric", "spectrum: spacing of the d eigenvalues between mu and L",
          {"geometric", "linear"}),
      Float("objective.l2", 1e-4, "logistic: λ of the (λ/2)‖w‖² regulariser", 0.0),
      Str("objective.data", "", "libsvm: data file; a relative path is looked up in objective.data_dir"),
      Str("objective.data_dir", "",
          "directory of real data sets; empty = $STALE_DATA_DIR, else ../shared/data beside the repository, else ./data"),
      Float("objective.grad_noise_std", 0.0, "std of additive Gaussian noise on every block gradient (own seeded stream)", 0.0),

      Str("method.name", "rpd", "method: sgd (all blocks, fresh), bcd (one uniform block, fresh), rpd (one uniform block, stale reads)",
          {"sgd", "bcd", "rpd"}),
      Float("method.lr", 0.01, "step size γ", 0.0, true),
      Int("method.updates", 3200, "run length K in block updates (an sgd step counts S block updates)", 1),
      Str("method.batch_order", "uniform", "mini-batch sampler: uniform (i.i.d., RPD's rule) or cyclic (fixed order)",
          {"uniform", "cyclic"}),

      Str("delay.name", "zero", "delay model for rpd", {"zero", "constant", "uniform", "geometric", "table"}),
      Int("delay.max", 0, "delay bound δ (constant: the delay; uniform: draws from {0..min(δ,k)}; geometric: truncation)", 0),
      Float("delay.mean", 1.0, "geometric: mean of the (untruncated) geometric delay", 0.0),
      Str("delay.path", "", "table: a CSV (K rows × S columns) or a run/schedule .h5 file with /delays"),

      Int("log.every", 1, "metrics cadence in block updates", 1),
      Int("log.iterates_every", -1, "iterate snapshot cadence in block updates; -1 = every logged step when d <= 4096, else every 16th; 0 = none", -1),
      Bool("log.exact_mean", true,
           "evaluate ‖∇f(w_k)‖² at every update for the running mean the bound is checked against (false: only at logged steps)"),
      Str("log.out", "", "run file path; empty = runs/<config name>.h5 (the CLI's --out wins)"),
      Bool("log.progress", true, "progress lines on stderr"),
  };
  return schema;
}

}  // namespace stale
