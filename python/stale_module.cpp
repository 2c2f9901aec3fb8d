// The extension module `stale._stale`: the harness's C++ entry points for Python (nanobind).
// The public API lives in python/stale/ (pure Python); this file only converts: configs
// arrive as a TOML file path or text plus "key=value" overrides (exactly what the CLI takes),
// results leave as dicts of numpy arrays. Every long call releases the interpreter lock, so
// other Python threads run meanwhile; bad input raises stale.ConfigError with the CLI's
// one-line message (src/core/error.hpp UserError).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "objectives/linear/linear_data.hpp"
#include "objectives/objective_factory.hpp"
#include "objectives/objective_registry.hpp"
#include "python/stage_model_objective.hpp"
#include "src/backend/backend.hpp"
#include "src/commands/component_catalog.hpp"
#include "src/commands/config_keys.hpp"
#include "src/commands/output_schema.hpp"
#include "src/commands/predict_stability.hpp"
#include "src/commands/run_config.hpp"
#include "src/commands/simulate_schedule.hpp"
#include "src/commands/sweep_grid.hpp"
#include "src/config/config.hpp"
#include "src/core/build_info.hpp"
#include "src/core/cpu_target.hpp"
#include "src/core/error.hpp"
#include "src/io/h5.hpp"
#include "src/io/metrics_schema.hpp"
#include "src/io/schedule_file.hpp"
#include "src/io/theory_record.hpp"
#include "src/pipeline/cost_model.hpp"
#include "src/pipeline/schedule.hpp"
#include "src/pipeline/simulator.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace stale {
namespace {

// C++ calls in progress with the interpreter lock released (the tests watch it from a thread)
std::atomic<int> g_released_calls{0};

struct Released {
  nb::gil_scoped_release release;
  Released() { ++g_released_calls; }
  ~Released() { --g_released_calls; }
};

// a numpy array that owns a moved-in vector
template <class T>
nb::object to_numpy(std::vector<T>&& v, std::vector<size_t> shape) {
  auto* owned = new std::vector<T>(std::move(v));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  nb::ndarray<nb::numpy, T> a(owned->data(), shape.size(), shape.data(), owner);
  return nb::cast(a, nb::rv_policy::reference);
}
template <class T>
nb::object to_numpy(std::vector<T>&& v) {
  const size_t n = v.size();
  return to_numpy(std::move(v), {n});
}
template <class T>
nb::object to_numpy(const std::vector<T>& v) {
  return to_numpy(std::vector<T>(v));
}

// the config a Python call describes: a file (path) or TOML text, then the overrides
Config make_config(const std::string& path, const std::string& text, const std::vector<std::string>& overrides) {
  Config cfg = path.empty() ? Config::from_string(text, "") : Config::from_file(path);
  cfg.apply_overrides(overrides);
  return cfg;
}

using Array2 = nb::ndarray<const double, nb::ndim<2>, nb::device::cpu>;
using Array1 = nb::ndarray<const double, nb::ndim<1>, nb::device::cpu>;

// a user's X, y (and w_true) copied into the linear models' data; the command layer checks
// and partitions them (objective_of_arrays)
std::shared_ptr<LinearData> arrays_data(const Array2& X, const Array1& y, const std::optional<Array1>& w_true) {
  auto data = std::make_shared<LinearData>();
  const Index n = static_cast<Index>(X.shape(0)), d = static_cast<Index>(X.shape(1));
  data->X.resize(n, d);
  const int64_t s0 = X.stride(0), s1 = X.stride(1);
  if (s0 == 1 && s1 == n) {  // Fortran order: the layout of Mat, one copy
    std::memcpy(data->X.data(), X.data(), sizeof(double) * static_cast<size_t>(n * d));
  } else {
    const double* p = X.data();
    for (Index j = 0; j < d; ++j)
      for (Index i = 0; i < n; ++i) data->X(i, j) = p[i * s0 + j * s1];
  }
  auto vec = [](const Array1& a) {
    Vec v(static_cast<Index>(a.shape(0)));
    for (Index i = 0; i < v.size(); ++i) v(i) = a.data()[i * a.stride(0)];
    return v;
  };
  data->y = vec(y);
  if (w_true) data->w_true = vec(*w_true);
  return data;
}

// /metrics as numpy arrays, one per column of the run file's table (src/io/metrics_schema.hpp),
// in its order and with its types
nb::dict metrics_dict(const std::vector<MetricsRow>& rows) {
  nb::dict m;
  for (const auto& c : metric_columns())
    std::visit(
        [&](auto member) {
          std::vector<std::remove_reference_t<decltype(MetricsRow{}.*member)>> col(rows.size());
          for (size_t i = 0; i < rows.size(); ++i) col[i] = rows[i].*member;
          m[c.name] = to_numpy(std::move(col));
        },
        c.member);
  return m;
}

// the run file's /theory record itself (src/io/theory_record.hpp), so .theory has the same keys
// and values in memory as read back from a file
nb::dict theory_dict(const TheoryConstants& t) {
  nb::dict d;
  for (const TheoryEntry& e : theory_record(t))
    std::visit([&](const auto& v) { d[e.name.c_str()] = v; }, e.value);
  return d;
}

nb::dict run(const std::string& path, const std::vector<std::string>& overrides, const std::string& out, bool force,
             bool progress, bool drop_unread, std::optional<Array2> X, std::optional<Array1> y,
             std::optional<Array1> w_true, nb::object model, const std::string& resume) {
  if (X.has_value() != y.has_value()) throw UserError("stale.run: pass both X and y, or neither");
  RunRequest req;
  req.config_path = path;
  req.defaults = path.empty();  // config=None or a dict: the defaults, then the overrides
  req.overrides = overrides;
  req.out = out;
  req.keep_in_memory = true;
  req.force = force;
  req.progress = progress;
  req.drop_unread = drop_unread;
  req.resume = resume;
  req.arrays = X.has_value();
  if (!model.is_none()) req.model_stages = nb::cast<int64_t>(model.attr("stages"));
  PreparedRun p = prepare_run(req);
  if (!model.is_none())  // built here, with the interpreter lock: its constructor probes the model (model.py's prepare)
    p.options.objective = std::make_shared<StageModelObjective>(model, static_cast<uint64_t>(p.config.get_int("seed")));
  if (X) {
    auto data = arrays_data(*X, *y, w_true);
    Released r;
    p.options.objective = objective_of_arrays(p.config, std::move(data));
  }
  nb::dict d;
  if (!p.in_memory) {
    std::string written;
    {
      Released r;
      written = run_to_file(p).path;
    }
    d["path"] = written;
    return d;
  }
  InMemoryRun m;
  {
    Released r;
    m = run_kept_in_memory(p);
  }
  const RunResult& res = m.result;
  d["status"] = res.status;
  d["message"] = res.message;
  d["wall_seconds"] = res.wall_seconds;
  d["updates"] = res.updates;
  d["config"] = m.config_toml;
  d["seed"] = p.config.get_int("seed");
  d["metrics"] = metrics_dict(m.metrics);
  const size_t dim = static_cast<size_t>(m.objective.d);
  const size_t logged = m.iterates_k.size();
  d["iterates"] = to_numpy(std::move(m.iterates), {logged, dim});
  d["iterates_k"] = to_numpy(std::move(m.iterates_k));
  const size_t S = static_cast<size_t>(m.objective.S);
  if (m.delay_table_kept) d["delays"] = to_numpy(std::move(m.delays), {static_cast<size_t>(m.delay_rows), S});
  else d["delays"] = nb::none();
  if (m.delay_rows > 0) {
    nb::dict s;
    s["max"] = to_numpy(std::move(m.delay_max));
    s["mean"] = to_numpy(std::move(m.delay_mean));
    s["updates"] = m.delay_rows;
    s["table_kept"] = static_cast<int64_t>(m.delay_table_kept);
    d["delay_summary"] = s;
  } else {
    d["delay_summary"] = nb::none();
  }
  d["theory"] = theory_dict(m.theory);
  nb::dict o;
  o["name"] = m.objective.name;
  o["n"] = m.objective.n;
  o["d"] = m.objective.d;
  o["S"] = m.objective.S;
  o["block_sizes"] = to_numpy(std::move(m.objective.block_sizes));
  o["L"] = m.objective.L;
  o["mu"] = m.objective.mu;
  o["f_star"] = m.objective.f_star;
  o["f_star_is_lower_bound"] = m.objective.f_star_is_lower_bound;
  o["batches"] = m.objective.batches;
  o["description"] = m.objective.description;
  d["objective"] = o;
  if (m.schedule.present) {
    nb::dict s;
    s["makespan"] = m.schedule.makespan;
    s["bubble_fraction"] = m.schedule.bubble_fraction;
    s["bubble"] = to_numpy(std::move(m.schedule.bubble));
    s["busy"] = to_numpy(std::move(m.schedule.busy));
    s["peak_inflight"] = to_numpy(std::move(m.schedule.peak_inflight));
    s["peak_versions"] = to_numpy(std::move(m.schedule.peak_versions));
    s["max_crossed_measured"] = to_numpy(std::move(m.schedule.measured_crossed));
    d["schedule"] = s;
  } else {
    d["schedule"] = nb::none();
  }
  const Vec& w = res.final_w;
  d["final_w"] = to_numpy(std::vector<double>(w.data(), w.data() + w.size()));
  return d;
}

nb::dict delay_stats_dict(const DelayStats& st) {
  nb::dict d;
  std::vector<double> mean_u(st.blocks), mean_r(st.blocks);
  for (int a = 0; a < st.blocks; ++a) {
    mean_u[a] = st.mean_by_update_block(a);
    mean_r[a] = st.mean_by_read_block(a);
  }
  d["count"] = to_numpy(st.count);
  d["max_by_update_block"] = to_numpy(st.update_max);
  d["mean_by_update_block"] = to_numpy(std::move(mean_u));
  d["max_by_read_block"] = to_numpy(st.read_max);
  d["mean_by_read_block"] = to_numpy(std::move(mean_r));
  d["max_delay"] = st.updates() > 0 ? st.max_overall() : 0;
  d["mean_delay"] = st.updates() > 0 ? st.mean_overall() : 0.0;
  d["updates"] = st.updates();
  return d;
}

nb::dict schedule(const std::string& name, int stages, int64_t microbatches, int accumulation, int replicas,
                  int local_steps, int chunks, const std::vector<std::string>& costs, int64_t steady_margin,
                  const std::string& out, const std::string& trace, std::optional<bool> delay_table) {
  ScheduleRequest req;
  req.name = name;
  req.params.stages = stages;
  req.params.microbatches = microbatches;
  req.params.accumulation = accumulation;
  req.params.replicas = replicas;
  req.params.local_steps = local_steps;
  req.params.chunks = chunks;
  req.costs = costs;
  req.steady_margin = steady_margin;
  req.out = out;
  req.trace = trace;
  req.keep_timeline = true;
  req.delay_table = !delay_table ? ScheduleRequest::Tables::Auto
                    : *delay_table ? ScheduleRequest::Tables::Always
                                   : ScheduleRequest::Tables::Never;
  req.caller_bytes_per_op = 7 * 8;  // the timeline's seven arrays below
  ScheduleOutcome o;
  {
    Released rel;
    o = simulate_schedule(req);
  }
  const Schedule& s = o.schedule;
  const SimResult& r = o.result;
  const CostModel& cm = o.costs;
  nb::dict d;
  d["name"] = s.name;
  d["stages"] = s.stages;
  d["chunks"] = s.chunks;
  d["blocks"] = s.blocks();
  d["microbatches"] = s.microbatches;
  d["accumulation"] = s.accumulation;
  d["replicas"] = s.replicas;
  d["local_steps"] = s.local_steps;
  d["stash"] = s.stash;
  d["costs"] = cm.describe();
  d["makespan"] = r.makespan;
  d["bubble_fraction"] = r.bubble_overall;
  d["bubble"] = to_numpy(r.bubble);
  d["busy"] = to_numpy(r.busy);
  d["peak_inflight"] = to_numpy(r.peak_inflight);
  d["peak_versions"] = to_numpy(r.peak_versions);
  d["max_crossed"] = to_numpy(r.max_crossed);
  d["updates_per_block"] = to_numpy(r.updates_per_block);
  d["total_updates"] = r.total_updates;
  // the timeline: one row per op, device programs in order (the schedule file's /schedule)
  OpTable ops = op_table(s);
  nb::dict t;
  t["stage"] = to_numpy(std::move(ops.stage));
  t["block"] = to_numpy(std::move(ops.block));
  t["kind"] = to_numpy(std::move(ops.kind));
  t["microbatch"] = to_numpy(std::move(ops.microbatch));
  t["flags"] = to_numpy(std::move(ops.flags));
  t["start"] = to_numpy(r.start);
  t["end"] = to_numpy(r.end);
  d["timeline"] = t;
  const size_t nb_ = static_cast<size_t>(s.blocks());
  auto table = [&](const std::vector<int64_t>& t) -> nb::object {
    if (!o.delay_table || t.empty()) return nb::none();
    return to_numpy(std::vector<int64_t>(t), {t.size() / nb_, nb_});
  };
  d["delays"] = table(r.delay_table);
  d["delays_backward"] = table(r.delay_table_backward);
  d["delay_summary"] = delay_stats_dict(r.delays);
  d["steady_delay_summary"] = delay_stats_dict(r.steady_delays);
  d["steady_margin"] = r.steady_margin;
  return d;
}

// src/commands/sweep_grid.hpp's plan: stale.sweep(model=...) runs it itself, one run after
// another with the model object (which a C++ worker cannot hold), then asks for the index
nb::list sweep_plan_list(const std::string& path, const std::vector<std::string>& overrides, const std::string& shard) {
  nb::list out;
  for (const SweepRun& r : stale::sweep_plan(path, overrides, shard)) {
    nb::dict d;
    d["position"] = r.position;
    d["hash"] = r.hash;
    d["duplicate_of"] = r.duplicate_of;
    nb::list values;
    for (const auto& [k, v] : r.values) values.append(nb::make_tuple(k, v));
    d["values"] = values;
    d["config"] = r.config.to_toml();
    out.append(d);
  }
  return out;
}

nb::dict sweep(const std::string& path, const std::vector<std::string>& overrides, const std::string& out_dir, int jobs,
               int ensemble, const std::string& shard, bool progress, bool dry_run, bool index_only) {
  SweepRequest req;
  req.path = path;
  req.overrides = overrides;
  req.shard = shard;
  req.options.out_dir = out_dir;
  req.options.jobs = jobs;
  req.options.ensemble = ensemble;
  req.options.progress = progress;
  req.options.dry_run = dry_run;
  req.options.index_only = index_only;
  SweepOutcome o;
  {
    Released r;
    o = sweep_grid(req);
  }
  const SweepSummary& s = o.summary;
  nb::dict d;
  d["total"] = s.total;
  d["ran"] = s.ran;
  d["skipped"] = s.skipped;
  d["failed"] = s.failed;
  d["index_csv"] = s.index_csv;
  d["axes"] = o.axes;
  return d;
}

nb::dict stability(const std::string& path, const std::string& text, const std::vector<std::string>& overrides,
                   std::vector<double> lrs, const std::string& order, const std::string& solver, int64_t dense_max,
                   bool gamma_max, double rel_tol) {
  StabilityRequest req(make_config(path, text, overrides));
  req.lrs = std::move(lrs);
  req.order = order;
  req.solver = solver;
  req.dense_max = dense_max;
  req.gamma_max = gamma_max;
  req.rel_tol = rel_tol;
  StabilityReport rep;
  {
    Released r;
    rep = predict_stability(std::move(req));
  }
  std::vector<double> lr, rho, rho_per_update;
  std::vector<uint8_t> converged;
  for (const StabilityPoint& p : rep.points) {
    lr.push_back(p.lr);
    rho.push_back(p.rho);
    rho_per_update.push_back(p.rho_per_update);
    converged.push_back(p.converged);
  }
  nb::dict d;
  d["L"] = rep.L;
  d["mu"] = rep.mu;
  d["state_dim"] = rep.state_dim;
  d["period"] = rep.period;
  d["pattern"] = rep.pattern;
  d["solver"] = rep.solver;
  d["lr"] = to_numpy(std::move(lr));
  d["rho"] = to_numpy(std::move(rho));
  d["rho_per_update"] = to_numpy(std::move(rho_per_update));
  d["converged"] = to_numpy(std::move(converged));
  if (rep.bound) {
    const StepBound& b = *rep.bound;
    d["gamma_max"] = b.gamma_max;
    d["gamma_max_L"] = b.gamma_max * rep.L;
    d["rho_below"] = b.rho_below;
    d["rho_above"] = b.rho_above;
    d["evaluations"] = b.evaluations;
    d["gamma_max_converged"] = b.converged;
  }
  return d;
}

// one exported value as its Python object (objectives/objective_export.hpp)
nb::object export_value(ExportValue&& v) {
  return std::visit(
      [](auto&& x) -> nb::object {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) return nb::none();
        else if constexpr (std::is_same_v<T, ExportTuple>) {
          nb::list l;
          for (int64_t n : x.values) l.append(n);
          return nb::tuple(l);
        } else if constexpr (std::is_same_v<T, ExportArray<double>> || std::is_same_v<T, ExportArray<int64_t>> ||
                             std::is_same_v<T, ExportArray<int32_t>>) {
          return x.shape.empty() ? to_numpy(std::move(x.values)) : to_numpy(std::move(x.values), x.shape);
        } else {
          return nb::cast(x);
        }
      },
      std::move(v));
}

