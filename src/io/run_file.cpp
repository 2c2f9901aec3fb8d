#include "src/io/run_file.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <unistd.h>

#include <type_traits>
#include <variant>

#include "src/core/build_info.hpp"
#include "src/core/error.hpp"
#include "src/core/process_identity.hpp"
#include "src/io/delay_moments_file.hpp"
#include "src/io/h5.hpp"
#include "src/io/schedule_file.hpp"
#include "src/io/theory_record.hpp"

namespace stale {

namespace {
std::string now_iso() {
  const auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  // gmtime_r: std::gmtime's one static struct was written by every run of an in-process
  // sweep at once (ThreadSanitizer, scripts/test.sh --sanitize=thread)
  std::tm utc{};
  gmtime_r(&t, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}
constexpr hsize_t kChunk = 1024;
// what the series buffers may hold before a run must stream (RunFile::chunk_full)
constexpr size_t kHeaderBufferBytes = size_t{64} << 20;
hid_t h5_type(ColumnType t) { return t == ColumnType::Int64 ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE; }
constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull, kFnvPrime = 0x100000001b3ull;
// The logged rows' checksum (issue 34): FNV-1a over the 8-byte words of each series as it is
// appended (every value in memory is a double or an int64), carried in the checkpoint — which
// is itself checksummed — so that a resume refuses rows damaged on disk.
void hash_words(uint64_t& h, const void* data, size_t words) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < words; ++i, p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kFnvPrime;
  }
}
// free space for `bytes` more beside `path`, else DiskFull naming the folder and both sizes
void need_space(const std::string& path, uint64_t bytes, const std::string& why) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::absolute(fs::path(path)).parent_path();
  std::error_code ec;
  const auto space = fs::space(dir, ec);
  if (ec || space.available >= bytes) return;
  throw DiskFull(why + " needs about " + std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB but " +
                     dir.string() + " has " + std::to_string(space.available >> 20) + " MiB free");
}
}  // namespace

uint64_t text_fingerprint(const std::string& text) {
  uint64_t h = kFnvOffset;
  for (unsigned char c : text) h = (h ^ c) * kFnvPrime;
  return h;
}

