// Runs a sweep's grid points. By default inside this process: a pool of worker threads (one
// per core), each running whole runs one after another on a single thread (parallelism goes
// across runs, src/core/parallel.hpp), with the objective of runs that share their data built
// once and shared read-only. `--isolate` runs each grid point in its own `stale run` child
// instead (process_pool.hpp). Either way a failed or diverged run never stops the others,
// a run's file is the same, and runs that already have a file are skipped (resume).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "objectives/objective_factory.hpp"
#include "objectives/objective_registry.hpp"
#include "src/backend/backend.hpp"
#include "src/core/error.hpp"
#include "src/core/parallel.hpp"
#include "src/io/h5.hpp"
#include "src/io/run_file.hpp"
#include "src/io/sweep_index_file.hpp"
#include "src/io/write_lock.hpp"
#include "src/pipeline/state_costs.hpp"
#include "optimizers/method_registry.hpp"
#include "src/run/checkpoint.hpp"
#include "src/checks/config_rules.hpp"
#include "src/run/interrupt.hpp"
#include "src/sweep/process_pool.hpp"
#include "src/run/runner.hpp"
#include "src/sweep/sweep.hpp"

namespace stale {

namespace fs = std::filesystem;

namespace {

std::string self_exe() {
  std::error_code ec;
  const auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("stale") : p.string();
}


std::string eta_text(double seconds) {
  char buf[32];
  if (seconds < 0 || !std::isfinite(seconds)) return "--:--";
  const int s = static_cast<int>(seconds + 0.5);
  std::snprintf(buf, sizeof buf, "%d:%02d:%02d", s / 3600, (s / 60) % 60, s % 60);
  return buf;
}

// Objectives shared between the runs of one sweep that read the same data: the key is every
// objective.* key with the seed, backend and precision. Only objectives whose registry entry
// says so are shared (their evaluation is const and thread-safe); an entry is dropped when its
// last run is done.
class ObjectiveCache {
 public:
  static std::string key(const Config& cfg) {
    if (!objective_entry(cfg.get_string("objective.name")).shared_across_runs) return "";
    std::string k;
    for (const auto& spec : config_schema())
      if (spec.key.rfind("objective.", 0) == 0 || spec.key == "seed" || spec.key == "backend" ||
          spec.key == "precision")
        k += spec.key + "=" + cfg.value_text(spec.key) + "\n";
    return k;
  }
  void expect(const std::string& k) {
    if (!k.empty()) ++entries_[k].pending;
  }
  std::shared_ptr<const Objective> get(const Config& cfg, const std::string& k) {
    if (k.empty()) return nullptr;  // built by the run itself
    Entry* e;
    {
      std::lock_guard<std::mutex> lock(m_);
      e = &entries_.at(k);
    }
    // one thread builds it; the others wait for it
    std::call_once(e->once, [&] {
      try {
        e->objective = make_objective(cfg);
      } catch (...) {
        e->error = std::current_exception();
      }
    });
    if (e->error) std::rethrow_exception(e->error);
    return e->objective;
  }
  void release(const std::string& k) {
    if (k.empty()) return;
    std::lock_guard<std::mutex> lock(m_);
    Entry& e = entries_.at(k);
    if (--e.pending == 0) e.objective.reset();
  }