// the objective of a config as its registry entry exports it (stale.objective): a dict, with a
// nested dict for each name with a '/'
nb::dict objective_data(const std::string& path, const std::string& text, const std::vector<std::string>& overrides) {
  Config cfg = make_config(path, text, overrides);
  const std::string name = cfg.get_string("objective.name");
  const ObjectiveEntry& entry = objective_entry(name);
  if (!entry.export_arrays)
    config_error("objective.name", "\"" + name + "\": stale.objective exports the objectives whose registry entries offer "
                                       "their arrays (" + objectives_exporting_arrays() + ")");
  ObjectiveExport e;
  {
    Released r;
    e = entry.export_arrays(cfg);
  }
  nb::dict out;
  for (auto& [key, value] : e.items) {
    nb::dict into = out;
    std::string leaf = key;
    for (size_t slash; (slash = leaf.find('/')) != std::string::npos; leaf = leaf.substr(slash + 1)) {
      const std::string part = leaf.substr(0, slash);
      if (!into.contains(part.c_str())) into[part.c_str()] = nb::dict();
      into = nb::borrow<nb::dict>(into[part.c_str()]);
    }
    into[leaf.c_str()] = export_value(std::move(value));
  }
  return out;
}

}  // namespace
}  // namespace stale

NB_MODULE(_stale, m) {
  using namespace stale;
  m.doc() = "the C++ core of the stale harness (use the package `stale`, not this module)";
  // as the CLI: HDF5 1.10 leaks an object on every failed open of a damaged file, and its
  // clean-up at the interpreter's exit then printed "infinite loop closing library" and a dump
  // (everything of ours is closed when each call returns)
  h5::no_cleanup_at_exit();
  nb::exception<UserError>(m, "ConfigError", PyExc_ValueError);
  m.attr("version") = stale::build::version;
  m.attr("git_sha") = stale::build::git_sha;
  m.attr("cpu_target") = stale::build::cpu_target;
  m.attr("toolchain") = stale::toolchain();  // with cpu_target: what committed bits are promised for
  if (const std::string cpu = cpu_target_mismatch(); !cpu.empty()) throw nb::import_error(cpu.c_str());
  m.def("run", &stale::run, "path"_a, "overrides"_a, "out"_a, "force"_a, "progress"_a, "drop_unread"_a,
        "X"_a.none() = nb::none(), "y"_a.none() = nb::none(), "w_true"_a.none() = nb::none(),
        "model"_a.none() = nb::none(), "resume"_a = "");
  m.def("schedule", &stale::schedule, "name"_a, "stages"_a, "microbatches"_a, "accumulation"_a, "replicas"_a,
        "local_steps"_a, "chunks"_a, "costs"_a, "steady_margin"_a, "out"_a, "trace"_a,
        "delay_table"_a.none());
  m.def("sweep", &stale::sweep, "path"_a, "overrides"_a, "out_dir"_a, "jobs"_a, "ensemble"_a, "shard"_a, "progress"_a,
        "dry_run"_a, "index_only"_a = false);
  m.def("sweep_plan", &stale::sweep_plan_list, "path"_a, "overrides"_a, "shard"_a);
  m.def("stability", &stale::stability, "path"_a, "text"_a, "overrides"_a, "lrs"_a, "order"_a, "solver"_a,
        "dense_max"_a, "gamma_max"_a, "rel_tol"_a);
  m.def("objective", &stale::objective_data, "path"_a, "text"_a, "overrides"_a);
  m.def("metric_names", [] {
    std::vector<std::string> names;
    for (const auto& r : stale::metric_rows()) names.push_back(r.name);
    return names;
  }, "the /metrics series in the run file's order (src/io/metrics_schema.hpp)");
  m.def("schema", [] {
    auto rows = [](const std::vector<OutputColumnRow>& rs, bool with_source) {
      nb::list out;
      for (const auto& r : rs) {
        nb::dict d;
        d["name"] = r.name;
        d["dtype"] = r.dtype;
        d["unit"] = r.unit;
        d["description"] = r.description;
        if (with_source) d["from"] = r.source.empty() ? nb::none() : nb::cast(r.source);
        out.append(d);
      }
      return out;
    };
    nb::dict d;
    d["metrics"] = rows(metric_rows(), false);
    d["index"] = rows(index_rows(), true);
    return d;
  }, "the run file's /metrics series and the sweep index's columns (stale schema)");
  m.def("released_calls", [] { return g_released_calls.load(); },
        "C++ calls now running with the interpreter lock released");
  // the registries as `stale list` prints them, so that Python tests loop over every method
  // and delay model (a new one is covered without an edit)
  m.def("components", [](const std::string& family) {
    nb::dict d;
    for (const auto& f : component_catalog(family)) {
      nb::list rows;
      for (const auto& r : f.rows) {
        nb::dict row;
        row["name"] = r.name;
        row["traits"] = r.traits;
        row["keys"] = r.keys;
        row["summary"] = r.summary;
        for (const auto& [name, value] : r.facts) row[name.c_str()] = nb::cast(value);
        rows.append(row);
      }
      d[f.name.c_str()] = rows;
    }
    return d;
  }, "family"_a = "", "the registered components by family (stale list)");
  m.def("keys", [](const std::string& prefix) {
    nb::list out;
    for (const auto& r : config_key_rows(prefix, "stale.keys")) {
      nb::dict d;
      d["key"] = r.key;
      d["type"] = r.type;
      d["default"] = nb::cast(r.fallback);
      d["meaning"] = r.meaning;
      d["choices"] = r.choices;
      out.append(d);
    }
    return out;
  }, "prefix"_a = "", "the config keys that start with prefix (stale keys)");
  m.def("config_keys", [] {
    std::vector<std::string> keys;
    for (const auto& r : config_key_rows()) keys.push_back(r.key);
    return keys;
  }, "every config key's name, in the schema's order");
}
