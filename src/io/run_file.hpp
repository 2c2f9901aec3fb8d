#pragma once
// The run file (docs/design.md "The run file"): one HDF5 file per run, readable with plain h5py;
// the RunLog (src/io/run_log.hpp) of every run that has a path. Its /metrics datasets follow
// the metrics table (src/io/metrics_schema.hpp), each with a `unit` and a `description`
// attribute. Written as NAME.h5.partial and renamed to NAME.h5 by finish(); abort() removes
// what it wrote — but never a .partial that holds a checkpoint (its own, or the one a resume
// started from): a failure (a full disk, a read error) leaves the last good checkpoint, and
// only a finished run or --force replaces it (issue 34).
//
// Crash consistency (issue 12): the header (root attributes, /objective) is written to
// NAME.h5.partial.new, which becomes NAME.h5.partial only once complete; from then on the
// file is held in HDF5's SWMR mode, whose ordered metadata writes keep it consistent at every
// moment — while the run writes (h5py.File(path, "r", swmr=True) reads it live) and after a
// SIGKILL (every dataset's extent matches its data; rows up to the last flush are there).
// A run that ends within its first log.flush_seconds never streams: its buffered rows go into
// the header's file, which is renamed to NAME.h5 (no .partial ever exists; a kill before then
// leaves only the .partial.new, and a rerun starts afresh).
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

#include "src/io/run_log.hpp"

namespace stale {

// the run file's layout version (root attribute schema_version)
inline constexpr int64_t kRunFileSchemaVersion = 1;

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
  std::string writer_started;  // that process's identity (process_identity; "" in files before it)
  std::string version;      // of the stale that wrote it, and its run file schema
  int64_t schema_version = 0;
  std::string data_sha256;  // the data file's checksum the run started from ("" without one)
  // the objective's shape the run started on (/objective: n, block sizes, batches; empty
  // block_sizes where the header lacks them): a checkpoint continues only on the same
  int64_t samples = -1, batches = -1;
  std::vector<int64_t> block_sizes;
  // the checkpoint's own record of the config and the data (checksummed with it): an edit of
  // the file's config attribute, or data of other bytes, shows against it
  bool config_edited = false;
  bool has_data_fingerprint = false;
  uint64_t data_fingerprint = 0;
  StateBag state;           // method/, metrics/, log/, run/
};
// reads a run's .partial (a live, killed or interrupted one); UserError naming the file and
// what is damaged when it is not a readable run file (the file is never touched)
PartialRun read_partial_run(const std::string& partial_path);
// the resolved config a run file or .partial records (its root attribute `config`), without
// reading anything else; UserError naming the file when it cannot be opened or has none
std::string read_run_config(const std::string& path);
// whether `path` opens as an HDF5 file with a run's status: false for a file whose writer could
// not close it (a full disk), a truncated one, or none; what a finished name and a sweep's
// "done" require
bool run_file_opens(const std::string& path);
// what a checkpoint records of a text (the config, the data's SHA-256): FNV-1a, 64 bits
uint64_t text_fingerprint(const std::string& text);

class RunFile final : public RunLog {
 public:
  // creates path + ".partial" (through path + ".partial.new"); parent directories are created.
  // Series are flushed at most flush_seconds apart (0: at every flush_due() check), and no
  // sooner than 20 times the last checkpoint's write time after it
  explicit RunFile(const std::string& path, int64_t dim, int64_t stages, bool keep_delay_table,
                   double flush_seconds = 5.0);
  ~RunFile() override;  // aborts when neither finish() nor abort() ran
  RunFile(const RunFile&) = delete;
  RunFile& operator=(const RunFile&) = delete;

  void write_root(const std::string& config_toml, int64_t seed, const std::string& backend, const std::string& device,
                  const std::string& precision) override;
  void write_objective(const std::string& name, int64_t n, int64_t d, const std::vector<int64_t>& block_sizes, double L,
                       double mu, double f_star, bool f_star_is_lower_bound, int64_t batches,
                       const std::string& description) override;
  void write_data_record(const std::string& path, int64_t bytes, const std::string& sha256) override;
  void append_metrics(const MetricsRow& row) override;
  void expect_rows(int64_t metric_rows, int64_t iterate_rows, int64_t delay_rows) override;
  void append_iterate(int64_t k, const Vec& w) override;
  void append_delays(const std::vector<int64_t>& delays) override;
  bool flush_due() const override;
  void flush_now() override;
  void write_checkpoint(StateBag&& state, int64_t k) override;
  void write_theory(const TheoryConstants& t) override;
  // /schedule: the op table while it fits, makespan, bubbles, peak memory
  void write_schedule(const Schedule& s, const SimResult& sim, const std::vector<int64_t>& measured_crossed) override;
  // /delay_moments (src/io/delay_moments_file.hpp)
  void write_delay_moments(const DelayMoments& m) override;
  void finish(const std::string& status, double wall_seconds, const std::string& message = "") override;
  // the .partial stays, with status "interrupted"
  void interrupt(double wall_seconds, const std::string& message) override;
  void abort() override;

  // resume: take the rows of `from` up to its checkpoint (and its delay summary and start
  // time); call before the first append
  void adopt(const PartialRun& from);
  // a root attribute of the run's own (e.g. what a forced resume continued despite)
  void write_note(const std::string& name, const std::string& value);
  const std::string& path() const { return path_; }

 private:
  // the buffered series into the file (and, while streaming, to disk)
  void flush();
  // the file becomes path.partial and enters SWMR mode: at the first flush that is due, or a
  // checkpoint
  void start_streaming();
  // keep_checkpoint: the run is interrupted and its .partial must stay resumable; else the
  // run finishes and its closing copy leaves the checkpoint out
  void end_streaming(bool keep_checkpoint = false);
  void chunk_full();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string path_;
};

}  // namespace stale
