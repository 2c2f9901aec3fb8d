// The fuzzers also mutate data files (issue 34): every reader of a file a user hands the
// harness gets mutations of real, valid files of its kind — the CSV, .npy pair, .npz and HDF5
// data sets of objective.generator = "file", the character LM's text corpus, a delay table
// stored in HDF5 (a run or schedule file's /delays), a run's .partial continued by --resume
// (and --continue, the sweep's rule: the same reader; a coupled-cost run's checkpoint among them), and the finished run file a sweep's
// index reads back (--index-only). The text readers of the first fuzz suite (LIBSVM, the
// delay-table CSV, configs, sweep files) are in test_fuzz.cpp.
//
// The seeds are the fixtures of tests/objectives/data_files (written by NumPy and h5py, HDF5's
// old format without checksums, where a flipped byte reaches the library's parsers) and files
// this suite writes with the harness itself: a run's interrupted .partial, a finished run file,
// a delay table in the format `stale run` writes (HDF5 1.10, checksummed metadata). Mutations
// are ByteMutator's (fuzz_harness.hpp), aimed in part at the seeds' shape and size fields.
// A few seeds are structurally damaged on purpose (a checkpoint slot declared 2^40 bytes long,
// a .npy shape whose product overflows): what a random flip finds only rarely.
//
// Every input ends in success or one UserError line; STALE_MEMORY_LIMIT = 64M here, so a
// reader that allocates what a fuzzed shape says instead of checking it first fails.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "delays/delay_model.hpp"
#include "objectives/data/data_file.hpp"
#include "objectives/data/npy.hpp"
#include "objectives/data/text_data.hpp"
#include "src/io/h5.hpp"
#include "src/io/run_file.hpp"
#include "src/io/sweep_index_file.hpp"
#include "src/run/runner.hpp"
#include "tests/support/fuzz_harness.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("fuzz");

namespace fs = std::filesystem;
using namespace stale;
using namespace stale::fuzz;

namespace {

// As the CLI and the Python module do, before any other HDF5 call: HDF5 1.10.8 leaks an
// object whenever it fails to open some damaged files (a plain H5Fopen of a flipped byte in
// the old format's superblock: seen here, and reproduced with the C API alone), and its
// clean-up at exit then loops and prints "infinite loop closing library" and a dump.
const bool kNoHdf5CleanupAtExit = (h5::no_cleanup_at_exit(), true);

}  // namespace

// Under ASan (the CI's sanitizer subset): a size HDF5 reads from a damaged file's metadata
// reaches malloc inside the library (H5C_protect asked for 0x86…58 bytes). HDF5 checks for a
// NULL return and fails the open, which is what a build without ASan does; ASan by default
// aborts on such a request instead of returning NULL, so it is told to return NULL here. Only
// malloc is concerned: a throwing operator new of an impossible size still aborts under ASan,
// so an allocation of ours that a shape drives is still caught.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }

namespace {

const fs::path kFixtures = fs::path(STALE_SOURCE_DIR) / "tests" / "objectives" / "data_files";
const fs::path kBadInputs = fs::path(STALE_SOURCE_DIR) / "tests" / "bad_inputs";

uint64_t seed_for(const std::string& name) {
  return static_cast<uint64_t>(env_int("STALE_FUZZ_SEED", 12)) ^ std::hash<std::string>{}(name);
}

// a suite's inputs: STALE_FUZZ_ITERATIONS when set (the CI's 500), else `fallback`
int64_t inputs(int64_t fallback) { return env_int("STALE_FUZZ_ITERATIONS", fallback); }

// The little-endian sizes of a zip archive's members (compressed and uncompressed sizes,
// offsets of their local headers) and of its central directory: the size fields of an .npz
uint64_t le(const std::string& b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<size_t>(i)]);
  return v;
}
std::vector<uint64_t> zip_sizes(const std::string& b) {
  std::vector<uint64_t> out;
  const std::string entry = "PK\x01\x02";
  for (size_t at = b.find(entry); at != std::string::npos && at + 46 <= b.size(); at = b.find(entry, at + 1))
    for (size_t field : {20, 24, 28, 42}) out.push_back(le(b, at + field, field == 28 ? 2 : 4));
  const size_t eocd = b.rfind("PK\x05\x06");
  if (eocd != std::string::npos && eocd + 22 <= b.size())
    for (size_t field : {8, 10, 12, 16}) out.push_back(le(b, eocd + field, field < 12 ? 2 : 4));
  return out;
}