struct RunFile::Impl {
  h5::Handle file, metrics, theory;
  std::vector<h5::Appendable> series;  // /metrics, one per row of metric_columns()
  std::vector<MetricsRow> rows;
  h5::Appendable iterates, iterates_k;
  std::vector<double> it_buf;
  std::vector<int64_t> itk_buf;
  int64_t dim = 0, stages = 0;
  // delays: full table while it fits, else running summary
  bool keep_table = false;
  h5::Appendable delay_table;
  std::vector<int64_t> delay_buf;
  DelaySummary delay_summary;
  // checkpoints: two slots and the index naming the valid one {valid, slot, bytes, k}
  h5::Handle slot[2], index;
  int last_slot = 1;
  // phases: the header (ordinary mode, under .partial.new), streaming (SWMR), closing
  enum class Phase { Header, Streaming, Closing } phase = Phase::Header;
  std::string partial, fresh, closing;  // path.partial, path.partial.new, path.partial.closing
  double flush_seconds = 5.0;
  double checkpoint_seconds = 0;  // how long the last checkpoint took to write
  std::chrono::steady_clock::time_point last_flush = std::chrono::steady_clock::now();
  // bytes the series buffers hold (what the header phase may keep before it must stream)
  size_t buffered_bytes() const {
    return rows.size() * sizeof(MetricsRow) + it_buf.size() * sizeof(double) + itk_buf.size() * sizeof(int64_t) +
           delay_buf.size() * sizeof(int64_t);
  }
  bool done = false;
  // the .partial at `partial`: put there by this run (else it is an earlier run's, e.g. the one
  // a resume continues), and holding a checkpoint — abort() never removes one that does
  bool partial_ours = false, partial_checkpointed = false;
  // checksums of the rows in the file, one per series: the metric columns, iterates,
  // iterates_k, the delay table (hash_words)
  std::vector<uint64_t> rows_hash;
  std::string config_toml, data_sha;  // recorded by the checkpoint (run/config, run/data)
  size_t hashes() const { return metric_columns().size() + 3; }
  // The series (metrics, iterates, delays) and the checkpoint slots are created when the run
  // first streams (growable, chunked) or, for a run that ends before it streams, at its end
  // with exactly the rows it has (write_once): a short run's file then holds no chunk index,
  // no filter and no checkpoint it would delete again.
  bool growable = false;
  void create_growable() {
    if (growable) return;
    auto m = h5::open_group(file.id(), "metrics");
    for (const auto& c : metric_columns()) {
      series.emplace_back(m.id(), c.name, h5_type(c.type()), 0, kChunk);
      describe(series.back().id(), c);
    }
    iterates = h5::Appendable(file.id(), "iterates", H5T_NATIVE_DOUBLE, static_cast<hsize_t>(dim), iterate_chunk(),
                              -1, false);  // full-precision iterates: deflate saves ~23 % at most of a small run's time
    iterates_k = h5::Appendable(file.id(), "iterates_k", H5T_NATIVE_INT64, 0, 256);
    if (keep_table)
      // int32 on disk: a delay is below 2^31 by the version store's own limit
      delay_table = h5::Appendable(file.id(), "delays", H5T_NATIVE_INT64, static_cast<hsize_t>(stages),
                                   delay_chunk(), H5T_STD_I32LE);
    create_checkpoint();
    growable = true;
  }
  void create_checkpoint() {
    auto ck = h5::create_group(file.id(), "checkpoint");
    slot[0] = h5::create_bytes(ck.id(), "state_0", 1 << 16);
    slot[1] = h5::create_bytes(ck.id(), "state_1", 1 << 16);
    h5::write_vector(ck.id(), "index", std::vector<int64_t>{0, 0, 0, 0});
    index = h5::open_dataset(ck.id(), "index");
  }
  // use(c, mem_type, values) for each metric column c with the buffered rows' values of it
  template <class Use>
  void for_each_column(Use&& use) const {
    const size_t n = rows.size();
    std::vector<double> col(n);
    std::vector<int64_t> icol(n);
    const auto& columns = metric_columns();
    for (size_t c = 0; c < columns.size(); ++c)
      std::visit(
          [&](auto member) {
            if constexpr (std::is_same_v<decltype(member), int64_t MetricsRow::*>) {
              for (size_t r = 0; r < n; ++r) icol[r] = rows[r].*member;
              use(c, H5T_NATIVE_INT64, static_cast<const void*>(icol.data()));
            } else {
              for (size_t r = 0; r < n; ++r) col[r] = rows[r].*member;
              use(c, H5T_NATIVE_DOUBLE, static_cast<const void*>(col.data()));
            }
          },
          columns[c].member);
  }
  // the buffered rows as datasets of exactly their length (the run never streamed)
  void write_once() {
    auto m = h5::open_group(file.id(), "metrics");
    for_each_column([&](size_t c, hid_t type, const void* values) {
      const auto& column = metric_columns()[c];
      describe(h5::write_rows(m.id(), column.name, type, 0, values, rows.size(), kChunk).id(), column);
    });
    rows.clear();
    h5::write_rows(file.id(), "iterates", H5T_NATIVE_DOUBLE, static_cast<hsize_t>(dim), it_buf.data(), itk_buf.size(),
                   iterate_chunk(), -1, false);
    h5::write_rows(file.id(), "iterates_k", H5T_NATIVE_INT64, 0, itk_buf.data(), itk_buf.size(), 256);
    it_buf.clear();
    itk_buf.clear();
    if (!delay_buf.empty()) {
      h5::write_rows(file.id(), "delays", H5T_NATIVE_INT64, static_cast<hsize_t>(stages), delay_buf.data(),
                     delay_buf.size() / static_cast<size_t>(stages), delay_chunk(), H5T_STD_I32LE);
      delay_buf.clear();
    }
  }
  static void describe(hid_t dset, const MetricColumn& c) {
    h5::write_attr(dset, "unit", std::string(c.unit));
    h5::write_attr(dset, "description", std::string(c.description));
  }
  hsize_t iterate_chunk() const {
    return std::max<hsize_t>(1, std::min<hsize_t>(64, (1 << 16) / static_cast<hsize_t>(dim) + 1));
  }
  hsize_t delay_chunk() const { return std::max<hsize_t>(64, (1 << 16) / static_cast<hsize_t>(stages)); }
  // every dataset, then the file: HDF5 flushes and releases them in that order
  void close() {
    series.clear();
    iterates = h5::Appendable();
    iterates_k = h5::Appendable();
    delay_table = h5::Appendable();
    slot[0] = h5::Handle();
    slot[1] = h5::Handle();
    index = h5::Handle();
    metrics = h5::Handle();
    theory = h5::Handle();
    file = h5::Handle();
  }
  // the datasets of a (re)opened file; no group handle stays open (SWMR mode wants none)
  void open_datasets() {
    series.clear();
    for (const auto& c : metric_columns())
      series.push_back(h5::Appendable::open(file.id(), std::string("metrics/") + c.name, h5_type(c.type()), 0));
    iterates = h5::Appendable::open(file.id(), "iterates", H5T_NATIVE_DOUBLE, static_cast<hsize_t>(dim));
    iterates_k = h5::Appendable::open(file.id(), "iterates_k", H5T_NATIVE_INT64, 0);
    if (keep_table) delay_table = h5::Appendable::open(file.id(), "delays", H5T_NATIVE_INT64, static_cast<hsize_t>(stages));
    if (h5::exists(file.id(), "checkpoint/index")) {
      slot[0] = h5::open_dataset(file.id(), "checkpoint/state_0");
      slot[1] = h5::open_dataset(file.id(), "checkpoint/state_1");
      index = h5::open_dataset(file.id(), "checkpoint/index");
    }
  }
  // close(), and the file's own close checked, then the file opened again read-only: a run
  // file gets its finished (or interrupted) name only once it is known to be readable. A close
  // that failed (a full disk: HDF5 could not write its last metadata) left a file that no one
  // can open ("file is already open for write"), which a rename would have called done.
  // close(), the file's own close last and checked (DiskFull when HDF5 could not write what it held)
  void close_checked(const std::string& what) {
    h5::Handle f = std::move(file);
    close();
    h5::close_checked(f, what);
  }
  void close_verified(const std::string& path) {
    close_checked(path + " (the run file is not finished)");
    if (!run_file_opens(path))
      throw UserError(path + ": the run file cannot be read back after closing (is the disk full?); it is not finished");
  }
  void reopen(const std::string& path, bool swmr) {
    close();
    file = h5::open_file_rdwr(path, swmr);
    open_datasets();
  }
};