 private:
  struct Entry {
    std::once_flag once;
    std::shared_ptr<const Objective> objective;
    std::exception_ptr error;
    int pending = 0;
  };
  std::mutex m_;
  std::map<std::string, Entry> entries_;  // std::map: entries never move
};

// whether runs of this config may share a lockstep ensemble: a method with an ensemble loop
// over an objective whose column calls are GEMMs on the cpu (its registry entry says so)
bool batches_columns(const Config& cfg) {
  if (!objective_entry(cfg.get_string("objective.name")).ensembles_on_cpu) return false;
  if (resolve_backend(cfg.get_string("backend")) != BackendKind::Cpu) return false;
  const MethodKind kind = method_entry(cfg.get_string("method.name")).kind;
  // a coupled timeline follows each run's own state: no two runs share it
  return kind != MethodKind::Fresh && parse_coupling(cfg.get_string("costs.coupling")) == Coupling::None;
}

// the config without method.lr: runs with equal keys may run as one ensemble
std::string ensemble_key(const Config& cfg) {
  std::string k;
  for (const auto& spec : config_schema())
    if (spec.key != "method.lr" && spec.key != "log.out") k += spec.key + "=" + cfg.value_text(spec.key) + "\n";
  return k;
}

// The sweep folder and its runs/, configs/, logs/ are folders this process may write into,
// checked before the first run: found only at the first write, a file in their place was an
// internal error (exit 3), and a read-only folder failed every run one by one.
void check_sweep_folder(const fs::path& dir) {
  const std::string fix = "; valid: a writable folder, or one it may create; choose another with --out";
  std::error_code ec;
  for (const fs::path& p : {dir, dir / "runs", dir / "configs", dir / "logs"}) {
    const auto st = fs::status(p, ec);
    if (fs::exists(st) && !fs::is_directory(st))
      throw UserError("sweep folder " + dir.string() + ": " + (p == dir ? "is a file, not a folder" : p.string() + " is a file, not a folder") + fix);
  }
  // the nearest folder that exists is where this sweep creates or writes its files
  fs::path existing = dir;
  while (!existing.empty() && !fs::exists(existing, ec)) existing = existing.parent_path();
  if (existing.empty()) existing = ".";
  if (access(existing.c_str(), W_OK | X_OK) != 0)
    throw UserError("sweep folder " + dir.string() + ": " + existing.string() + " is not writable (" +
                    std::strerror(errno) + ")" + fix);
}

}  // namespace

std::vector<std::vector<const SweepRun*>> ensemble_groups(const Sweep& sweep, int max_columns) {
  std::vector<std::vector<const SweepRun*>> groups;
  std::map<std::string, size_t> by_key;  // key → index in `pending`
  std::vector<std::vector<const SweepRun*>> pending;
  for (const auto& r : sweep.runs) {
    bool joinable = false;
    std::string key;
    if (max_columns > 1) {
      try {
        joinable = batches_columns(r.config);
      } catch (const UserError&) {
        joinable = false;  // the run reports its own error when it runs
      }
      if (joinable) key = ensemble_key(r.config);
    }
    if (!joinable) {
      pending.push_back({&r});
      continue;
    }
    auto it = by_key.find(key);
    if (it == by_key.end()) {
      by_key.emplace(key, pending.size());
      pending.push_back({&r});
    } else {
      pending[it->second].push_back(&r);
    }
  }
  // a group of g runs → ⌈g / max⌉ ensembles of near-equal size, in grid order
  for (const auto& g : pending) {
    const size_t n = g.size(), cap = static_cast<size_t>(std::max(1, max_columns));
    const size_t parts = (n + cap - 1) / cap;
    size_t at = 0;
    for (size_t i = 0; i < parts; ++i) {
      const size_t size = n / parts + (i < n % parts ? 1 : 0);
      groups.emplace_back(g.begin() + static_cast<std::ptrdiff_t>(at), g.begin() + static_cast<std::ptrdiff_t>(at + size));
      at += size;
    }
  }
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.front()->position < b.front()->position; });
  return groups;
}

void check_sweep_options(const SweepOptions& opt) {
  // here, not in a front end's parser, so that `stale sweep` and stale.sweep() refuse alike
  if (opt.jobs < 0 || opt.jobs > 1024)
    throw UserError("--jobs " + std::to_string(opt.jobs) + " (Python: jobs=): valid: 1 to 1024 runs at once, or 0 for one per core");
  if (opt.ensemble < 1 || opt.ensemble > 64)
    throw UserError("--ensemble " + std::to_string(opt.ensemble) + " (Python: ensemble=): valid: 1 to 64 runs per lockstep "
                    "ensemble (1: every run alone)");
  STALE_CHECK(opt.shard_count >= 1 && opt.shard_index >= 0 && opt.shard_index < opt.shard_count,
              "a shard i/N with 0 <= i < N (parse_shard)");
}