// the dimensions of every dataset of an HDF5 file, their products and byte lengths: where a
// fuzzed shape hides
std::vector<uint64_t> hdf5_sizes(const fs::path& p) {
  std::vector<uint64_t> out;
  auto f = h5::open_file_readonly(p.string());
  std::vector<std::string> names;
  H5Ovisit2(
      f.id(), H5_INDEX_NAME, H5_ITER_NATIVE,
      [](hid_t, const char* name, const H5O_info_t* info, void* op) -> herr_t {
        if (info->type == H5O_TYPE_DATASET) static_cast<std::vector<std::string>*>(op)->push_back(name);
        return 0;
      },
      &names, H5O_INFO_BASIC);
  for (const auto& n : names) {
    auto d = h5::open_dataset(f.id(), n);
    const hid_t space = H5Dget_space(d.id());
    hsize_t dims[8] = {};
    const int nd = H5Sget_simple_extent_dims(space, dims, nullptr);
    H5Sclose(space);
    uint64_t total = 1;
    for (int i = 0; i < nd; ++i) out.push_back(dims[i]), total *= dims[i];
    out.push_back(total);
    out.push_back(total * 8);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  // 0 and 1 are everywhere in a file; as "sizes" they would only aim the mutator at noise
  out.erase(std::remove_if(out.begin(), out.end(), [](uint64_t v) { return v < 2; }), out.end());
  return out;
}

// a mutator over HDF5 files: their bytes as seeds, every dataset's dimensions and byte lengths
// as the sizes it writes into fields
ByteMutator hdf5_mutator(const std::string& name, const std::vector<fs::path>& files) {
  std::vector<std::string> seeds;
  std::vector<uint64_t> sizes;
  for (const auto& p : files) {
    seeds.push_back(slurp(p));
    for (uint64_t v : hdf5_sizes(p)) sizes.push_back(v);
  }
  return ByteMutator(seed_for(name), std::move(seeds), std::move(sizes));
}

// what a reader of an HDF5 file leaves open: nothing. An object HDF5 could not close stays
// open for the life of the process, and the library's clean-up at exit then printed "infinite
// loop closing library" and a dump of them.
std::string hdf5_left_open() {
  const ssize_t n = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  if (n == 0) return "";
  // close them, so that the next input is judged on its own
  std::vector<hid_t> ids(static_cast<size_t>(std::max<ssize_t>(n, 0)));
  const ssize_t got = H5Fget_obj_ids(H5F_OBJ_ALL, H5F_OBJ_ALL, ids.size(), ids.data());
  std::string kinds;
  for (ssize_t i = 0; i < got; ++i) {
    const H5I_type_t t = H5Iget_type(ids[static_cast<size_t>(i)]);
    kinds += std::string(kinds.empty() ? "" : ", ") +
             (t == H5I_FILE      ? "file"
              : t == H5I_DATASET ? "dataset"
              : t == H5I_GROUP   ? "group"
              : t == H5I_ATTR    ? "attribute"
                                 : "other");
    while (H5Iget_ref(ids[static_cast<size_t>(i)]) > 0 && H5Idec_ref(ids[static_cast<size_t>(i)]) >= 0) {
    }
  }
  return std::to_string(n) + " HDF5 objects left open (" + kinds + ")";
}

// a small run's files: an interrupted .partial (checkpoint included) and a finished run file
struct RunSeeds {
  fs::path partial, finished;
};
RunSeeds make_run_seeds(const fs::path& dir, const std::string& name, const std::string& overrides) {
  Config cfg = test::small_config();
  for (size_t a = 0; a < overrides.size();) {
    const size_t b = std::min(overrides.find(' ', a), overrides.size());
    if (b > a) cfg.apply_override(overrides.substr(a, b - a));
    a = b + 1;
  }
  const std::string finished = (dir / (name + "-finished.h5")).string();
  REQUIRE(run_experiment(cfg, finished, false).status == "ok");
  RunOptions o;
  o.stop_after = 150;
  const std::string out = (dir / (name + ".h5")).string();
  REQUIRE(run_experiment(cfg, out, o).status == "interrupted");
  return {out + ".partial", finished};
}

// a copy of `from` changed through the HDF5 API (what a byte flip in checksummed metadata
// cannot reach): `edit` gets the file open for writing
fs::path edited_copy(const fs::path& from, const fs::path& to, const std::function<void(hid_t)>& edit) {
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  {
    auto f = h5::open_file_rdwr(to.string(), false);
    edit(f.id());
  }
  return to;
}

}  // namespace