RunFile::RunFile(const std::string& path, int64_t dim, int64_t stages, bool keep_delay_table, double flush_seconds)
    : impl_(std::make_unique<Impl>()), path_(path) {
  namespace fs = std::filesystem;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec) throw UserError(path + ": cannot create directory " + parent.string() + " (" + ec.message() + ")");
  }
  auto& I = *impl_;
  I.partial = path + ".partial";
  I.fresh = path + ".partial.new";
  I.closing = path + ".partial.closing";
  I.flush_seconds = flush_seconds;
  I.rows_hash.assign(I.hashes(), kFnvOffset);
  I.file = h5::create_file_swmr_capable(I.fresh);
  I.dim = dim;
  I.stages = stages;
  I.keep_table = keep_delay_table;
  // the growable datasets are created and kept open once the run streams (opening them again
  // cost as much as creating them)
  h5::create_group(I.file.id(), "metrics");
  I.delay_summary = DelaySummary(stages);
  h5::write_attr(I.file.id(), "started", now_iso());
  h5::write_attr(I.file.id(), "status", std::string("running"));
  // who writes it: `stale run --resume` refuses a .partial that a live process still writes
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  h5::write_attr(I.file.id(), "writer_pid", static_cast<int64_t>(getpid()));
  h5::write_attr(I.file.id(), "writer_host", std::string(host));
  // which process that pid is (pids are reused): a later run tells the writer from a newcomer
  h5::write_attr(I.file.id(), "writer_started", process_identity(getpid()));
}

void RunFile::start_streaming() {
  auto& I = *impl_;
  if (I.phase != Impl::Phase::Header) return;
  I.create_growable();
  // checked: a close that could not write the file's metadata (a full disk before the first
  // flush) left a file that reopening would read as garbage
  I.close_checked(I.fresh);
  std::error_code ec;
  std::filesystem::rename(I.fresh, I.partial, ec);
  if (ec) throw UserError(I.partial + ": cannot rename the new run file into place (" + ec.message() + ")");
  I.partial_ours = true;
  I.reopen(I.partial, true);
  I.phase = Impl::Phase::Streaming;
  I.last_flush = std::chrono::steady_clock::now();
}

void RunFile::flush_now() {
  start_streaming();
  flush();
  impl_->last_flush = std::chrono::steady_clock::now();
}

// A buffer is full. Streaming starts at the first flush that is due (or once the buffers
// would hold more than kHeaderBufferBytes): a run that ends sooner never enters SWMR mode and
// writes its file once — the close, reopen and copy of streaming were most of a short run's
// file cost (a 3200-update E1 run in a sweep: ~13 ms of HDF5 per run, measured with perf).
void RunFile::chunk_full() {
  auto& I = *impl_;
  if (I.phase == Impl::Phase::Header && !flush_due() && I.buffered_bytes() < kHeaderBufferBytes) return;
  start_streaming();
  flush();
}

// At most a twentieth of the run goes to checkpoints: the next one waits at least 20 times as
// long as the last took. A checkpoint of an 11.1M-parameter PipeDream run (its weight
// versions; LocalSGD's 16 replicas) is gigabytes, and every 5 s that was most of the run's time
// and disk bandwidth (results/gpu/gpu_check_2026-11-24.md). log.flush_seconds = 0 (every
// update) is taken as asked.
bool RunFile::flush_due() const {
  const auto& I = *impl_;
  const double wait = I.flush_seconds > 0 ? std::max(I.flush_seconds, 20.0 * I.checkpoint_seconds) : 0.0;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - I.last_flush).count() >= wait;
}

