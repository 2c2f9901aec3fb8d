// The one list of config keys. The README's key table is generated from it
// (`stale keys --markdown`) and a test checks that the README holds every key.
// Top-level keys come first (TOML requires them before any [section]).
#include <algorithm>
#include <stdexcept>

#include "src/config/config.hpp"

namespace stale {

namespace keys {
KeySpec Int(std::string k, int64_t d, std::string m, std::optional<double> lo, std::optional<double> hi) {
  return {std::move(k), KeyType::Int, d, std::move(m), {}, lo, hi};
}
KeySpec Float(std::string k, double d, std::string m, std::optional<double> lo, bool lo_exclusive,
              std::optional<double> hi) {
  KeySpec s{std::move(k), KeyType::Float, d, std::move(m), {}, lo, hi};
  s.min_exclusive = lo_exclusive;
  return s;
}
KeySpec FloatBelow(std::string k, double d, std::string m, double lo, double hi) {
  KeySpec s = Float(std::move(k), d, std::move(m), lo, false, hi);
  s.max_exclusive = true;
  return s;
}
KeySpec Str(std::string k, std::string d, std::string m, std::vector<std::string> choices) {
  KeySpec s{std::move(k), KeyType::String, std::move(d), std::move(m)};
  s.choices = std::move(choices);
  return s;
}
KeySpec Component(std::string k, std::string d, std::string m) {
  KeySpec s = Str(std::move(k), std::move(d), std::move(m));
  s.registry_choices = true;
  return s;
}
KeySpec FloatList(std::string k, std::vector<double> d, std::string m, double lo) {
  KeySpec s{std::move(k), KeyType::FloatList, std::move(d), std::move(m)};
  s.min = lo;
  s.scalar_or_list = true;
  return s;
}
KeySpec IntList(std::string k, std::vector<double> d, std::string m, double lo) {
  KeySpec s{std::move(k), KeyType::IntList, std::move(d), std::move(m)};
  s.min = lo;
  return s;
}
KeySpec Bool(std::string k, bool d, std::string m) { return KeySpec{std::move(k), KeyType::Bool, d, std::move(m)}; }
}  // namespace keys

namespace {
using namespace keys;

std::vector<KeySpec>& component_keys() {
  static std::vector<KeySpec> specs;
  return specs;
}

const std::vector<KeySpec>& table();
}  // namespace

bool add_component_keys(std::vector<KeySpec> specs) {
  for (auto& s : specs) {
    for (const auto& t : table())
      if (t.key == s.key) throw std::logic_error("add_component_keys: " + s.key + " is already in schema.cpp's table");
    for (const auto& t : component_keys())
      if (t.key == s.key) throw std::logic_error("add_component_keys: " + s.key + " is declared twice");
    s.component_owned = true;
    component_keys().push_back(std::move(s));
  }
  return true;
}

// schema.cpp's table with the component keys after the last key of their section (name order,
// so that the order does not depend on which file's static initialisation ran first). Built
// again only when a component added keys since: all of them register before main, so after
// main the schema never changes and every thread only reads it.
const std::vector<KeySpec>& config_schema() {
  static std::vector<KeySpec> merged;
  static size_t merged_extra = static_cast<size_t>(-1);
  const auto& extra = component_keys();
  if (merged_extra == extra.size()) return merged;
  std::vector<KeySpec> sorted = extra;
  std::sort(sorted.begin(), sorted.end(), [](const KeySpec& a, const KeySpec& b) { return a.key < b.key; });
  auto section = [](const std::string& k) {
    const auto dot = k.find('.');
    return dot == std::string::npos ? std::string() : k.substr(0, dot);
  };
  std::vector<KeySpec> out;
  const auto& base = table();
  std::vector<bool> placed(sorted.size(), false);
  for (size_t i = 0; i < base.size(); ++i) {
    out.push_back(base[i]);
    const std::string sec = section(base[i].key);
    if (i + 1 < base.size() && section(base[i + 1].key) == sec) continue;
    for (size_t j = 0; j < sorted.size(); ++j)
      if (!placed[j] && section(sorted[j].key) == sec) out.push_back(sorted[j]), placed[j] = true;
  }
  for (size_t j = 0; j < sorted.size(); ++j)  // a section of its own goes last
    if (!placed[j]) out.push_back(sorted[j]);
  merged = std::move(out);
  merged_extra = extra.size();
  return merged;
}

// Upper bounds on integer keys: what is read as a 32-bit int (sizes, counts) stops at
// 2^31 − 1, counts of updates and cadences at 10^12, and S at 10^6, so that K·S and every
// product the runner forms stays far inside int64. Memory is the resource estimate's job
// (src/checks/resource_estimate.hpp), not these bounds.
namespace {
using namespace keys;

const std::vector<KeySpec>& table() {
  static const std::vector<KeySpec> schema = {
      Int("seed", 0, "base seed; every random stream (data, batches, stages, delays, noise) derives from it", 0),
      Str("backend", "auto", "where objectives evaluate: auto = cuda when compiled in and a device is present, else cpu",
          {"auto", "cpu", "cuda"}),
      Str("precision", "float64", "floating-point precision of the cuda backend (the cpu backend is float64, except for charlm, whose cpu twin honours it)",
          {"float64", "float32", "tf32"}),

      Component("objective.name", "quadratic",
                "objective family (`stale list` describes each; charlm, the char-level GPT of E5, reads no generator)"),
      Component("objective.generator", "random",
                "data generator of the objective family (`stale list` shows which family reads which; file: your X, y "
                "in objective.data)"),
      Int("objective.dim", 512, "dimension d (ignored for libsvm and file: the file's feature count)", 1, 2147483647.0),
      Int("objective.samples", 600, "number of samples n (ignored for libsvm and file: the file's rows; charlm: training windows of T + 1 characters)", 1, 2147483647.0),
      Int("objective.batch_size", 10, "samples per mini-batch; the data is a fixed partition into n / batch_size batches", 1, 2147483647.0),
      Int("objective.stages", 8, "number of pipeline stages S = blocks of w (contiguous, near-equal)", 1, 1e6),
      Float("objective.mu", 0.01, "nesterov: μ in the Hessian T + μI; spectrum: smallest eigenvalue", 0.0, true),
      Float("objective.L", 1.0, "spectrum: largest eigenvalue of the Hessian", 0.0, true),
      Str("objective.spectrum", "geometric", "spectrum: spacing of the d eigenvalues between mu and L",
          {"geometric", "linear"}),
      Float("objective.l2", 1e-4, "logistic: λ of the (λ/2)‖w‖² regulariser", 0.0),
      Float("objective.nonconvex_reg", 0.0,
            "quadratic, logistic: λ of the smooth nonconvex regulariser λ Σ w_i²/(1 + w_i²) (L grows by 2λ; f_* is then "
            "the certified lower bound 0 and μ is not claimed); 0 = off",
            0.0),
      Str("objective.data", "", "libsvm: data file; file: X.npz (X, y, w_true), \"X.npy,y.npy\", .h5 (/X, /y, /w_true), .csv or LIBSVM, by extension; charlm: text corpus (empty = tinyshakespeare.txt); a relative path is looked up in objective.data_dir"),
      Str("objective.storage", "auto",
          "libsvm, file (LIBSVM): how X is held: dense, or sparse (CSR, cpu only: for data whose dense X does not fit); "
          "auto = sparse when the dense X would exceed 1 GiB and CSR takes less than half of it, else dense",
          {"auto", "dense", "sparse"}),
      Str("objective.label_column", "y", "file, .csv: the column holding the labels; every other column is a feature"),
      Str("objective.data_dir", "",
          "directory of real data sets; empty = $STALE_DATA_DIR, else ../shared/data beside the repository, else ./data"),
      Float("objective.grad_noise_std", 0.0, "std of additive Gaussian noise on every block gradient (own seeded stream)", 0.0),
      Int("objective.embedding", 64, "charlm: embedding width E (channels; a multiple of objective.heads)", 1, 2147483647.0),
      Int("objective.heads", 4, "charlm: attention heads per transformer block (head size E / heads)", 1, 2147483647.0),
      Int("objective.context", 32, "charlm: context length T (characters per window; a window holds T + 1)", 1, 2147483647.0),

      Component("method.name", "rpd",
                "method: an update rule with fresh reads, over a delay model, or executed over a pipeline schedule "
                "(`stale list` gives each one's kind, rule and paper)"),
      Float("method.lr", 0.01, "step size γ (the peak rate for lr_schedule = cosine)", 0.0, true),
      Int("method.updates", 3200, "run length K in block updates (an sgd step counts S block updates)", 1, 1e12),
      Float("method.time_budget", 0.0,
            "schedule methods: run every micro-batch whose timeline fits this simulated time (0 = run K updates)", 0.0),
      Str("method.batch_order", "auto",
          "mini-batch order: uniform (i.i.d., RPD's rule), cyclic (0, 1, …, M−1, 0, …: PD's rule); auto = cyclic for "
          "schedule methods, uniform otherwise",
          {"auto", "uniform", "cyclic"}),
      Int("method.microbatches", 0, "schedule methods: micro-batches M (0 = the fewest that reach K updates)", 0, 1e12),
      Int("method.accumulation", 0,
          "micro-batches per optimizer step of a stage: PACI's a, GPipe/1F1B-flush/2BW's m (0 = the schedule's default)", 0, 2147483647.0),
      Int("method.replicas", 0, "localsgd: replicas R (0 = S)", 0, 2147483647.0),
      Int("method.local_steps", 0, "localsgd: local steps H per round (0 = 1)", 0, 2147483647.0),
      Int("method.chunks", 0, "interleaved, looped-bfs, interleaved-zb: model chunks v per device (0 = 2); zb-v and dualpipev hold 2, fixed; objective.stages counts chunks", 0, 2147483647.0),
      Component("method.optimizer", "sgd", "per-block update rule (`stale list` describes each)"),
      Float("method.momentum", 0.9, "momentum: β of the heavy-ball velocity", 0.0, false, 1.0),
      FloatBelow("method.beta1", 0.9, "adamw: β₁", 0.0, 1.0),
      FloatBelow("method.beta2", 0.999, "adamw: β₂", 0.0, 1.0),
      Float("method.eps", 1e-8, "adamw: ε", 0.0, true),
      Float("method.weight_decay", 0.0, "adamw: decoupled weight decay λ", 0.0),
      Str("method.lr_schedule", "constant", "learning-rate schedule over block updates", {"constant", "cosine"}),
      Int("method.warmup", 0, "linear learning-rate warm-up over this many block updates (PipeMare's warm-up)", 0, 1e12),
      Float("method.lr_min", 0.0, "cosine: final learning rate", 0.0),
      Bool("method.prediction", true, "pipemare: extrapolate each block by its velocity times its delay before F"),

      Component("delay.name", "zero", "delay model for rpd"),
      Int("delay.max", 0, "delay bound δ (constant: the delay; uniform: draws from {0..min(δ,k)}; geometric: truncation)", 0, 1e12),
      Float("delay.mean", 1.0, "geometric: mean of the (untruncated) geometric delay", 0.0),
      Str("delay.path", "", "table: a CSV (one row per update, one column per block; README \"Delay tables\") or a run/schedule .h5 file with /delays"),
      Bool("delay.table_repeat", false,
           "table: repeat the table's P rows periodically (update k reads row k mod P, capped at k); false = the table "
           "needs a row for every update"),
      Component("delay.schedule", "pipedream",
                "schedule: the pipeline schedule whose exact delay table RPD replays (simulated with method.* and "
                "[costs])"),
      Bool("delay.follow_order", false,
           "schedule: also take the schedule's stage order and batch order instead of uniform draws"),

      FloatList("costs.forward", {1.0}, "simulated duration t_F of a forward op (one value, or one per stage)", 0.0),
      FloatList("costs.backward", {1.0}, "simulated duration t_B of a backward op (one value, or one per stage)", 0.0),
      FloatList("costs.weight", {0.0},
                "simulated duration t_W of a weight-gradient op (zb-h1; other schedules fold it into B)", 0.0),
      Float("costs.latency", 0.0, "communication latency added to every cross-stage dependency", 0.0),
      Float("costs.jitter", 0.0, "σ of lognormal (mean-1) noise on every op's duration", 0.0),
      Float("costs.straggler_prob", 0.0, "probability that an op straggles", 0.0, false, 1.0),
      Float("costs.straggler_slowdown", 1.0, "duration factor of a straggling op", 1.0),
      Float("costs.pareto_alpha", 0.0,
            "heavy-tailed stragglers: a straggling op is slowed by a Pareto(α) factor (scale 1, P(> x) = x^-α) instead of straggler_slowdown; infinite variance for α <= 2; 0 = off",
            0.0),
      Str("costs.coupling", "none",
          "op durations that depend on the run's state, timed as the run goes (schedule methods): data = the mini-batch's work per sample, gradient = the block's latest gradient norm, weight = the block's RMS weight (src/pipeline/state_costs.hpp)",
          {"none", "data", "gradient", "weight"}),
      Float("costs.coupling_scale", 1.0,
            "exponent β of the coupling factor: (c_m/mean c)^β, (‖g_j‖/‖g_j‖ at its first gradient)^β, (1 + RMS w_j)^β", 0.0),
      Int("costs.seed", -1, "seed of the stage-time noise (-1 = the base seed)", -1),

      Int("log.every", 1, "metrics cadence in block updates (a multiple of a schedule's update cycle logs one block's updates only: the run warns and names a cadence that spreads them)", 1, 1e12),
      Int("log.iterates_every", -1, "iterate snapshot cadence in block updates; -1 = every logged step when d <= 4096, else every 16th; 0 = none", -1, 1e12),
      Str("log.exact_mean", "auto",
          "running mean of ‖∇f(w_k)‖² for the bound: true = exact at every update, false = sampled at logged steps; "
          "auto = true where a tracker makes it cheap (the linear models), false otherwise (charlm: exact costs a "
          "full-data gradient per update, 13× the run)",
          {"auto", "true", "false"}),
      Str("log.L_estimate", "auto",
          "estimate the smoothness constant L along the run (src/theory/smoothness_estimator.hpp): the largest "
          "‖∇f(x) − ∇f(y)‖/‖x − y‖ over consecutive logged iterates, from the gradients the log already computes "
          "(O(d) per logged row). It is a LOWER estimate of L; the bound uses it only where the objective has no certified "
          "L, and is then labelled an estimate (/theory/L_source, the summary line, the index column L_estimated). "
          "auto = where the objective has no certified L (charlm); true = also beside a certified L (a check); false = never "
          "(charlm then has no bound). The secant sees only the curvature along the path between logged rows and can lie "
          "far below the curvature at them: see log.L_power_steps",
          {"auto", "true", "false"}),
      Int("log.L_power_steps", 0,
          "with log.L_estimate: power-iteration steps per logged row on central-difference Hessian-vector products at "
          "the logged iterate, warm-started from the previous row; L̂ is then the larger of the two. Each step costs two "
          "full-data gradients (results/PERFORMANCE.md, \"Smoothness estimate\"); 0 = the secant alone",
          0, 1000),
      Float("log.divergence", 1e6,
            "a run is diverged (status \"diverged\", it stops) when f − f_* (the loss when f_* is unknown) exceeds this "
            "multiple of its start value, or is not finite; 0 = only when not finite",
            0.0),
      Int("log.delay_window", 0, "updates per window of /delay_moments (mean, second moment and max of the delays per block; schedule methods); 0 = K/50", 0, 1e12),
      Bool("log.delays", true, "write the K × S delay table /delays while K·S ≤ 10^7 (the per-block summary is always written)"),
      Str("log.out", "", "run file path; empty = runs/<config name>[_<key=value>…].h5, named by the command line's overrides (the CLI's --out wins)"),
      Bool("log.progress", true, "progress lines on stderr"),
      Float("log.flush_seconds", 5.0,
            "seconds between writes of the run file's buffered series and of a checkpoint into the .partial (what a "
            "killed run loses at most; stale run --resume continues from it); the .partial appears at the first of them (a "
            "shorter run is written once); a checkpoint that took t seconds puts the next at least 20 t later (at "
            "most 5 % of the run: a large model's state is gigabytes); 0 = at every update",
            0.0, false, 1e9),
  };
  return schema;
}
}  // namespace

}  // namespace stale