TEST_CASE("FuzzCsvDataFileReader") {
  setenv("STALE_MEMORY_LIMIT", "64M", 1);
  const fs::path dir = test::temp_dir("fuzz-csv");
  // good_bom.csv: Excel's byte-order mark before the label column (issue 54)
  std::vector<std::string> seeds = {slurp(kFixtures / "good.csv"), slurp(kFixtures / "bad_field.csv"),
                                    "label,x1,x2\n1,0.5,2\n0,1e-3,-4\n1,\"3\",7.25\n\n0, 1 ,2\r\n",
                                    slurp(kFixtures / "good_bom.csv")};
  TextMutator m(seed_for("csv data"), seeds);
  const fs::path input = dir / "input.csv";
  run_inputs("csv data", inputs(300), input, dir, [&] { return m.next(); },
             [&](const std::string&) {
               // the label column of the seeds: "label" (good.csv, the third seed) or "y"
               for (const char* label : {"label", "y"}) {
                 try {
                   const LinearData d = load_linear_data_file(input.string(), "", label, std::string(label) == "y");
                   CHECK(d.X.allFinite());
                   CHECK(d.y.size() == d.X.rows());
                 } catch (const UserError&) {
                   if (std::string(label) == "y") throw;
                 }
               }
             },
             false);
  fs::remove_all(dir);
}

TEST_CASE("FuzzNpyDataFileReader") {
  setenv("STALE_MEMORY_LIMIT", "64M", 1);
  const fs::path dir = test::temp_dir("fuzz-npy");
  for (const char* f : {"good_X.npy", "good_y.npy"}) fs::copy_file(kFixtures / f, dir / f);
  std::vector<std::string> seeds;
  for (const char* f : {"good_X.npy", "good_X_fortran_f32.npy", "good_y.npy", "bad_short_y.npy", "bad_truncated.npy"})
    seeds.push_back(slurp(kFixtures / f));
  // a shape whose product overflows 64 bits (2^32 · 2^32 values: 0 when wrapped round) over
  // the fixture's 144 bytes: the product must be checked before it sizes anything
  std::string overflow = seeds[0];
  const auto at = overflow.find("(6, 3)");
  REQUIRE(at != std::string::npos);
  overflow.replace(at, 6, "(4294967296, 4294967296)");
  seeds.push_back(overflow);
  ByteMutator m(seed_for("npy data"), seeds, {6, 3, 5, 118, 144, 48, 72, 128});
  const fs::path input = dir / "input.npy";
  int64_t i = 0;
  run_inputs("npy data", inputs(400), input, dir, [&] { return m.next(); },
             [&](const std::string&) {
               // the input as X, then as y, of an X.npy,y.npy pair
               const std::string spec = i++ % 2 == 0 ? "input.npy,good_y.npy" : "good_X.npy,input.npy";
               (void)load_npy(input.string());
               const LinearData d = load_linear_data_file(spec, dir.string(), "", false);
               CHECK(d.X.allFinite());
             },
             true);
  fs::remove_all(dir);
}