RunFile::~RunFile() {
  if (impl_ && !impl_->done) {
    try {
      abort();
    } catch (...) {
    }
  }
}

void RunFile::write_root(const std::string& config_toml, int64_t seed, const std::string& backend,
                        const std::string& device, const std::string& precision) {
  const hid_t f = impl_->file.id();
  h5::write_attr(f, "schema_version", kRunFileSchemaVersion);
  h5::write_attr(f, "version", std::string(build::version));
  h5::write_attr(f, "git_sha", std::string(build::git_sha));
  // which code computed it: run files of one target carry the same bits on every machine
  h5::write_attr(f, "cpu_target", std::string(build::cpu_target));
  h5::write_attr(f, "config", config_toml);
  impl_->config_toml = config_toml;
  h5::write_attr(f, "seed", seed);
  h5::write_attr(f, "backend", backend);
  h5::write_attr(f, "device", device);
  h5::write_attr(f, "precision", precision);
}

void RunFile::write_objective(const std::string& name, int64_t n, int64_t d, const std::vector<int64_t>& block_sizes,
                             double L, double mu, double f_star, bool f_star_is_lower_bound, int64_t batches,
                             const std::string& description) {
  auto g = h5::create_group(impl_->file.id(), "objective");
  h5::write_attr(g.id(), "name", name);
  h5::write_attr(g.id(), "n", n);
  h5::write_attr(g.id(), "d", d);
  h5::write_attr(g.id(), "S", static_cast<int64_t>(block_sizes.size()));
  h5::write_attr(g.id(), "block_sizes", block_sizes);
  h5::write_attr(g.id(), "L", L);
  h5::write_attr(g.id(), "mu", mu);
  h5::write_attr(g.id(), "f_star", f_star);
  // only where it is true, so that the files of convex objectives keep their attributes
  if (f_star_is_lower_bound) h5::write_attr(g.id(), "f_star_is_lower_bound", int64_t{1});
  h5::write_attr(g.id(), "batches", batches);
  h5::write_attr(g.id(), "description", description);
}

void RunFile::write_data_record(const std::string& path, int64_t bytes, const std::string& sha256) {
  auto g = h5::open_group(impl_->file.id(), "objective");
  h5::write_attr(g.id(), "data_path", path);
  h5::write_attr(g.id(), "data_bytes", bytes);
  h5::write_attr(g.id(), "data_sha256", sha256);
  impl_->data_sha = sha256;
}

void RunFile::write_note(const std::string& name, const std::string& value) {
  h5::write_attr(impl_->file.id(), name, value);
}

void RunFile::append_metrics(const MetricsRow& row) {
  impl_->rows.push_back(row);
  if (impl_->rows.size() % kChunk == 0) chunk_full();
}

// Reserving touches no memory: pages are mapped as rows arrive. Only what the header phase may
// hold is reserved (a streaming run writes its rows out in chunks).
void RunFile::expect_rows(int64_t metric_rows, int64_t iterate_rows, int64_t delay_rows) {
  auto& I = *impl_;
  if (I.phase != Impl::Phase::Header) return;
  const auto fit = [](int64_t rows, int64_t row_bytes) {
    return static_cast<size_t>(std::clamp<int64_t>(rows, 0, static_cast<int64_t>(kHeaderBufferBytes) / std::max<int64_t>(1, row_bytes)));
  };
  I.rows.reserve(fit(metric_rows, sizeof(MetricsRow)));
  I.it_buf.reserve(fit(iterate_rows, I.dim * static_cast<int64_t>(sizeof(double))) * static_cast<size_t>(I.dim));
  I.itk_buf.reserve(fit(iterate_rows, I.dim * static_cast<int64_t>(sizeof(double))));
  if (I.keep_table)
    I.delay_buf.reserve(fit(delay_rows, I.stages * static_cast<int64_t>(sizeof(int64_t))) * static_cast<size_t>(I.stages));
}

void RunFile::append_iterate(int64_t k, const Vec& w) {
  impl_->it_buf.insert(impl_->it_buf.end(), w.data(), w.data() + w.size());
  impl_->itk_buf.push_back(k);
  if (impl_->itk_buf.size() % 64 == 0) chunk_full();
}

void RunFile::append_delays(const std::vector<int64_t>& d) {
  auto& I = *impl_;
  I.delay_summary.add(d);
  if (!I.keep_table) return;
  I.delay_buf.insert(I.delay_buf.end(), d.begin(), d.begin() + I.stages);
  if (I.delay_buf.size() % (static_cast<size_t>(I.stages) * 4096) == 0) chunk_full();
}

