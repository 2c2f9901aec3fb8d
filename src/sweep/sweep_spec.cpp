// Sweep files: expansion of [set] × [grid] × [zip] into resolved configs, and the run names
// (config hashes) that make a sweep resumable.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <toml++/toml.h>

#include "src/core/error.hpp"
#include "src/checks/config_rules.hpp"
#include "src/sweep/sweep.hpp"

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

// Bump when the meaning of a resolved config changes in a way its text does not show (a new
// default, a renamed key): every run is then named anew, and no old result is reused.
constexpr int kRunNameVersion = 2;

std::string config_hash(const Config& cfg) {
  // The full resolved config (every key, defaults included, in schema order), so that a
  // changed default renames the runs it changes; minus what does not change what a run
  // computes or names a path of one machine: where the file goes, progress, the data folder,
  // how often the file is flushed and checkpointed.
  std::string text = "run-name-version=" + std::to_string(kRunNameVersion) + "\n";
  for (const auto& spec : config_schema()) {
    if (spec.key == "log.out" || spec.key == "log.progress" || spec.key == "objective.data_dir" ||
        spec.key == "log.flush_seconds")
      continue;
    // a component's own key at its default: adding a component (and its keys) renames no run
    if (spec.component_owned && cfg.value_text(spec.key) == value_to_string(spec.fallback)) continue;
    text += spec.key + "=" + cfg.value_text(spec.key) + "\n";
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a(text)));
  return buf;
}

