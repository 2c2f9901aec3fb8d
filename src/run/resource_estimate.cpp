#include "src/run/resource_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "src/core/error.hpp"
#include "src/core/memory.hpp"

namespace stale {

namespace {

constexpr double kDouble = 8.0;
// a schedule op (8 bytes) plus what the simulator records for it (start, end, the reads it
// resolves): a deliberate over-count, so that a schedule of 10^9 ops is refused up front
constexpr double kBytesPerOp = 48.0;
constexpr double kMetricSeries = 24.0;       // /metrics/* columns, 8 bytes each per row
constexpr double kMaxDelayEntries = 1e7;     // RunLog::kMaxDelayEntries

bool is_schedule_method(const std::string& m) { return m != "sgd" && m != "bcd" && m != "rpd"; }

std::string num(double x) {
  char buf[64];
  if (x == std::floor(x) && std::abs(x) < 1e15) std::snprintf(buf, sizeof buf, "%.0f", x);
  else std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

// the memory a run needs for the largest items, for messages: "a (keys): 1.2 GiB"
std::string describe(const std::vector<ResourceItem>& items, double total) {
  std::vector<ResourceItem> sorted = items;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  std::string out;
  int shown = 0;
  for (const auto& it : sorted) {
    if (shown == 3 || (shown > 0 && it.bytes < 0.1 * total)) break;
    out += (shown ? "; " : "") + it.what + " (" + it.keys + "): " + format_bytes(it.bytes);
    ++shown;
  }
  return out;
}

std::string key_names(const std::vector<ResourceItem>& items) {
  // the keys of the largest item, for the advice: "reduce objective.samples or objective.dim"
  const auto it = std::max_element(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  std::string keys = it->keys.substr(0, it->keys.find(" = "));
  for (size_t p = keys.find(" / "); p != std::string::npos; p = keys.find(" / ")) keys.replace(p, 3, " × ");
  std::string out;
  size_t pos = 0;
  while (pos < keys.size()) {
    const size_t next = keys.find(" × ", pos);
    std::string k = keys.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    if (const auto sq = k.find("²"); sq != std::string::npos) k.erase(sq);
    if (k.find('.') != std::string::npos && out.find(k) == std::string::npos) out += (out.empty() ? "" : " or ") + k;
    if (next == std::string::npos) break;
    pos = next + std::string(" × ").size();
  }
  return out;
}

}  // namespace

double ResourceEstimate::memory_bytes() const {
  double s = 0;
  for (const auto& i : memory) s += i.bytes;
  return s;
}
double ResourceEstimate::disk_bytes() const {
  double s = 0;
  for (const auto& i : disk) s += i.bytes;
  return s;
}

ResourceEstimate estimate_resources(const Config& cfg) {
  ResourceEstimate e;
  // everything in double: products of keys up to 2^31 overflow no integer here
  const std::string name = cfg.get_string("objective.name");
  const std::string gen = cfg.get_string("objective.generator");
  const std::string method = cfg.get_string("method.name");
  const double K = static_cast<double>(cfg.get_int("method.updates"));
  const double S = static_cast<double>(cfg.get_int("objective.stages"));
  const double n = static_cast<double>(cfg.get_int("objective.samples"));
  const double B = static_cast<double>(cfg.get_int("objective.batch_size"));
  const bool schedule_method = is_schedule_method(method);
  const bool f32 = cfg.get_string("precision") == "float32";
  const double elem = name == "charlm" && f32 ? 4.0 : kDouble;

  double d = 0;
  std::string d_keys = "objective.dim";
  if (name == "charlm") {
    // parameters of the char-level GPT with a byte vocabulary (V ≤ 256): embeddings V·E + T·E,
    // S − 2 blocks of 12E² + 13E, final layer norm 2E and the LM head V·E
    const double E = static_cast<double>(cfg.get_int("objective.embedding"));
    const double T = static_cast<double>(cfg.get_int("objective.context"));
    const double NH = static_cast<double>(cfg.get_int("objective.heads"));
    const double V = 256;
    const double layers = std::max(1.0, S - 2);
    d = V * E + T * E + layers * (12 * E * E + 13 * E) + 2 * E + V * E;
    d_keys = "objective.embedding² × objective.stages";
    e.memory.push_back({"charlm parameters", "objective.embedding × objective.stages = " + num(E) + " × " + num(S),
                        d * elem * 4});  // w, gradient, two work copies
    const double per_block = B * T * (20 * E + 2 * NH * T) + B * T * V * 3;
    const double in_flight = schedule_method ? S : 1;
    e.memory.push_back({"charlm activations",
                        "objective.batch_size × objective.context × objective.embedding = " + num(B) + " × " + num(T) +
                            " × " + num(E),
                        per_block * layers * elem * in_flight});
    // training-window starts (8 bytes each)
    e.memory.push_back({"charlm training windows", "objective.samples = " + num(n), n * kDouble});
  } else if (gen == "libsvm") {
    d = 0;  // the file's feature count: load_libsvm sizes X before allocating it
  } else {
    d = static_cast<double>(cfg.get_int("objective.dim"));
    // the random generator orthogonalises an n × d matrix (Householder QR, Q formed): ~3 copies
    const double copies = gen == "random" ? 3.0 : 1.0;
    e.memory.push_back({"data X", "objective.samples × objective.dim = " + num(n) + " × " + num(d),
                        copies * n * d * kDouble});
    // L, μ from the d × d Gram/Hessian, f_* by LDLT (quadratic) or damped Newton (logistic);
    // nesterov and spectrum build the Hessian itself as well
    const double dd = (name == "logistic" ? 3.0 : 2.0) + (gen == "nesterov" || gen == "spectrum" ? 1.0 : 0.0);
    e.memory.push_back({"d × d Hessian", "objective.dim × objective.dim = " + num(d) + " × " + num(d), dd * d * d * kDouble});
  }

  if (d > 0) {
    const std::string& opt = cfg.get_string("method.optimizer");
    const double state = opt == "adamw" ? 2.0 : opt == "momentum" ? 1.0 : 0.0;
    if (method == "rpd") {
      const std::string& delay = cfg.get_string("delay.name");
      if (delay == "constant" || delay == "uniform" || delay == "geometric") {
        const double delta = static_cast<double>(cfg.get_int("delay.max"));
        e.memory.push_back({"version store", "delay.max × " + d_keys + " = " + num(delta) + " × " + num(d),
                            (delta + 1) * d * elem});
      } else if (delay == "schedule") {
        e.memory.push_back({"version store", "objective.stages × " + d_keys + " = " + num(S) + " × " + num(d),
                            (S * S + 1) * d / std::max(1.0, S) * elem});
      }
    }
    if (schedule_method) {
      e.memory.push_back({"stashed weight versions", "objective.stages × " + d_keys + " = " + num(S) + " × " + num(d),
                          (S + 1 + state) * d * elem});
    }
    if (method == "localsgd") {
      double R = static_cast<double>(cfg.get_int("method.replicas"));
      if (R == 0) R = S;
      e.memory.push_back({"model replicas", "method.replicas × " + d_keys + " = " + num(R) + " × " + num(d),
                          R * (2 + state) * d * elem});
    }
  }

  // the schedule as data: ~3 ops (F, B, W) per stage per micro-batch; K updates need about
  // K / S micro-batches of S stages each when M is left to the executor
  const bool simulates = schedule_method || (method == "rpd" && cfg.get_string("delay.name") == "schedule");
  if (simulates) {
    const double M = static_cast<double>(cfg.get_int("method.microbatches"));
    double chunks = static_cast<double>(cfg.get_int("method.chunks"));
    if (chunks == 0) chunks = 1;
    const double budget = cfg.get_float("method.time_budget");
    if (budget > 0) {
      // a time budget runs every micro-batch that fits: each stage spends at least t_F + t_B
      // per micro-batch, so M ≤ budget / min(t_F + t_B); the search builds up to twice that
      const auto fw = cfg.get_floats("costs.forward"), bw = cfg.get_floats("costs.backward");
      const double per_mb = *std::min_element(fw.begin(), fw.end()) + *std::min_element(bw.begin(), bw.end());
      if (!(per_mb > 0))
        throw UserError("config: method.time_budget = " + num(budget) +
                        " with zero-duration ops (costs.forward + costs.backward = 0 on a stage) never runs out; "
                        "give positive costs or use method.updates");
      const double M_budget = budget / per_mb;
      e.memory.push_back({"simulated schedule",
                          "method.time_budget / (costs.forward + costs.backward) = " + num(budget) + " / " + num(per_mb),
                          2 * 3 * M_budget * S * chunks * kBytesPerOp});
    } else {
      const double ops = M > 0 ? 3 * M * S * chunks : 3 * K;
      e.memory.push_back({"simulated schedule",
                          M > 0 ? "method.microbatches × objective.stages = " + num(M) + " × " + num(S)
                                : "method.updates = " + num(K),
                          ops * kBytesPerOp});
    }
  }
  const bool stale_reads = method != "sgd" && method != "bcd";
  if (stale_reads && cfg.get_bool("log.delays"))
    e.memory.push_back({"delay table", "method.updates × objective.stages = " + num(K) + " × " + num(S),
                        std::min(K * S, kMaxDelayEntries) * kDouble});

  // the run file
  const double every = static_cast<double>(cfg.get_int("log.every"));
  e.disk.push_back({"metrics", "method.updates / log.every = " + num(K) + " / " + num(every),
                    (std::floor(K / every) + 2) * kMetricSeries * kDouble});
  const int64_t ie = cfg.get_int("log.iterates_every");
  if (d > 0 && ie != 0) {
    const double cadence = ie > 0 ? static_cast<double>(ie) : (d <= 4096 ? every : 16 * every);
    e.disk.push_back({"iterates", "method.updates / log.iterates_every × " + d_keys + " = " + num(K) + " / " +
                                      num(cadence) + " × " + num(d),
                      (std::floor(K / cadence) + 2) * d * kDouble});
  }
  if (stale_reads && cfg.get_bool("log.delays"))
    e.disk.push_back({"delay table", "method.updates × objective.stages = " + num(K) + " × " + num(S),
                      std::min(K * S, kMaxDelayEntries) * kDouble});
  return e;
}

void check_resources(const Config& cfg, const std::string& run_path) {
  const ResourceEstimate e = estimate_resources(cfg);
  const double mem = e.memory_bytes();
  const double budget = memory_budget_bytes();
  if (!e.memory.empty() && !(mem <= budget))
    throw UserError("config: this run needs about " + format_bytes(mem) + " of memory but " + memory_budget_source() +
                    ": " + describe(e.memory, mem) + "; reduce " + key_names(e.memory));

  namespace fs = std::filesystem;
  std::string path = run_path;
  if (path.empty()) path = cfg.get_string("log.out").empty() ? "runs/run.h5" : cfg.get_string("log.out");
  // the nearest folder that exists: the run's folder may be created later
  fs::path dir = fs::absolute(fs::path(path)).parent_path();
  std::error_code ec;
  while (!dir.empty() && !fs::exists(dir, ec) && dir != dir.root_path()) dir = dir.parent_path();
  const auto space = fs::space(dir, ec);
  const double disk = e.disk_bytes();
  // a streamed run finishes by writing a compact copy of its .partial beside it (RunFile::
  // end_streaming): for that moment the disk holds the run file twice
  if (!ec && !e.disk.empty() && 2 * disk > static_cast<double>(space.available))
    throw UserError("config: the run file would take about " + format_bytes(disk) + " and finishing it a copy as large (" +
                    format_bytes(2 * disk) + " in all) but " + dir.string() + " has " +
                    format_bytes(static_cast<double>(space.available)) + " free: " + describe(e.disk, disk) +
                    "; reduce " + key_names(e.disk) + " (or raise the cadence: log.every, log.iterates_every)");
}

}  // namespace stale