// The run is over: leave SWMR mode (objects and attributes can be created again). A file
// opened for writing outside SWMR mode cannot be opened by anyone until it is closed, so the
// last writes go to a copy (path.partial.closing) that replaces the .partial or becomes the
// finished file by a rename: a kill at any moment leaves the .partial readable.
void RunFile::end_streaming(bool keep_checkpoint) {
  auto& I = *impl_;
  if (I.phase == Impl::Phase::Closing) return;
  if (I.phase == Impl::Phase::Header) {
    // it never streamed: the buffered rows go into the header's file, which is the closing copy
    if (I.growable) flush();  // a resumed run's adopted rows are in growable datasets
    else I.write_once();
    std::error_code ec;
    std::filesystem::rename(I.fresh, I.closing, ec);
    if (ec) throw UserError(I.closing + ": cannot rename the run file to finish it (" + ec.message() + ")");
    I.phase = Impl::Phase::Closing;
    return;
  }
  flush();
  I.close();
  // a compact copy: the .partial keeps the space of every chunk its flushes rewrote (and a
  // finished file no checkpoint). It needs room beside the .partial: checked first (HDF5 1.10
  // crashed with SIGSEGV when H5Ocopy met a full disk), and a copy that fails is removed
  const std::vector<std::string> skip = keep_checkpoint ? std::vector<std::string>{} : std::vector<std::string>{"checkpoint"};
  need_space(I.closing, h5::stored_bytes(I.partial, skip) + (uint64_t{1} << 20),
             "finishing the run writes a compact copy of " + I.partial + ", which");
  try {
    h5::copy_compact(I.partial, I.closing, skip);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(I.closing, ec);
    throw;
  }
  I.reopen(I.closing, false);
  I.phase = Impl::Phase::Closing;
}

void RunFile::write_theory(const TheoryConstants& t) {
  end_streaming();
  auto g = h5::create_group(impl_->file.id(), "theory");
  for (const TheoryEntry& e : theory_record(t))
    std::visit([&](const auto& v) { h5::write_attr(g.id(), e.name, v); }, e.value);
  // the series whose values depend on L carry its source too
  for (const char* name : {"bound", "bound_stoch", "bound_stale"}) {
    const std::string path = std::string("metrics/") + name;
    if (!h5::exists(impl_->file.id(), path)) continue;
    auto d = h5::open_dataset(impl_->file.id(), path);
    h5::write_attr(d.id(), "L_source", t.L_source);
  }
}

void RunFile::write_schedule(const Schedule& s, const SimResult& sim, const std::vector<int64_t>& measured_crossed) {
  end_streaming();
  write_schedule_group(impl_->file.id(), s, sim, static_cast<int64_t>(s.ops.size()) <= kMaxDelayEntries);
  auto g = h5::open_group(impl_->file.id(), "schedule");
  h5::write_attr(g.id(), "name", s.name);
  h5::write_attr(g.id(), "microbatches", s.microbatches);
  h5::write_attr(g.id(), "accumulation", int64_t{s.accumulation});
  h5::write_attr(g.id(), "replicas", int64_t{s.replicas});
  h5::write_attr(g.id(), "stash", int64_t{s.stash});
  h5::write_vector(g.id(), "max_crossed_simulated", sim.max_crossed);
  h5::write_vector(g.id(), "max_crossed_measured", measured_crossed);
  h5::write_attr(g.id(), "max_delay", sim.delays.max_overall());
  h5::write_attr(g.id(), "steady_max_delay", sim.steady_delays.max_overall());
  h5::write_attr(g.id(), "steady_mean_delay", sim.steady_delays.updates() ? sim.steady_delays.mean_overall() : 0.0);
}

void RunFile::write_delay_moments(const DelayMoments& m) { write_delay_moments_group(impl_->file.id(), m); }

void RunFile::flush() {
  auto& I = *impl_;
  const size_t C = metric_columns().size();
  if (!I.rows.empty()) {
    I.for_each_column([&](size_t c, hid_t, const void* values) {
      I.series[c].append(values, I.rows.size());
      hash_words(I.rows_hash[c], values, I.rows.size());
    });
    I.rows.clear();
  }
  if (!I.itk_buf.empty()) {
    I.iterates.append(I.it_buf.data(), I.itk_buf.size());
    I.iterates_k.append(I.itk_buf.data(), I.itk_buf.size());
    hash_words(I.rows_hash[C], I.it_buf.data(), I.it_buf.size());
    hash_words(I.rows_hash[C + 1], I.itk_buf.data(), I.itk_buf.size());
    I.it_buf.clear();
    I.itk_buf.clear();
  }
  if (!I.delay_buf.empty()) {
    I.delay_table.append(I.delay_buf.data(), I.delay_buf.size() / static_cast<size_t>(I.stages));
    hash_words(I.rows_hash[C + 2], I.delay_buf.data(), I.delay_buf.size());
    I.delay_buf.clear();
  }
  if (I.phase == Impl::Phase::Streaming) h5::flush_file(I.file.id());  // else closing the file writes it
}