Sweep load_sweep(const std::string& path, const std::vector<std::string>& overrides) {
  const std::string text = read_config_text(path, "sweep file");
  toml::table tbl;
  try {
    tbl = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << path << ":" << e.source().begin.line << ": TOML syntax error: " << e.description();
    throw UserError(os.str());
  }
  Sweep sw;
  sw.path = path;
  for (const auto& [k, v] : tbl) {
    const std::string key(k.str());
    if (key != "base" && key != "grid" && key != "zip" && key != "set" && key != "epsilon" && key != "unread" &&
        key != "max_runs")
      throw UserError(path + ": unknown sweep key '" + key +
                      "'; valid: base, epsilon, unread, max_runs, [set], [grid], [zip]");
  }
  // a grid that crosses, say, delay.name with delay.max gives keys to points that do not read
  // them; the sweep file says what to do: "error" (the default, as for a single run) or "drop"
  // (such a key goes back to its default at that point; the index still shows the axis value)
  bool drop_unread = false;
  if (tbl.contains("unread")) {
    const auto u = tbl["unread"].value<std::string>();
    if (!u || (*u != "error" && *u != "drop"))
      throw UserError(path + ": unread must be \"error\" or \"drop\"");
    drop_unread = *u == "drop";
  }
  auto base = tbl["base"].value<std::string>();
  if (!base) throw UserError(path + ": 'base' (the config the sweep varies) is missing");
  fs::path bp(*base);
  if (bp.is_relative()) bp = fs::path(path).parent_path() / bp;
  sw.base = bp.lexically_normal().string();
  if (tbl.contains("epsilon")) {
    // the index's time-to-ε columns: a positive finite target (nan, inf, −1 or a string were
    // stored as 0, which silently turned the columns off)
    const auto eps = tbl["epsilon"].value<double>();
    if (!eps || !std::isfinite(*eps) || *eps <= 0)
      throw UserError(path + ": epsilon = " + (eps ? std::to_string(*eps) : std::string("a non-number")) +
                      "; give the f − f_* target of the index's time-to-ε columns as a positive number, e.g. "
                      "epsilon = 1e-3 (or leave it out)");
    sw.epsilon = *eps;
  }
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
    require_key(key, path + ": [grid]");
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
    require_key(key, path + ": [zip]");
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
  // a key fixed in [set] and varied by an axis: the axis would win at every point, and [set]
  // would be silently ignored
  for (size_t i = 0; i < set.size(); ++i) {
    const std::string& key = set[i].first;
    for (size_t j = 0; j < i; ++j)
      if (set[j].first == key) throw UserError(path + ": [set] " + key + " is given twice; give it once");
    if (std::find(sw.axes.begin(), sw.axes.end(), key) != sw.axes.end())
      throw UserError(path + ": [set] " + key + " is also an axis (" +
                      (std::any_of(grid.begin(), grid.end(), [&](const auto& g) { return g.first == key; }) ? "[grid]" : "[zip]") +
                      "), which would override it at every point; keep it in one of them");
  }

  // the grid's size before anything is expanded, allocated or written: a typo such as a
  // 10^4-element list crossed with another is one line, not an hour of expansion
  int64_t max_runs = 100000;
  if (tbl.contains("max_runs")) {
    const auto m = tbl["max_runs"].value<int64_t>();
    if (!m || *m < 1) throw UserError(path + ": max_runs must be a positive integer (default 100000)");
    max_runs = *m;
  }
  {
    long double count = zip_values.empty() ? 1.0L : static_cast<long double>(zip_len);
    std::string factors;
    for (size_t g = 0; g < grid_values.size(); ++g) {
      count *= static_cast<long double>(grid_values[g].size());
      factors += (factors.empty() ? "" : " x ") + sw.axes[g] + " (" + std::to_string(grid_values[g].size()) + ")";
    }
    if (!zip_values.empty()) factors += (factors.empty() ? "" : " x ") + std::string("[zip] (") + std::to_string(zip_len) + ")";
    if (count > static_cast<long double>(max_runs)) {
      char n[64];
      std::snprintf(n, sizeof n, "%.0Lf", count);
      throw UserError(path + ": the sweep expands to " + n + " runs (" + factors + "), more than max_runs = " +
                      std::to_string(max_runs) + "; shrink an axis, or raise max_runs in the sweep file");
    }
  }

  Config fixed = base_cfg;
  for (const auto& [key, node] : set) {
    require_key(key, path + ": [set]");
    fixed.apply_override(key + "=" + scalar_text(*node, path + ": [set] " + key));
  }
  // command-line key=value: like [set], applied after it; an axis key cannot be overridden
  for (const auto& o : overrides) {
    const std::string key = o.substr(0, o.find('='));
    if (std::find(sw.axes.begin(), sw.axes.end(), key) != sw.axes.end())
      throw UserError("override '" + o + "': " + key + " is an axis of " + path + "; shrink its list in the sweep file");
  }
  fixed.apply_overrides(overrides);

  // odometer over the grid (last key fastest), then the zip index
  std::vector<size_t> idx(grid_values.size(), 0);
  const size_t zn = zip_values.empty() ? 1 : zip_len;
  int64_t position = 0;
  std::map<std::string, int64_t> first_of;  // run hash → position of its first point
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
      if (drop_unread)
        drop_unread_keys(r.config);
      try {
        check_unread_keys(r.config);  // a bad grid point fails the sweep before anything runs
        check_key_relations(r.config);
      } catch (const UserError& e) {
        throw UserError(path + ": grid position " + std::to_string(r.position) + ": " + e.what());
      }
      r.hash = config_hash(r.config);
      if (const auto [first, fresh] = first_of.emplace(r.hash, r.position); !fresh) r.duplicate_of = first->second;
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
  // exactly two whole integers: std::stoi read "1/2/3" as 1/2 and " 1/2x" as 1/2
  const auto whole = [](const std::string& t, int& v) {
    const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    return !t.empty() && r.ec == std::errc() && r.ptr == t.data() + t.size();
  };
  const auto slash = text.find('/');
  if (slash == std::string::npos || !whole(text.substr(0, slash), index) || !whole(text.substr(slash + 1), count) ||
      count < 1 || index < 0 || index >= count)
    throw UserError("--shard " + one_line(text) + ": expected i/N, two integers with 0 <= i < N, e.g. --shard 3/16");
}

}  // namespace stale