TEST_CASE("FuzzNpzDataFileReader") {
  setenv("STALE_MEMORY_LIMIT", "64M", 1);
  const fs::path dir = test::temp_dir("fuzz-npz");
  std::vector<std::string> seeds;
  std::vector<uint64_t> sizes = {6, 3};
  // bad_huge.npz: finite values whose squares overflow (issue 54), refused at load
  for (const char* f : {"good.npz", "bad_labels.npz", "bad_compressed.npz", "bad_huge.npz"}) {
    seeds.push_back(slurp(kFixtures / f));
    for (uint64_t v : zip_sizes(seeds.back())) sizes.push_back(v);
  }
  ByteMutator m(seed_for("npz data"), seeds, sizes);
  const fs::path input = dir / "input.npz";
  run_inputs("npz data", inputs(400), input, dir, [&] { return m.next(); },
             [&](const std::string&) {
               const LinearData d = load_linear_data_file(input.string(), "", "", false);
               CHECK(d.X.allFinite());
             },
             true);
  fs::remove_all(dir);
}

TEST_CASE("FuzzHdf5DataFileReader") {
  setenv("STALE_MEMORY_LIMIT", "64M", 1);
  const fs::path dir = test::temp_dir("fuzz-h5data");
  // h5py's files (the old format, no metadata checksums) and one in the format the harness
  // writes (HDF5 1.10, checksummed), with a chunked, compressed X of 4,800 values
  std::vector<fs::path> files = {kFixtures / "good.h5", kFixtures / "bad_no_y.h5"};
  {
    const fs::path p = dir / "latest.h5";
    auto f = h5::create_file_swmr_capable(p.string());
    std::vector<double> X(600 * 8), y(600);
    for (size_t i = 0; i < X.size(); ++i) X[i] = std::sin(0.1 * static_cast<double>(i));
    for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<double>(i % 2);
    h5::write_rows(f.id(), "X", H5T_NATIVE_DOUBLE, 8, X.data(), 600, 64);
    h5::write_vector(f.id(), "y", y);
    files.push_back(p);
  }
  ByteMutator m = hdf5_mutator("hdf5 data", files);
  const fs::path input = dir / "input.h5";
  run_inputs("hdf5 data", inputs(400), input, dir, [&] { return m.next(); },
             [&](const std::string&) {
               const LinearData d = load_linear_data_file(input.string(), "", "", false);
               CHECK(d.X.allFinite());
             },
             true, hdf5_left_open);
  fs::remove_all(dir);
}

TEST_CASE("FuzzTextCorpusReader") {
  const fs::path dir = test::temp_dir("fuzz-text");
  std::string corpus;
  for (int i = 0; i < 12; ++i) corpus += "To be, or not to be, that is the question:\n";
  TextMutator m(seed_for("text corpus"), {corpus, corpus.substr(0, 120)});
  const fs::path input = dir / "input.txt";
  run_inputs("text corpus", inputs(200), input, dir, [&] { return m.next(); },
             [&](const std::string& text) {
               const TextData d = load_text(input.string());
               CHECK(d.tokens.size() == text.size());
               for (int t : d.tokens) CHECK((t >= 0 && t < d.vocab_size()));
             },
             false);
  fs::remove_all(dir);
}

TEST_CASE("FuzzDelayTableHdf5Reader") {
  setenv("STALE_MEMORY_LIMIT", "64M", 1);
  const fs::path dir = test::temp_dir("fuzz-h5delays");
  // /delays of a run file (as `stale run` writes it) and of a file in the old format
  const RunSeeds run = make_run_seeds(dir, "table", "delay.name=uniform delay.max=9");
  std::vector<fs::path> files = {run.finished, kBadInputs / "delays" / "float_delays.h5"};
  {
    const fs::path p = dir / "small.h5";
    auto f = h5::create_file(p.string());
    std::vector<int64_t> t(12 * 5);
    for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<int64_t>((i * 7) % 4);
    h5::write_matrix(f.id(), "delays", t.data(), 12, 5);
    files.push_back(p);
  }
  ByteMutator m = hdf5_mutator("hdf5 delay table", files);
  const fs::path input = dir / "input.h5";
  run_inputs("hdf5 delay table", inputs(300), input, dir, [&] { return m.next(); },
             [&](const std::string&) {
               auto model = make_table_delay(input.string(), 5, true);
               for (int64_t k = 0; k < 64; ++k)
                 for (int b = 0; b < 5; ++b) {
                   const int64_t v = model->delay(k, b);
                   if (v < 0 || v > k) FAIL_CHECK("delay out of 0..k accepted");
                 }
             },
             true, hdf5_left_open);
  fs::remove_all(dir);
}

