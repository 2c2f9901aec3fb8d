// The run file round-trips: every dataset and attribute of the schema exists with the right
// shape, and the last iterate read back equals the in-memory one bit for bit.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>

#include "src/core/state_bag.hpp"
#include "src/io/h5.hpp"
#include "src/io/run_file.hpp"
#include "src/run/runner.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/skip.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("io");

using namespace stale;

TEST_CASE("RunFileHasTheSchemaAndTheLastIterateBitForBit") {
  const auto dir = test::temp_dir("runfile");
  Config cfg = test::small_config("[delay]\nname = \"uniform\"\nmax = 9\n");
  cfg.apply_override("log.every=7");
  const std::string path = (dir / "r.h5").string();
  const RunResult r = run_experiment(cfg, path, false);
  CHECK(r.status == "ok");
  CHECK(std::filesystem::exists(path));
  CHECK_FALSE(std::filesystem::exists(path + ".partial"));

  auto f = h5::open_file_readonly(path);
  const hid_t id = f.id();
  for (const char* a : {"schema_version", "version", "git_sha", "config", "seed", "backend", "status", "wall_seconds",
                        "precision", "device", "started", "ended"})
    CHECK_MESSAGE(H5Aexists(id, a) > 0, a);
  CHECK(h5::read_attr_string(id, "status") == "ok");
  CHECK(h5::read_attr_string(id, "backend") == "cpu");
  // the stored config is the resolved one and parses back to the same values
  const Config back = Config::from_string(h5::read_attr_string(id, "config"), "stored");
  CHECK(back.get_int("delay.max") == 9);
  CHECK(back.get_int("objective.dim") == 37);

  // 400 updates logged every 7 plus k = 0 and the final k = 400
  const size_t rows = 1 + 400 / 7 + 1;
  for (const char* m : {"k", "time", "loss", "subopt", "grad_norm_sq", "grad_norm_sq_mean", "stale_dist", "stage",
                        "batch", "bound", "bound_opt", "bound_stoch", "bound_stale", "G", "wall", "batch_loss", "val_loss"}) {
    CAPTURE(m);
    CHECK(h5::read_vector_double(id, std::string("metrics/") + m).size() == rows);
  }
  const auto k = h5::read_vector_int(id, "metrics/k");
  CHECK(k.front() == 0);
  CHECK(k[1] == 7);
  CHECK(k.back() == 400);

  hsize_t n = 0, d = 0;
  const auto it = h5::read_matrix_double(id, "iterates", n, d);
  CHECK(d == 37);
  CHECK(n == rows);
  CHECK(h5::read_vector_int(id, "iterates_k").back() == 400);
  CHECK(std::memcmp(it.data() + (n - 1) * d, r.final_w.data(), sizeof(double) * d) == 0);

  hsize_t K = 0, S = 0;
  const auto delays = h5::read_matrix_int(id, "delays", K, S);
  CHECK(K == 400);
  CHECK(S == 5);
  for (auto v : delays) CHECK(v <= 9);
  for (const char* t : {"L", "f_star", "delta", "G", "mu", "lr", "Delta0"}) CHECK(H5Aexists(h5::open_group(id, "theory").id(), t) > 0);
  CHECK(h5::read_attr_double(h5::open_group(id, "theory").id(), "delta") == 9.0);
  CHECK(h5::read_attr_double(h5::open_group(id, "objective").id(), "f_star") == 0.0);
}

TEST_CASE("DelayTableOfARunReplaysThroughTheTableModel") {
  // a run's /delays read back by delay.name = "table" reproduces the run bit for bit
  const auto dir = test::temp_dir("replay");
  Config a = test::small_config("[delay]\nname = \"uniform\"\nmax = 12\n");
  const auto ra = run_experiment(a, (dir / "a.h5").string(), false);
  Config b = test::small_config("[delay]\nname = \"table\"\npath = \"" + (dir / "a.h5").string() + "\"\n");
  const auto rb = run_experiment(b, (dir / "b.h5").string(), false);
  CHECK(std::memcmp(ra.final_w.data(), rb.final_w.data(), sizeof(double) * ra.final_w.size()) == 0);
}

TEST_CASE("CharLmRunLogsTheHeldOutLossAtTheLogCadence") {
  // a tiny GPT on Tiny Shakespeare (the data directory of the checkout); linear models log NaN
  if (!test::have_data_file("tinyshakespeare.txt")) return;
  const auto dir = test::temp_dir("charlm-run");
  Config cfg = Config::from_string(test::tiny_charlm_toml(30), "tiny.toml");
  const RunResult r = run_experiment(cfg, (dir / "c.h5").string(), false);
  CHECK(r.status == "ok");
  auto f = h5::open_file_readonly((dir / "c.h5").string());
  const auto val = h5::read_vector_double(f.id(), "metrics/val_loss");
  REQUIRE(val.size() == 4);
  for (double v : val) CHECK((std::isfinite(v) && std::abs(v - std::log(65.0)) < 1.0));
  const auto bl = h5::read_vector_double(f.id(), "metrics/batch_loss");
  CHECK(std::isfinite(bl.back()));

  const RunResult lin = run_experiment(test::small_config(), (dir / "l.h5").string(), false);
  auto g = h5::open_file_readonly((dir / "l.h5").string());
  CHECK(std::isnan(h5::read_vector_double(g.id(), "metrics/val_loss").back()));
}

