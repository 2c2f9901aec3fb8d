#include "src/run/sweep.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <toml++/toml.h>

#include "src/core/error.hpp"
#include "src/io/h5.hpp"

namespace stale {

namespace fs = std::filesystem;

namespace {

// TOML text of a scalar node, usable as the value of a key=value override
std::string scalar_text(const toml::node& n, const std::string& where) {
  if (auto s = n.as_string()) {
    std::string out = "\"";
    for (char c : s->get()) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + "\"";
  }
  if (auto b = n.as_boolean()) return b->get() ? "true" : "false";
  if (auto i = n.as_integer()) return std::to_string(i->get());
  if (auto f = n.as_floating_point()) {
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, f->get());  // shortest round-trip text
    std::string t(buf, res.ptr);
    if (t.find_first_of(".eEn") == std::string::npos) t += ".0";  // keep it a float
    return t;
  }
  if (auto a = n.as_array()) {
    std::string out = "[";
    for (size_t i = 0; i < a->size(); ++i) out += (i ? ", " : "") + scalar_text(*a->get(i), where);
    return out + "]";
  }
  throw UserError(where + ": expected a value (number, string, bool or array)");
}

void flatten(const toml::table& t, const std::string& prefix, std::vector<std::pair<std::string, const toml::node*>>& out) {
  for (const auto& [k, v] : t) {
    const std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (auto sub = v.as_table()) flatten(*sub, key, out);
    else out.emplace_back(key, &v);
  }
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace

std::string config_hash(const Config& cfg) {
  // The keys whose values differ from the schema's defaults, in schema order: a run keeps its
  // name when a later version adds a key (with a default that changes nothing), and where a
  // run is written or whether it prints progress does not change what it computes.
  std::string text;
  for (const auto& spec : config_schema()) {
    if (spec.key == "log.out" || spec.key == "log.progress") continue;
    const std::string v = cfg.value_text(spec.key);
    if (v != value_to_string(spec.fallback)) text += spec.key + "=" + v + "\n";
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a(text)));
  return buf;
}

Sweep load_sweep(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError(path + ": cannot open sweep file");
  toml::table tbl;
  try {
    tbl = toml::parse(in, path);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << path << ":" << e.source().begin.line << ": TOML syntax error: " << e.description();
    throw UserError(os.str());
  }
  Sweep sw;
  sw.path = path;
  for (const auto& [k, v] : tbl) {
    const std::string key(k.str());
    if (key != "base" && key != "grid" && key != "zip" && key != "set" && key != "epsilon")
      throw UserError(path + ": unknown sweep key '" + key + "'; valid: base, epsilon, [set], [grid], [zip]");
  }
  auto base = tbl["base"].value<std::string>();
  if (!base) throw UserError(path + ": 'base' (the config the sweep varies) is missing");
  fs::path bp(*base);
  if (bp.is_relative()) bp = fs::path(path).parent_path() / bp;
  sw.base = bp.lexically_normal().string();
  if (auto eps = tbl["epsilon"].value<double>()) sw.epsilon = *eps;
  const Config base_cfg = Config::from_file(sw.base);

  auto section = [&](const char* name) {
    std::vector<std::pair<std::string, const toml::node*>> out;
    if (auto t = tbl[name].as_table()) flatten(*t, "", out);
    else if (tbl.contains(name)) throw UserError(path + ": [" + std::string(name) + "] must be a table");
    return out;
  };
  const auto set = section("set");
  const auto grid = section("grid");
  const auto zip = section("zip");

  std::vector<std::vector<std::string>> grid_values;
  for (const auto& [key, node] : grid) {
    if (!find_key(key)) throw UserError(path + ": [grid] key '" + key + "' is not a config key (see `stale keys`)");
    auto arr = node->as_array();
    if (!arr || arr->empty()) throw UserError(path + ": [grid] " + key + " must be a non-empty array");
    std::vector<std::string> vals;
    for (const auto& el : *arr) vals.push_back(scalar_text(el, path + ": [grid] " + key));
    grid_values.push_back(vals);
    sw.axes.push_back(key);
  }
  size_t zip_len = 0;
  std::vector<std::vector<std::string>> zip_values;
  for (const auto& [key, node] : zip) {
    if (!find_key(key)) throw UserError(path + ": [zip] key '" + key + "' is not a config key (see `stale keys`)");
    auto arr = node->as_array();
    if (!arr || arr->empty()) throw UserError(path + ": [zip] " + key + " must be a non-empty array");
    if (zip_len && arr->size() != zip_len)
      throw UserError(path + ": [zip] lists must have equal lengths (" + key + " has " + std::to_string(arr->size()) +
                      ", expected " + std::to_string(zip_len) + ")");
    zip_len = arr->size();
    std::vector<std::string> vals;
    for (const auto& el : *arr) vals.push_back(scalar_text(el, path + ": [zip] " + key));
    zip_values.push_back(vals);
    sw.axes.push_back(key);
  }
  for (const auto& a : sw.axes)
    if (std::count(sw.axes.begin(), sw.axes.end(), a) > 1) throw UserError(path + ": key '" + a + "' appears twice");

  Config fixed = base_cfg;
  for (const auto& [key, node] : set) fixed.apply_override(key + "=" + scalar_text(*node, path + ": [set] " + key));

  // odometer over the grid (last key fastest), then the zip index
  std::vector<size_t> idx(grid_values.size(), 0);
  const size_t zn = zip_values.empty() ? 1 : zip_len;
  int64_t position = 0;
  while (true) {
    for (size_t z = 0; z < zn; ++z) {
      SweepRun r;
      r.position = position++;
      r.config = fixed;
      for (size_t g = 0; g < grid_values.size(); ++g) r.values.emplace_back(sw.axes[g], grid_values[g][idx[g]]);
      for (size_t q = 0; q < zip_values.size(); ++q) r.values.emplace_back(sw.axes[grid_values.size() + q], zip_values[q][z]);
      for (const auto& [k, v] : r.values) {
        try {
          r.config.apply_override(k + "=" + v);
        } catch (const UserError& e) {
          throw UserError(path + ": " + e.what());
        }
      }
      r.hash = config_hash(r.config);
      sw.runs.push_back(std::move(r));
    }
    // advance the odometer; false once every combination was emitted
    bool advanced = false;
    for (size_t g = grid_values.size(); g-- > 0;) {
      if (++idx[g] < grid_values[g].size()) {
        advanced = true;
        break;
      }
      idx[g] = 0;
    }
    if (!advanced) break;
  }
  return sw;
}

void parse_shard(const std::string& text, int& index, int& count) {
  const auto slash = text.find('/');
  try {
    if (slash == std::string::npos) throw std::invalid_argument("");
    index = std::stoi(text.substr(0, slash));
    count = std::stoi(text.substr(slash + 1));
  } catch (const std::exception&) {
    throw UserError("--shard " + text + ": expected i/N with 0 <= i < N, e.g. --shard 3/16");
  }
  if (count < 1 || index < 0 || index >= count)
    throw UserError("--shard " + text + ": expected i/N with 0 <= i < N, e.g. --shard 3/16");
}

namespace {

std::string self_exe() {
  std::error_code ec;
  const auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("stale") : p.string();
}

// the temporary name carries the pid: shards of one sweep may write the index at once
void write_atomic(const fs::path& p, const std::string& text) {
  const auto tmp = p.string() + ".partial." + std::to_string(getpid());
  {
    std::ofstream out(tmp);
    if (!out) throw UserError(p.string() + ": cannot write");
    out << text;
  }
  fs::rename(tmp, p);
}

pid_t spawn_run(const std::string& exe, const fs::path& cfg, const fs::path& out, const fs::path& log, int threads) {
  const pid_t pid = fork();
  if (pid < 0) throw UserError("sweep: fork failed");
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      close(fd);
    }
    const std::string t = std::to_string(threads);
    setenv("OMP_NUM_THREADS", t.c_str(), 1);
    execl(exe.c_str(), exe.c_str(), "run", cfg.c_str(), "--out", out.c_str(), "--quiet", static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

std::string eta_text(double seconds) {
  char buf[32];
  if (seconds < 0 || !std::isfinite(seconds)) return "--:--";
  const int s = static_cast<int>(seconds + 0.5);
  std::snprintf(buf, sizeof buf, "%d:%02d:%02d", s / 3600, (s / 60) % 60, s % 60);
  return buf;
}

}  // namespace

SweepSummary run_sweep(const Sweep& sweep, const SweepOptions& opt) {
  SweepSummary sum;
  const fs::path dir = opt.out_dir.empty() ? fs::path("sweeps") / fs::path(sweep.path).stem() : fs::path(opt.out_dir);
  sum.total = static_cast<int64_t>(sweep.runs.size());
  std::vector<const SweepRun*> todo;
  for (const auto& r : sweep.runs) {
    if (r.position % opt.shard_count != opt.shard_index) continue;
    ++sum.in_shard;
    if (fs::exists(dir / "runs" / (r.hash + ".h5"))) {
      ++sum.skipped;
      continue;
    }
    todo.push_back(&r);
  }
  if (opt.dry_run) {
    std::printf("%lld runs in the grid, %lld in shard %d/%d, %lld done, %zu to run\n", static_cast<long long>(sum.total),
                static_cast<long long>(sum.in_shard), opt.shard_index, opt.shard_count,
                static_cast<long long>(sum.skipped), todo.size());
    for (const auto* r : todo) {
      std::printf("  %s  #%lld ", r->hash.c_str(), static_cast<long long>(r->position));
      for (const auto& [k, v] : r->values) std::printf(" %s=%s", k.c_str(), v.c_str());
      std::printf("\n");
    }
    return sum;
  }
  if (!opt.index_only && !todo.empty()) {
    fs::create_directories(dir / "runs");
    fs::create_directories(dir / "configs");
    fs::create_directories(dir / "logs");
    const std::string exe = opt.stale_binary.empty() ? self_exe() : opt.stale_binary;
    const int jobs = std::max(1, opt.jobs);
    const int threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / jobs);
    std::map<pid_t, const SweepRun*> running;
    size_t next = 0;
    const auto t0 = std::chrono::steady_clock::now();
    const bool tty = isatty(STDERR_FILENO);
    auto progress = [&]() {
      if (!opt.progress) return;
      const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const int64_t done = sum.ran + sum.failed;
      const double eta = done > 0 ? el / static_cast<double>(done) * static_cast<double>(todo.size() - done) : -1;
      const int width = 30;
      const int fill = todo.empty() ? width : static_cast<int>(width * done / static_cast<int64_t>(todo.size()));
      std::fprintf(stderr, "%s[%s%s] %lld/%zu runs (%lld failed, %lld skipped)  elapsed %s  eta %s%s",
                   tty ? "\r" : "", std::string(fill, '#').c_str(), std::string(width - fill, '.').c_str(),
                   static_cast<long long>(done), todo.size(), static_cast<long long>(sum.failed),
                   static_cast<long long>(sum.skipped), eta_text(el).c_str(), eta_text(eta).c_str(), tty ? "" : "\n");
      std::fflush(stderr);
    };
    progress();
    while (next < todo.size() || !running.empty()) {
      while (next < todo.size() && static_cast<int>(running.size()) < jobs) {
        const SweepRun* r = todo[next++];
        const fs::path cfg = dir / "configs" / (r->hash + ".toml");
        write_atomic(cfg, "# sweep " + sweep.path + ", grid position " + std::to_string(r->position) + "\n" +
                              r->config.to_toml());
        const pid_t pid = spawn_run(exe, cfg, dir / "runs" / (r->hash + ".h5"), dir / "logs" / (r->hash + ".log"), threads);
        running[pid] = r;
      }
      int status = 0;
      const pid_t pid = waitpid(-1, &status, 0);
      if (pid < 0) break;
      auto it = running.find(pid);
      if (it == running.end()) continue;
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (ok) ++sum.ran;
      else ++sum.failed;
      running.erase(it);
      progress();
    }
    if (opt.progress && tty) std::fprintf(stderr, "\n");
  }
  fs::create_directories(dir);
  write_sweep_index(sweep, dir.string());
  sum.index_csv = (dir / "index.csv").string();
  return sum;
}

namespace {

struct IndexRow {
  std::string hash, status = "missing", path;
  int64_t position = 0;
  std::vector<std::string> values;
  double k = NAN, time = NAN, loss = NAN, subopt = NAN, gns = NAN, gns_mean = NAN, bound = NAN, wall = NAN,
         tte_k = NAN, tte_time = NAN;
};

double last_of(const std::vector<double>& v) { return v.empty() ? NAN : v.back(); }

void read_row(IndexRow& row, const fs::path& file, double epsilon) {
  try {
    auto f = h5::open_file_readonly(file.string());
    row.status = h5::read_attr_string(f.id(), "status");
    row.wall = h5::read_attr_double(f.id(), "wall_seconds");
    const auto k = h5::read_vector_int(f.id(), "metrics/k");
    const auto t = h5::read_vector_double(f.id(), "metrics/time");
    const auto sub = h5::read_vector_double(f.id(), "metrics/subopt");
    row.k = k.empty() ? NAN : static_cast<double>(k.back());
    row.time = last_of(t);
    row.loss = last_of(h5::read_vector_double(f.id(), "metrics/loss"));
    row.subopt = last_of(sub);
    row.gns = last_of(h5::read_vector_double(f.id(), "metrics/grad_norm_sq"));
    row.gns_mean = last_of(h5::read_vector_double(f.id(), "metrics/grad_norm_sq_mean"));
    row.bound = last_of(h5::read_vector_double(f.id(), "metrics/bound"));
    if (epsilon > 0)
      for (size_t i = 0; i < sub.size(); ++i)
        if (sub[i] <= epsilon) {
          row.tte_k = static_cast<double>(k[i]);
          row.tte_time = t[i];
          break;
        }
  } catch (const UserError&) {
    row.status = "unreadable";
  }
}

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string num(double v) {
  if (std::isnan(v)) return "";
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

}  // namespace

void write_sweep_index(const Sweep& sweep, const std::string& out_dir) {
  const fs::path dir(out_dir);
  std::vector<IndexRow> rows;
  for (const auto& r : sweep.runs) {
    IndexRow row;
    row.hash = r.hash;
    row.position = r.position;
    for (const auto& kv : r.values) row.values.push_back(kv.second);
    const fs::path file = dir / "runs" / (r.hash + ".h5");
    row.path = (fs::path("runs") / (r.hash + ".h5")).string();
    if (fs::exists(file)) read_row(row, file, sweep.epsilon);
    else if (fs::exists(dir / "logs" / (r.hash + ".log")) && !fs::exists(file.string() + ".partial"))
      row.status = "failed";
    rows.push_back(row);
  }
  // CSV
  std::ostringstream csv;
  csv << "run,position";
  for (const auto& a : sweep.axes) csv << "," << csv_escape(a);
  csv << ",status,k,time,loss,subopt,grad_norm_sq,grad_norm_sq_mean,bound,time_to_eps_k,time_to_eps,wall_seconds,path\n";
  for (const auto& r : rows) {
    csv << r.hash << "," << r.position;
    for (const auto& v : r.values) {
      std::string t = v;
      if (t.size() >= 2 && t.front() == '"') t = t.substr(1, t.size() - 2);
      csv << "," << csv_escape(t);
    }
    csv << "," << r.status << "," << num(r.k) << "," << num(r.time) << "," << num(r.loss) << "," << num(r.subopt) << ","
        << num(r.gns) << "," << num(r.gns_mean) << "," << num(r.bound) << "," << num(r.tte_k) << "," << num(r.tte_time)
        << "," << num(r.wall) << "," << r.path << "\n";
  }
  write_atomic(dir / "index.csv", csv.str());
  // HDF5: one dataset per column
  const std::string partial = (dir / ("index.h5.partial." + std::to_string(getpid()))).string();
  {
    auto f = h5::create_file(partial);
    h5::write_attr(f.id(), "sweep", sweep.path);
    h5::write_attr(f.id(), "base", sweep.base);
    h5::write_attr(f.id(), "epsilon", sweep.epsilon);
    std::vector<std::string> hashes, status, paths;
    std::vector<int64_t> pos;
    for (const auto& r : rows) hashes.push_back(r.hash), status.push_back(r.status), paths.push_back(r.path), pos.push_back(r.position);
    h5::write_strings(f.id(), "run", hashes);
    h5::write_strings(f.id(), "status", status);
    h5::write_strings(f.id(), "path", paths);
    h5::write_vector(f.id(), "position", pos);
    auto g = h5::create_group(f.id(), "axes");
    for (size_t a = 0; a < sweep.axes.size(); ++a) {
      std::vector<std::string> col;
      for (const auto& r : rows) col.push_back(r.values[a]);
      h5::write_strings(g.id(), sweep.axes[a], col);
    }
    auto col = [&](const char* name, double IndexRow::*field) {
      std::vector<double> v;
      for (const auto& r : rows) v.push_back(r.*field);
      h5::write_vector(f.id(), name, v);
    };
    col("k", &IndexRow::k);
    col("time", &IndexRow::time);
    col("loss", &IndexRow::loss);
    col("subopt", &IndexRow::subopt);
    col("grad_norm_sq", &IndexRow::gns);
    col("grad_norm_sq_mean", &IndexRow::gns_mean);
    col("bound", &IndexRow::bound);
    col("time_to_eps_k", &IndexRow::tte_k);
    col("time_to_eps", &IndexRow::tte_time);
    col("wall_seconds", &IndexRow::wall);
  }
  fs::rename(partial, dir / "index.h5");
}

}  // namespace stale