void RunFile::write_checkpoint(StateBag&& all, int64_t k) {
  auto& I = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  start_streaming();
  flush();  // every row up to k is in the file before the checkpoint that counts them
  all.put("log/metrics_rows", static_cast<int64_t>(I.series.front().rows()));
  all.put("log/iterate_rows", static_cast<int64_t>(I.iterates.rows()));
  all.put("log/delay_table_rows", static_cast<int64_t>(I.keep_table ? I.delay_table.rows() : 0));
  all.put("log/delay_rows", I.delay_summary.updates);
  all.put_ints("log/delay_max", I.delay_summary.max);
  all.put_doubles("log/delay_sum", I.delay_summary.sum);
  all.put_u64("log/rows_hash", I.rows_hash.data(), I.rows_hash.size());
  const uint64_t identity[2] = {text_fingerprint(I.config_toml), text_fingerprint(I.data_sha)};
  all.put_u64("run/identity", identity, 2);
  // streamed into the slot: no serialized copy of the state is held in memory
  const int s = 1 - I.last_slot;
  const size_t n = all.serialized_size();
  h5::reserve_bytes(I.slot[s].id(), n);
  hsize_t at = 0;
  all.serialize_to([&](const uint8_t* p, size_t k) {
    h5::write_bytes_at(I.slot[s].id(), at, p, k);
    at += k;
  });
  h5::flush_file(I.file.id());  // the slot is complete before the index names it
  h5::overwrite_ints(I.index.id(), {1, s, static_cast<int64_t>(n), k});
  h5::flush_file(I.file.id());
  I.last_slot = s;
  I.partial_checkpointed = true;
  I.last_flush = std::chrono::steady_clock::now();
  I.checkpoint_seconds = std::chrono::duration<double>(I.last_flush - t0).count();
}