TEST_SUITE_END();

namespace {
H5D_layout_t layout_of(hid_t file, const std::string& name) {
  auto d = h5::open_dataset(file, name);
  const hid_t dcpl = H5Dget_create_plist(d.id());
  const H5D_layout_t l = H5Pget_layout(dcpl);
  H5Pclose(dcpl);
  return l;
}
}  // namespace

TEST_CASE("AShortRunWritesItsSeriesOnceWithExactlyTheirRowsAndAStreamedRunTheSameNumbers") {
  // a run that ends before its first flush is due writes contiguous datasets of exactly its
  // rows and no checkpoint; the same run streamed (a flush at every update) writes growable,
  // chunked ones: the datasets, their shapes and values are the same
  const auto dir = test::temp_dir("runfile_once");
  Config cfg = test::small_config("[delay]\nname = \"uniform\"\nmax = 9\n");
  cfg.apply_override("log.every=7");
  cfg.apply_override("log.iterates_every=7");
  const std::string once = (dir / "once.h5").string(), streamed = (dir / "streamed.h5").string();
  REQUIRE(run_experiment(cfg, once, false).status == "ok");
  cfg.apply_override("log.flush_seconds=0");
  REQUIRE(run_experiment(cfg, streamed, false).status == "ok");
  auto a = h5::open_file_readonly(once), b = h5::open_file_readonly(streamed);
  CHECK_FALSE(h5::exists(a.id(), "checkpoint"));
  CHECK_FALSE(h5::exists(b.id(), "checkpoint"));
  for (const std::string name : {"metrics/k", "metrics/loss", "metrics/subopt", "metrics/bound", "metrics/stage",
                                 "iterates", "iterates_k", "delays"}) {
    CAPTURE(name);
    CHECK(layout_of(a.id(), name) == H5D_CONTIGUOUS);
    CHECK(layout_of(b.id(), name) == H5D_CHUNKED);
    std::vector<hsize_t> da, db;
    const auto va = h5::read_array_double(a.id(), name, da), vb = h5::read_array_double(b.id(), name, db);
    CHECK(da == db);
    REQUIRE(va.size() == vb.size());
    CHECK(std::memcmp(va.data(), vb.data(), sizeof(double) * va.size()) == 0);  // NaN where the bound is undefined
  }
  auto unit = h5::open_dataset(a.id(), "metrics/loss");
  CHECK_FALSE(h5::read_attr_string(unit.id(), "description").empty());
  // the streamed file is the compact copy of its .partial, whose 400 flushes each left the
  // space of the chunks they rewrote behind (copied byte for byte, as before: 8 × the size of
  // the file written once)
  const auto once_bytes = std::filesystem::file_size(once), streamed_bytes = std::filesystem::file_size(streamed);
  MESSAGE("written once " << once_bytes << " bytes, streamed " << streamed_bytes << " bytes");
  CHECK(streamed_bytes < 3 * once_bytes);
}

TEST_CASE("ACheckpointDelaysTheNextByTwentyTimesItsOwnWriteTime") {
  // log.flush_seconds > 0: the next flush is due max(flush_seconds, 20 t) after a checkpoint
  // that took t, so checkpoints of a large state stay under 5 % of the run; 0 stays "every update"
  const auto dir = test::temp_dir("runfile_cadence");
  auto checkpointed = [&](const std::string& name, double flush_seconds) {
    auto f = std::make_unique<RunFile>((dir / name).string(), 8, 2, false, flush_seconds);
    StateBag state;
    state.put_doubles("big", std::vector<double>(size_t{1} << 21, 0.5));  // 16 MiB: milliseconds to write
    const auto t0 = std::chrono::steady_clock::now();
    f->write_checkpoint(std::move(state), 1);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return std::make_pair(std::move(f), took);
  };
  {
    auto [f, took] = checkpointed("tiny.h5", 1e-9);
    // asked right after the checkpoint: far less than 20 t has passed
    CHECK_FALSE(f->flush_due());
    MESSAGE("a 16 MiB checkpoint took " << took << " s");
    f->abort();
  }
  {
    auto [f, took] = checkpointed("every.h5", 0.0);
    CHECK(f->flush_due());
    f->abort();
  }
}