TEST_CASE("FuzzResumeOfAPartialRunFile") {
  setenv("STALE_MEMORY_LIMIT", "64M", 1);
  const fs::path dir = test::temp_dir("fuzz-resume");
  // an rpd run keeping its delay table, and a schedule method's (its own checkpoint state)
  const RunSeeds rpd = make_run_seeds(dir, "rpd", "delay.name=uniform delay.max=9");
  const RunSeeds pipedream = make_run_seeds(dir, "pipedream", "method.name=pipedream");
  // a run with state-coupled op costs (issue 54): its checkpoint holds the coupled timeline's
  // factors and the state costs' history, read back on resume
  const RunSeeds coupled =
      make_run_seeds(dir, "coupled", "method.name=pipedream costs.coupling=gradient costs.coupling_scale=1.0 costs.jitter=0.1");
  std::vector<fs::path> files = {rpd.partial, pipedream.partial, coupled.partial};
  // the checkpoint slot and the index that names its length say 2^40 bytes: the reader must
  // not allocate them (nothing is stored past the slot's real bytes)
  files.push_back(edited_copy(rpd.partial, dir / "huge_slot.h5.partial", [](hid_t f) {
    auto index = h5::open_dataset(f, "checkpoint/index");
    std::vector<int64_t> ix(4);
    h5::read_rows(index.id(), H5T_NATIVE_INT64, 0, 4, 0, ix.data());
    auto slot = h5::open_dataset(f, "checkpoint/state_" + std::to_string(ix[1]));
    h5::reserve_bytes(slot.id(), hsize_t{1} << 40);
    ix[2] = int64_t{1} << 40;
    h5::overwrite_ints(index.id(), ix);
  }));
  // the metrics series declared 2^40 rows long, the checkpoint unchanged
  files.push_back(edited_copy(rpd.partial, dir / "huge_series.h5.partial", [](hid_t f) {
    auto k = h5::open_dataset(f, "metrics/k");
    hsize_t rows = hsize_t{1} << 40;
    REQUIRE(H5Dset_extent(k.id(), &rows) >= 0);
  }));
  ByteMutator m = hdf5_mutator("resume", files);
  const fs::path input = dir / "input.h5.partial", finished = dir / "input.h5";
  run_inputs("resume", inputs(150), input, dir, [&] { return m.next(); },
             [&](const std::string&) {
               fs::remove(finished);
               RunOptions ro;
               ro.resume_from = input.string();
               const RunResult r = run_experiment(Config(), "", ro);
               CHECK(r.status == "ok");
             },
             true, hdf5_left_open);
  fs::remove_all(dir);
}

TEST_CASE("FuzzRunFileSummaryReader") {
  setenv("STALE_MEMORY_LIMIT", "64M", 1);
  const fs::path dir = test::temp_dir("fuzz-summary");
  const RunSeeds rpd = make_run_seeds(dir, "rpd", "delay.name=uniform delay.max=9");
  const RunSeeds pipedream = make_run_seeds(dir, "pipedream", "method.name=pipedream");
  std::vector<fs::path> files = {rpd.finished, pipedream.finished};
  // one series shorter than the others (a reader indexing k by subopt's rows reads past it)
  files.push_back(edited_copy(rpd.finished, dir / "short_k.h5", [](hid_t f) {
    REQUIRE(h5::unlink(f, "metrics/k"));
    h5::write_vector(f, "metrics/k", std::vector<double>{0});
  }));
  ByteMutator m = hdf5_mutator("run summary", files);
  const fs::path input = dir / "input.h5";
  run_inputs("run summary", inputs(300), input, dir, [&] { return m.next(); },
             [&](const std::string&) {
               // an unreadable file is a row with status "unreadable", never an exception
               const RunSummary row = read_run_summary(input.string(), 1e6);
               CHECK(!row.status.empty());
             },
             true, hdf5_left_open);
  fs::remove_all(dir);
}

TEST_SUITE_END();