SweepSummary run_sweep(const Sweep& sweep, const SweepOptions& opt) {
  check_sweep_options(opt);
  SweepSummary sum;
  // the runs written here share their schedules' tables: filtered once, copied after
  const h5::ReuseFilteredChunks reuse;
  const fs::path dir = opt.out_dir.empty() ? fs::path("sweeps") / fs::path(sweep.path).stem() : fs::path(opt.out_dir);
  check_sweep_folder(dir);
  sum.total = static_cast<int64_t>(sweep.runs.size());
  // grid points that resolve to the same run (SweepRun::duplicate_of) are one run: it runs
  // once, and every such point's index row names its file
  Sweep unique = sweep;
  unique.runs.clear();
  std::vector<const SweepRun*> duplicates;
  for (const auto& r : sweep.runs) {
    if (r.duplicate_of < 0) unique.runs.push_back(r);
    else duplicates.push_back(&r);
  }
  sum.duplicates = static_cast<int64_t>(duplicates.size());
  // work items: whole ensembles (formed over the whole grid, so that a run's arithmetic does
  // not depend on shards or on what a resume skips), each in the shard of its first run
  const int ensemble = opt.isolate ? 1 : opt.ensemble;
  // the index rows of the runs that finish here, from memory (a file is read back only for a
  // run done elsewhere: another shard, an earlier invocation, a child process, a resume)
  std::map<std::string, RunSummary> finished_here;
  std::mutex finished_mutex;
  auto keep_summary = [&](const std::string& hash, const RunResult& res) {
    if (res.resumed || (res.status != "ok" && res.status != "diverged")) return;
    const RunSummary row = run_summary_of(res.status, res.wall_seconds, res.delta, res.lr_within_1_over_L, res.L, res.L_estimated, res.last,
                                          res.subopt_lows, sweep.epsilon);
    std::lock_guard<std::mutex> lock(finished_mutex);
    finished_here[hash] = row;
  };
  std::vector<std::vector<const SweepRun*>> items;
  std::vector<const SweepRun*> todo;
  for (const auto& group : ensemble_groups(unique, ensemble)) {
    if (group.front()->position % opt.shard_count != opt.shard_index) continue;
    bool missing = false;
    for (const auto* r : group) {
      ++sum.in_shard;
      const fs::path file = dir / "runs" / (r->hash + ".h5");
      const bool opens = fs::exists(file) && run_file_opens(file.string());
      if (!opens && fs::exists(file) && !opt.dry_run && !opt.index_only) {
        // a finished name on a file that does not open (its writer's close failed on a full
        // disk, in a version that renamed it anyway): not done; kept aside, the run runs again
        std::error_code ec;
        fs::rename(file, file.string() + ".unreadable", ec);
        if (ec) throw UserError(file.string() + ": does not open as a run file and cannot be moved aside (" +
                                ec.message() + "); remove it to run it again");
        std::fprintf(stderr, "sweep: %s does not open as a run file: kept as %s.unreadable, run again\n",
                     file.string().c_str(), file.string().c_str());
      }
      if (opens) {
        ++sum.skipped;
      } else {
        todo.push_back(r);
        missing = true;
      }
    }
    if (missing) items.push_back(group);
  }
  // the files the runs to do read, before any of them runs: a missing data file fails the
  // sweep in one line, not each run at its start (--index-only runs nothing and reads no data)
  if (!opt.index_only) {
    std::set<std::string> checked;  // "objective.data|data_dir|delay.path" already found
    for (const auto* r : todo) {
      const std::string k = r->config.value_text("objective.data") + "|" + r->config.value_text("objective.data_dir") +
                            "|" + r->config.value_text("delay.path");
      if (!checked.insert(k).second) continue;
      try {
        check_input_files(r->config);
      } catch (const UserError& e) {
        throw UserError(sweep.path + ": grid position " + std::to_string(r->position) + ": " + e.what());
      }
    }
  }
  if (opt.dry_run) {
    std::printf("%lld runs in the grid (%lld of its points the same run as an earlier point), %lld in shard %d/%d, "
                "%lld done, %zu to run\n",
                static_cast<long long>(sum.total - sum.duplicates), static_cast<long long>(sum.duplicates),
                static_cast<long long>(sum.in_shard), opt.shard_index, opt.shard_count,
                static_cast<long long>(sum.skipped), todo.size());
    auto print_point = [](const SweepRun& r) {
      std::printf("  %s  #%lld ", r.hash.c_str(), static_cast<long long>(r.position));
      for (const auto& [k, v] : r.values) std::printf(" %s=%s", k.c_str(), v.c_str());
    };
    for (const auto* r : todo) {
      print_point(*r);
      std::printf("\n");
    }
    for (const auto* r : duplicates) {
      print_point(*r);
      std::printf("  (the same run as #%lld)\n", static_cast<long long>(r->duplicate_of));
    }
    return sum;
  }
  // one writer per sweep folder (per shard: shards of one sweep write disjoint runs)
  const std::string lock_name = opt.shard_count == 1 ? ".sweep.lock"
                                                     : ".sweep-shard-" + std::to_string(opt.shard_index) + "-of-" +
                                                           std::to_string(opt.shard_count) + ".lock";
  const WriteLock lock(dir.string(), opt.shard_count == 1 ? "sweep folder" : "sweep folder's shard",
                       (dir / lock_name).string());
  // removed by the lock, or by end_process_in_set_up when a stop ends the sweep in set-ups
  struct Remembered {
    std::string path;
    explicit Remembered(std::string p) : path(std::move(p)) { remember_lock_file(path); }
    ~Remembered() { forget_lock_file(path); }
  } remembered(lock.path());
  if (!opt.index_only && !todo.empty()) {
    fs::create_directories(dir / "runs");
    fs::create_directories(dir / "configs");
    fs::create_directories(dir / "logs");
    const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    const int jobs = std::max(1, std::min<int>(opt.jobs > 0 ? opt.jobs : cores, static_cast<int>(items.size())));
    for (const auto* r : todo)
      write_text_file((dir / "configs" / (r->hash + ".toml")).string(),
                 "# sweep " + sweep.path + ", grid position " + std::to_string(r->position) + "\n" + r->config.to_toml());

    std::mutex progress_mutex;
    const auto t0 = std::chrono::steady_clock::now();
    const bool tty = isatty(STDERR_FILENO);
    auto last_line = t0 - std::chrono::hours(1);
    auto progress = [&]() {
      if (!opt.progress) return;
      const auto now = std::chrono::steady_clock::now();
      const double el = std::chrono::duration<double>(now - t0).count();
      const int64_t done = sum.ran + sum.failed;
      // a log (not a terminal) gets at most a line a second and the last one: E1's 190 runs
      // wrote 190 lines
      const bool last = done == static_cast<int64_t>(todo.size());
      if (!tty && !last && done > 0 && now - last_line < std::chrono::seconds(1)) return;
      last_line = now;
      const double eta = done > 0 ? el / static_cast<double>(done) * static_cast<double>(todo.size() - done) : -1;
      const int width = 30;
      const int fill = static_cast<int>(width * done / static_cast<int64_t>(todo.size()));
      std::fprintf(stderr, "%s[%s%s] %lld/%zu runs (%lld failed, %lld skipped)  %.1f runs/s  elapsed %s  eta %s%s",
                   tty ? "\r" : "", std::string(fill, '#').c_str(), std::string(width - fill, '.').c_str(),
                   static_cast<long long>(done), todo.size(), static_cast<long long>(sum.failed),
                   static_cast<long long>(sum.skipped), el > 0 ? static_cast<double>(done) / el : 0.0,
                   eta_text(el).c_str(), eta_text(eta).c_str(), tty ? "" : "\n");
      std::fflush(stderr);
    };
    auto finished = [&](bool ok) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      (ok ? sum.ran : sum.failed) += 1;
      progress();
    };
    progress();

    if (opt.isolate) {
      std::vector<ChildRun> children;
      for (const auto* r : todo)
        children.push_back({(dir / "configs" / (r->hash + ".toml")).string(), (dir / "runs" / (r->hash + ".h5")).string(),
                            (dir / "logs" / (r->hash + ".log")).string()});
      const std::string exe = opt.stale_binary.empty() ? self_exe() : opt.stale_binary;
      run_children(exe, children, jobs, std::max(1, cores / jobs), [&](size_t, bool ok) { finished(ok); });
    } else {
      ObjectiveCache cache;
      std::vector<std::string> keys;
      for (const auto& item : items) keys.push_back(ObjectiveCache::key(item.front()->config)), cache.expect(keys.back());
      std::atomic<size_t> next{0};
      auto write_log = [&](const SweepRun& r, const std::string& text) {
        try {
          write_text_file((dir / "logs" / (r.hash + ".log")).string(), text);
        } catch (const UserError&) {
        }
      };
      // building an objective runs share is their set-up too: a stop need not wait for it
      auto shared_objective = [&](const Config& cfg, const std::string& key) {
        const RunPhase building({});
        return cache.get(cfg, key);
      };
      auto worker = [&] {
        SerialScope serial;  // one run per core: no nested parallel loops
        for (size_t i = next++; i < items.size() && !stop_requested(); i = next++) {  // SIGINT/SIGTERM: no new run
          const auto& item = items[i];
          if (item.size() == 1) {
            const SweepRun& r = *item.front();
            bool ok = false;
            std::string text;
            try {
              const auto f = shared_objective(r.config, keys[i]);
              RunOptions ro;
              ro.objective = f;
              // a run killed or interrupted earlier continues from its checkpoint (checkpoint.hpp)
              const RunResult res = run_or_resume(r.config, (dir / "runs" / (r.hash + ".h5")).string(), ro);
              text = run_summary_line(res) + "\n";
              keep_summary(r.hash, res);
              ok = true;
            } catch (const UserError& e) {
              text = std::string("error: ") + e.what() + "\n";
            } catch (const std::exception& e) {
              text = std::string("internal error: ") + e.what() + "\n";
            }
            cache.release(keys[i]);
            write_log(r, text);
            finished(ok);
            continue;
          }
          // an ensemble: every column runs (so that its arithmetic is the same whatever a
          // resume skips); a column whose file exists writes to a scratch name, removed after.
          // A killed or interrupted ensemble continues from its columns' checkpoints when
          // they hold one at the same update (run_ensemble_experiment), else starts again.
          std::vector<EnsembleColumn> columns;
          std::vector<bool> wanted;
          for (const auto* r : item) {
            const fs::path final_path = dir / "runs" / (r->hash + ".h5");
            wanted.push_back(!fs::exists(final_path));
            columns.push_back({r->config, wanted.back() ? final_path.string()
                                                        : (dir / "runs" / (".redo-" + r->hash + ".h5")).string()});
          }
          std::vector<std::string> texts(item.size());
          std::vector<bool> oks(item.size(), false);
          try {
            const auto f = shared_objective(item.front()->config, keys[i]);
            const auto results = run_ensemble_experiment(columns, f, true);
            for (size_t c = 0; c < item.size(); ++c) {
              if (!results[c].error.empty()) {
                texts[c] = "error: " + results[c].error + "\n";
              } else {
                texts[c] = run_summary_line(results[c].result) + "\n";
                if (wanted[c]) keep_summary(item[c]->hash, results[c].result);
                oks[c] = true;
              }
            }
          } catch (const UserError& e) {
            for (auto& t : texts) t = std::string("error: ") + e.what() + "\n";
          } catch (const std::exception& e) {
            for (auto& t : texts) t = std::string("internal error: ") + e.what() + "\n";
          }
          cache.release(keys[i]);
          for (size_t c = 0; c < item.size(); ++c) {
            if (!wanted[c]) {
              std::error_code ec;
              fs::remove(columns[c].path, ec);
              continue;
            }
            write_log(*item[c], texts[c]);
            finished(oks[c]);
          }
        }
      };
      std::atomic<int> workers_done{0};
      std::vector<std::thread> pool;
      for (int t = 0; t < jobs; ++t)
        pool.emplace_back([&] {
          worker();
          ++workers_done;
        });
      // Asked to stop, the sweep waits for its runs that stream (each checkpoints at its next
      // update), not for set-ups: once no run holds a run file, the command line's sweep writes
      // the index and ends (interrupt.hpp; a set-up — constants, a plan — may take minutes)
      while (workers_done.load() < jobs) {
        if (stop_requested() && abandon_set_ups()) {
          {
            std::lock_guard<std::mutex> lock(finished_mutex);
            write_sweep_index(sweep, dir.string(), finished_here);
          }
          for (auto& t : pool) t.detach();  // ended with the process, not joined
          end_process_in_set_up();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      for (auto& t : pool) t.join();
    }
    if (opt.progress && tty) std::fprintf(stderr, "\n");
  }
  fs::create_directories(dir);
  write_sweep_index(sweep, dir.string(), finished_here);
  sum.index_csv = (dir / "index.csv").string();
  return sum;
}

}  // namespace stale