void RunFile::adopt(const PartialRun& from) {
  auto& I = *impl_;
  STALE_CHECK(I.phase == Impl::Phase::Header, "adopt before the run file streams");
  h5::write_attr(I.file.id(), "started", from.started);
  if (!from.has_checkpoint) return;
  I.create_growable();
  const StateBag& st = from.state;
  auto old = h5::open_file_readonly(from.path);
  // copy rows [0, n) of a series in blocks, and checksum them as flush() did
  std::vector<uint64_t> found(I.hashes(), kFnvOffset);
  auto copy = [&](const std::string& name, h5::Appendable& to, hid_t type, size_t width, hsize_t cols, int64_t n,
                  size_t series) {
    auto d = h5::open_dataset(old.id(), name);
    if (static_cast<int64_t>(h5::dataset_rows(d.id())) < n)
      throw UserError(from.path + ": " + name + " holds fewer rows than its checkpoint counts");
    const hsize_t per = std::max<hsize_t>(cols, 1);
    const hsize_t block = std::max<hsize_t>(1, (1 << 20) / per);
    std::vector<uint8_t> buf;
    for (hsize_t r = 0; r < static_cast<hsize_t>(n); r += block) {
      const hsize_t c = std::min<hsize_t>(block, static_cast<hsize_t>(n) - r);
      buf.resize(c * per * width);
      try {
        h5::read_rows(d.id(), type, r, c, cols, buf.data());
      } catch (const UserError&) {
        throw UserError(from.path + ": damaged: rows " + std::to_string(r) + " to " + std::to_string(r + c) + " of /" +
                        name + " cannot be read; the file is kept: rerun with --force to start afresh");
      }
      to.append(buf.data(), c);
      hash_words(found[series], buf.data(), buf.size() / 8);
    }
  };
  const int64_t rows = st.get_int("log/metrics_rows");
  const auto& columns = metric_columns();
  for (size_t c = 0; c < columns.size(); ++c)
    copy(std::string("metrics/") + columns[c].name, I.series[c], h5_type(columns[c].type()), 8, 0, rows, c);
  const int64_t it = st.get_int("log/iterate_rows");
  const size_t C = columns.size();
  copy("iterates", I.iterates, H5T_NATIVE_DOUBLE, 8, static_cast<hsize_t>(I.dim), it, C);
  copy("iterates_k", I.iterates_k, H5T_NATIVE_INT64, 8, 0, it, C + 1);
  if (I.keep_table)
    copy("delays", I.delay_table, H5T_NATIVE_INT64, 8, static_cast<hsize_t>(I.stages), st.get_int("log/delay_table_rows"),
         C + 2);
  // rows that do not match the checkpoint's checksum of them were damaged after they were
  // written: a run file must not carry them on as results
  if (st.has("log/rows_hash")) {
    std::vector<uint64_t> expected(I.hashes());
    st.get_u64("log/rows_hash", expected.data(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i)
      if (expected[i] != found[i]) {
        const std::string name = i < C ? std::string("metrics/") + columns[i].name
                                       : (i == C ? "iterates" : i == C + 1 ? "iterates_k" : "delays");
        throw UserError(from.path + ": damaged: the logged rows of /" + name +
                        " differ from the checkpoint's checksum of them; the file is kept: rerun with --force to start "
                        "afresh");
      }
  }
  I.rows_hash = found;
  I.delay_summary.updates = st.get_int("log/delay_rows");
  I.delay_summary.max = st.get_ints("log/delay_max");
  I.delay_summary.sum = st.get_doubles("log/delay_sum");
  if (static_cast<int64_t>(I.delay_summary.max.size()) != I.stages ||
      static_cast<int64_t>(I.delay_summary.sum.size()) != I.stages)
    throw UserError(from.path + ": the checkpoint's delay summary does not match objective.stages");
  // the new file carries the checkpoint it continues from: it replaces the old .partial at its
  // first flush, and a kill before its own first checkpoint must not lose that one
  const size_t n = st.serialized_size();
  h5::reserve_bytes(I.slot[0].id(), n);
  hsize_t at = 0;
  st.serialize_to([&](const uint8_t* p, size_t k) {
    h5::write_bytes_at(I.slot[0].id(), at, p, k);
    at += k;
  });
  h5::overwrite_ints(I.index.id(), {1, 0, static_cast<int64_t>(n), from.k});
  I.last_slot = 0;
  I.partial_checkpointed = true;
}

void RunFile::interrupt(double wall_seconds, const std::string& message) {
  auto& I = *impl_;
  const bool streamed = I.growable;
  end_streaming(true);
  if (!streamed) I.create_checkpoint();  // an empty index: `--resume` starts afresh
  const hid_t f = I.file.id();
  h5::write_attr(f, "status", std::string("interrupted"));
  h5::write_attr(f, "message", message);
  h5::write_attr(f, "wall_seconds", wall_seconds);
  I.close_verified(I.closing);
  std::error_code ec;
  std::filesystem::rename(I.closing, I.partial, ec);
  if (ec) throw UserError(I.partial + ": cannot rename the interrupted run file (" + ec.message() + ")");
  I.done = true;
}

void RunFile::finish(const std::string& status, double wall_seconds, const std::string& message) {
  auto& I = *impl_;
  end_streaming();
  const hid_t f = I.file.id();
  // the checkpoint has served its purpose; a finished file holds results only
  I.slot[0] = h5::Handle();
  I.slot[1] = h5::Handle();
  I.index = h5::Handle();
  if (I.growable) {
    h5::unlink(f, "checkpoint");
    if (I.keep_table && I.delay_table.rows() == 0) {  // a fresh-read method: no delay table
      I.delay_table = h5::Appendable();
      h5::unlink(f, "delays");
    }
  }
  if (I.delay_summary.updates > 0) {
    auto g = h5::create_group(f, "delay_summary");
    h5::write_vector(g.id(), "max", I.delay_summary.max);
    h5::write_vector(g.id(), "mean", I.delay_summary.mean());
    h5::write_attr(g.id(), "updates", I.delay_summary.updates);
    h5::write_attr(g.id(), "table_kept", int64_t{I.keep_table});
  }
  h5::write_attr(f, "status", status);
  h5::write_attr(f, "message", message);
  h5::write_attr(f, "wall_seconds", wall_seconds);
  h5::write_attr(f, "ended", now_iso());
  h5::delete_attr(f, "writer_pid");  // about the .partial's writer only
  h5::delete_attr(f, "writer_host");
  h5::delete_attr(f, "writer_started");
  I.close_verified(I.closing);
  std::error_code ec;
  std::filesystem::rename(I.closing, path_, ec);
  if (ec) throw UserError(path_ + ": cannot rename the finished run file (" + ec.message() + ")");
  std::filesystem::remove(I.partial, ec);
  I.done = true;
}

void RunFile::abort() {
  auto& I = *impl_;
  try {
    I.close();
  } catch (...) {
    // closing a file on a full disk can fail; what abort removes or keeps does not depend on it
  }
  std::error_code ec;
  if (I.partial_ours && !I.partial_checkpointed) std::filesystem::remove(I.partial, ec);
  std::filesystem::remove(I.fresh, ec);
  std::filesystem::remove(I.closing, ec);
  I.done = true;
}

bool run_file_opens(const std::string& path) {
  try {
    const h5::Handle f = h5::open_file_readonly(path);
    return h5::attr_exists(f.id(), "status") && !h5::read_attr_string(f.id(), "status").empty();
  } catch (const UserError&) {
    return false;
  }
}

std::string read_run_config(const std::string& path) {
  const h5::Handle f = h5::open_file_readonly(path);
  if (!h5::attr_exists(f.id(), "config")) throw UserError(path + ": not a run file (no config attribute)");
  return h5::read_attr_string(f.id(), "config");
}

PartialRun read_partial_run(const std::string& partial_path) {
  PartialRun p;
  p.path = partial_path;
  const std::string kept = "; the file is kept: rerun with --force to start afresh";
  auto damaged = [&](const std::string& what) { return UserError(partial_path + ": damaged: " + what + kept); };
  h5::Handle f;
  try {
    f = h5::open_file_readonly(partial_path);
  } catch (const UserError&) {
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(partial_path, ec);
    throw damaged("HDF5 cannot open it (" + (ec ? std::string("unreadable") : std::to_string(bytes) + " bytes") +
                  ": truncated, or not a run file)");
  }
  bool complete = false;
  try {
    complete = h5::exists(f.id(), "metrics/k") && h5::exists(f.id(), "checkpoint/index");
  } catch (const UserError&) {
    // a truncated file opens (its superblock is intact) and fails deeper: damaged, as below
  }
  if (!complete) {
    // a finished run's file (renamed to .partial by hand) needs no resume; anything else that
    // lacks them was cut short: damaged (a truncated .partial read as "not resumable" before)
    std::string status;
    try {
      status = h5::read_attr_string(f.id(), "status");
    } catch (const UserError&) {
    }
    if (status == "ok" || status == "diverged")
      throw UserError(partial_path + ": a finished run's file (status " + status + "), not a resumable .partial; a "
                      "finished run needs no resume");
    throw damaged("its /metrics or /checkpoint is missing or unreadable (truncated?)");
  }
  try {
    p.config = h5::read_attr_string(f.id(), "config");
    p.status = h5::read_attr_string(f.id(), "status");
    p.started = h5::read_attr_string(f.id(), "started");
    p.writer_pid = h5::read_attr_int(f.id(), "writer_pid");
    p.writer_host = h5::read_attr_string(f.id(), "writer_host");
    if (h5::attr_exists(f.id(), "writer_started")) p.writer_started = h5::read_attr_string(f.id(), "writer_started");
    p.version = h5::read_attr_string(f.id(), "version");
    p.schema_version = h5::read_attr_int(f.id(), "schema_version");
    if (h5::exists(f.id(), "objective")) {
      auto g = h5::open_group(f.id(), "objective");
      try {
        p.data_sha256 = h5::read_attr_string(g.id(), "data_sha256");
      } catch (const UserError&) {
        // a run without a data file
      }
      if (h5::attr_exists(g.id(), "block_sizes") && h5::attr_exists(g.id(), "n") && h5::attr_exists(g.id(), "batches")) {
        p.block_sizes = h5::read_attr_ints(g.id(), "block_sizes");
        p.samples = h5::read_attr_int(g.id(), "n");
        p.batches = h5::read_attr_int(g.id(), "batches");
      }
    }
  } catch (const UserError&) {
    throw UserError(partial_path + ": the run file's header is incomplete; rerun the run instead");
  }
  std::vector<int64_t> ix(4);
  try {
    auto index = h5::open_dataset(f.id(), "checkpoint/index");
    h5::read_rows(index.id(), H5T_NATIVE_INT64, 0, 4, 0, ix.data());
  } catch (const UserError&) {
    throw damaged("/checkpoint/index cannot be read");
  }
  if (ix[0] != 1) return p;  // killed before its first checkpoint: resume starts afresh
  if (ix[1] < 0 || ix[1] > 1 || ix[2] <= 0) throw damaged("a corrupt /checkpoint/index");
  std::vector<uint8_t> bytes;
  try {
    auto slot = h5::open_dataset(f.id(), "checkpoint/state_" + std::to_string(ix[1]));
    if (static_cast<int64_t>(h5::dataset_rows(slot.id())) < ix[2]) throw damaged("a truncated checkpoint");
    bytes = h5::read_bytes(slot.id(), static_cast<hsize_t>(ix[2]));
  } catch (const UserError& e) {
    if (std::string(e.what()).find(": damaged: ") != std::string::npos) throw;
    throw damaged("the checkpoint cannot be read");
  }
  p.state = StateBag::deserialize(bytes.data(), bytes.size(), partial_path);
  p.has_checkpoint = true;
  p.k = ix[3];
  if (p.state.has("run/identity")) {
    uint64_t identity[2];
    p.state.get_u64("run/identity", identity, 2);
    p.config_edited = identity[0] != text_fingerprint(p.config);
    p.has_data_fingerprint = true;
    p.data_fingerprint = identity[1];
  }
  return p;
}

}  // namespace stale
