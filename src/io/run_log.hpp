#pragma once
// The run file (docs/design.md "The run file"): one HDF5 file per run, readable with plain h5py.
// Written as NAME.h5.partial and renamed to NAME.h5 by finish(); abort() removes it, so a
// failed run leaves nothing half-written under the final name.
//
// Crash consistency (issue 12): the header (root attributes, /objective) is written to
// NAME.h5.partial.new, which becomes NAME.h5.partial only once complete; from then on the
// file is held in HDF5's SWMR mode, whose ordered metadata writes keep it consistent at every
// moment — while the run writes (h5py.File(path, "r", swmr=True) reads it live) and after a
// SIGKILL (every dataset's extent matches its data; rows up to the last flush are there).
// Series are buffered and written at most log.flush_seconds apart (flush_due()); each such
// flush may carry a checkpoint (write_checkpoint): the state bag goes to the spare of two
// slots and /checkpoint/index, written last, names it, so a kill at any instant leaves the
// previous checkpoint or the new one intact. The run leaves SWMR mode to write /theory,
// /schedule and the final status, on a copy (NAME.h5.partial.closing) renamed to NAME.h5 —
// or, by interrupt(), over the .partial with status "interrupted" — so that no moment leaves a
// .partial opened for writing outside SWMR mode (which nobody could open).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/core/state_bag.hpp"
#include "src/core/types.hpp"
#include "src/pipeline/delay_moments.hpp"
#include "src/pipeline/schedule.hpp"
#include "src/pipeline/simulator.hpp"

namespace stale {

struct MetricsRow {
  int64_t k = 0;
  double time = 0, loss = 0, subopt = 0, grad_norm_sq = 0, grad_norm_sq_mean = 0, stale_dist = 0;
  int64_t stage = -1, batch = -1;
  double bound = 0, bound_opt = 0, bound_stoch = 0, bound_stale = 0, G = 0, wall = 0;
  double batch_loss = 0;  // loss at the last stage's forward of the latest update's micro-batch
  double val_loss = 0;    // held-out loss (NaN when the objective has no held-out set)
};

struct TheoryConstants {
  double L = 0, mu = 0, f_star = 0, delta = 0, G = 0, lr = 0, delta0 = 0;
  int64_t stages = 0, updates = 0;
  bool L_exact = false;
  std::string f_star_method, delay_model;
  double delay_mean = 0;
  int64_t updates_planned = 0;   // K of the run's plan (updates = what it did: fewer if it diverged)
  std::string updates_note;      // how K was derived when it is not method.updates
  std::string lr_note = "constant";  // which γ the bound uses
};

// What a .partial holds for `stale run --resume` (read_partial_run)
struct PartialRun {
  std::string path;         // the .partial read
  std::string config;       // the resolved config (root attribute)
  std::string status;       // running (a live or killed run) or interrupted
  std::string started;
  bool has_checkpoint = false;
  int64_t k = 0;            // updates done at the checkpoint
  int64_t writer_pid = 0;   // the process that wrote it, on writer_host (a live run is not resumed)
  std::string writer_host;
  StateBag state;           // method/, metrics/, log/
};
// reads a run's .partial (a live, killed or interrupted one); UserError naming the file when
// it is not a run file
PartialRun read_partial_run(const std::string& partial_path);

class RunLog {
 public:
  // creates path + ".partial" (through path + ".partial.new"); parent directories are created.
  // Series are flushed at most flush_seconds apart (0: at every flush_due() check)
  explicit RunLog(const std::string& path, int64_t dim, int64_t stages, bool keep_delay_table,
                  double flush_seconds = 5.0);
  ~RunLog();  // aborts when neither finish() nor abort() ran
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;

  void write_root(const std::string& config_toml, int64_t seed, const std::string& backend, const std::string& device,
                  const std::string& precision);
  void write_objective(const std::string& name, int64_t n, int64_t d, const std::vector<int64_t>& block_sizes, double L,
                       double mu, double f_star, int64_t batches, const std::string& description);
  // the data file the objective read: resolved path, size and SHA-256 (attributes of /objective)
  void write_data_record(const std::string& path, int64_t bytes, const std::string& sha256);
  void append_metrics(const MetricsRow& row);
  void append_iterate(int64_t k, const Vec& w);
  // delays of update k (one per block); kept as a K × S table, or summarised when too big
  void append_delays(const std::vector<int64_t>& delays);
  void write_theory(const TheoryConstants& t);
  // schedule-driven methods: /schedule (op table while it fits, makespan, bubbles, peak
  // memory) and the crossing counts the run measured per block (PACI's drift)
  void write_schedule(const Schedule& s, const SimResult& sim, const std::vector<int64_t>& measured_crossed);
  // /delay_moments: the delay distribution along the run (src/io/delay_moments_file.hpp)
  void write_delay_moments(const DelayMoments& m);
  void flush();
  // the header is complete: the file becomes path.partial and enters SWMR mode (the first
  // append does this itself)
  void start_streaming();
  // log.flush_seconds have passed since the last timed flush or checkpoint (flushes of full
  // buffers do not count: they would starve the checkpoints)
  bool flush_due() const;
  // a timed flush without a checkpoint (a method that cannot checkpoint)
  void flush_now();
  // flush, then `state` (plus the log's own counters under log/) as the checkpoint at k
  void write_checkpoint(const StateBag& state, int64_t k);
  // resume: take the rows of `from` up to its checkpoint (and its delay summary and start
  // time); call before start_streaming
  void adopt(const PartialRun& from);
  void finish(const std::string& status, double wall_seconds, const std::string& message = "");
  // stopped by a signal (after its checkpoint): the .partial stays, with status "interrupted"
  void interrupt(double wall_seconds, const std::string& message);
  void abort();

  const std::string& path() const { return path_; }
  // K·S above which /delays holds summary statistics instead of the table
  static constexpr int64_t kMaxDelayEntries = 10'000'000;

 private:
  void end_streaming();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string path_;
};

}  // namespace stale
