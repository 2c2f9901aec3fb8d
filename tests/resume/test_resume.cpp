// Checkpoint and resume (src/run/checkpoint.hpp): a run stopped at an update boundary (as a
// SIGINT would stop it) and continued with --resume writes the same run file as the run that
// was never stopped, bit for bit, but for wall-clock values — for every loop that checkpoints
// (rpd, bcd, sgd and the schedule executor: pipedream, paci, localsgd, 2bw, gpipe, zb-h1,
// pipemare) and every update rule (momentum, adamw). The real-process side (SIGKILL at random
// moments, SIGINT, SIGTERM, reading a live .partial) is tests/resume/kill_and_resume.py.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>

#include "src/core/state_bag.hpp"
#include "src/io/h5.hpp"
#include "src/io/run_file.hpp"
#include "src/run/checkpoint.hpp"
#include "src/run/runner.hpp"
#include "src/sweep/sweep.hpp"
#include "tests/support/test_util.hpp"

using namespace stale;
namespace fs = std::filesystem;

namespace {

const char* kSeries[] = {"k", "time", "loss", "subopt", "grad_norm_sq", "grad_norm_sq_mean", "stale_dist", "stage",
                         "batch", "bound", "bound_opt", "bound_stoch", "bound_stale", "G", "batch_loss", "val_loss"};

bool same_bytes(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// every number the run computes (everything but wall-clock values), bit for bit
void check_same_numbers(const fs::path& a, const fs::path& b) {
  auto fa = h5::open_file_readonly(a.string()), fb = h5::open_file_readonly(b.string());
  CHECK(h5::read_attr_string(fa.id(), "status") == h5::read_attr_string(fb.id(), "status"));
  CHECK(h5::read_attr_string(fa.id(), "config") == h5::read_attr_string(fb.id(), "config"));
  for (const char* s : kSeries) {
    CAPTURE(s);
    const std::string n = std::string("metrics/") + s;
    CHECK(same_bytes(h5::read_vector_double(fa.id(), n), h5::read_vector_double(fb.id(), n)));
  }
  hsize_t ra = 0, ca = 0, rb = 0, cb = 0;
  CHECK(same_bytes(h5::read_matrix_double(fa.id(), "iterates", ra, ca), h5::read_matrix_double(fb.id(), "iterates", rb, cb)));
  CHECK(ra == rb);
  CHECK(h5::read_vector_int(fa.id(), "iterates_k") == h5::read_vector_int(fb.id(), "iterates_k"));
  CHECK(h5::exists(fa.id(), "delays") == h5::exists(fb.id(), "delays"));
  if (h5::exists(fa.id(), "delays"))
    CHECK(h5::read_matrix_int(fa.id(), "delays", ra, ca) == h5::read_matrix_int(fb.id(), "delays", rb, cb));
  CHECK(h5::exists(fa.id(), "delay_summary") == h5::exists(fb.id(), "delay_summary"));
  if (h5::exists(fa.id(), "delay_summary")) {
    CHECK(same_bytes(h5::read_vector_double(fa.id(), "delay_summary/mean"), h5::read_vector_double(fb.id(), "delay_summary/mean")));
    CHECK(h5::read_vector_int(fa.id(), "delay_summary/max") == h5::read_vector_int(fb.id(), "delay_summary/max"));
  }
  auto ta = h5::open_group(fa.id(), "theory"), tb = h5::open_group(fb.id(), "theory");
  for (const char* attr : {"G", "Delta0", "delta"}) {
    const double x = h5::read_attr_double(ta.id(), attr), y = h5::read_attr_double(tb.id(), attr);
    CHECK(std::memcmp(&x, &y, sizeof x) == 0);
  }
  CHECK(h5::read_attr_int(ta.id(), "K") == h5::read_attr_int(tb.id(), "K"));
  CHECK(h5::exists(fa.id(), "schedule") == h5::exists(fb.id(), "schedule"));
  if (h5::exists(fa.id(), "schedule"))
    CHECK(h5::read_vector_int(fa.id(), "schedule/max_crossed_measured") ==
          h5::read_vector_int(fb.id(), "schedule/max_crossed_measured"));
  CHECK_FALSE(h5::exists(fb.id(), "checkpoint"));  // a finished file holds results only
}

Config config_for(const std::string& overrides) {
  Config cfg = test::small_config();
  std::string rest = overrides;
  while (!rest.empty()) {
    const auto sp = rest.find(' ');
    const std::string o = rest.substr(0, sp);
    if (!o.empty()) cfg.apply_override(o);
    rest = sp == std::string::npos ? "" : rest.substr(sp + 1);
  }
  return cfg;
}

// uninterrupted vs stopped at each of `stops` (a resume per stop) and finished
// RPD over uniform delays up to 9
const std::string kRpd = "delay.name=uniform delay.max=9 ";

void check_resume(const std::string& overrides, std::vector<int64_t> stops) {
  CAPTURE(overrides);
  const Config cfg = config_for(overrides);
  const auto dir = test::temp_dir("resume");
  const RunResult whole = run_experiment(cfg, (dir / "whole.h5").string(), false);
  REQUIRE(whole.status == "ok");
  const std::string path = (dir / "parts.h5").string();
  RunOptions o;
  o.stop_after = stops.front();
  RunResult r = run_experiment(cfg, path, o);
  REQUIRE(r.status == "interrupted");
  CHECK(r.updates >= stops.front());
  CHECK(r.path == path + ".partial");
  {
    // an interrupted run's file opens as it is, says so, and holds its checkpoint
    auto f = h5::open_file_readonly(path + ".partial");
    CHECK(h5::read_attr_string(f.id(), "status") == "interrupted");
    const PartialRun p = read_partial_run(path + ".partial");
    CHECK(p.has_checkpoint);
    CHECK(p.k == r.updates);
  }
  for (size_t i = 1; i <= stops.size(); ++i) {
    RunOptions ro;
    ro.resume_from = path + ".partial";
    ro.stop_after = i < stops.size() ? stops[i] : 0;
    r = run_experiment(Config(), "", ro);
    CHECK(r.status == (i < stops.size() ? "interrupted" : "ok"));
  }
  REQUIRE(fs::exists(path));
  CHECK_FALSE(fs::exists(path + ".partial"));
  CHECK(r.updates == whole.updates);
  CHECK(std::memcmp(r.final_w.data(), whole.final_w.data(), sizeof(double) * whole.final_w.size()) == 0);
  check_same_numbers(dir / "whole.h5", path);
}

}  // namespace

TEST_SUITE("resume") {

TEST_CASE("StateBagRoundTripsBitForBitAndRefusesATornCopy") {
  StateBag b;
  Vec v(3);
  v << 1.0 / 3, -0.0, std::nan("");
  Mat m(2, 3);
  m << 1, 2, 3, 4, 5, 6;
  b.put("a/v", v);
  b.put("a/m", m);
  b.put("k", int64_t{-7});
  b.put_ints("ints", {1, 2, 3});
  Rng r(5, Stream::GradNoise);
  r.normal();  // leaves a spare normal: part of the state
  save_rng(b, "rng", r);
  const auto bytes = b.serialize();
  const StateBag c = StateBag::deserialize(bytes.data(), bytes.size(), "t");
  CHECK(std::memcmp(c.get_vec("a/v").data(), v.data(), sizeof(double) * 3) == 0);
  CHECK(c.get_mat("a/m") == m);
  CHECK(c.get_int("k") == -7);
  CHECK(c.get_ints("ints") == std::vector<int64_t>{1, 2, 3});
  CHECK(c.sub("a").size() == 2);
  Rng q(0, Stream::Init);
  restore_rng(c, "rng", q);
  for (int i = 0; i < 5; ++i) CHECK(q.normal() == r.normal());
  auto torn = bytes;
  torn[torn.size() / 2] ^= 1;
  CHECK_THROWS_AS(StateBag::deserialize(torn.data(), torn.size(), "t"), UserError);
  CHECK_THROWS_AS(StateBag::deserialize(bytes.data(), bytes.size() - 1, "t"), UserError);
  CHECK_THROWS_AS(c.get_int("missing"), UserError);
}

TEST_CASE("AStateBagStreamsTheBytesOfSerializeWithoutCopyingLargeArrays") {
  // a checkpoint streams the bag into its slot (serialize_to): the same bytes as serialize(),
  // the fields batched, an array of 64 KiB or more handed over from its own storage
  StateBag b;
  b.put("small", Vec(Vec::Constant(5, 0.25)));
  b.put_ints("counters", {3, 1, 4});
  const std::vector<double> big_values(20000, 1.5);  // 160 KB
  b.put_doubles("big", big_values);
  b.put_doubles("empty", {});
  const double* big_storage = b.get_doubles("big").data();
  std::vector<uint8_t> streamed;
  int pieces = 0;
  bool big_in_place = false;
  b.serialize_to([&](const uint8_t* p, size_t k) {
    ++pieces;
    big_in_place |= reinterpret_cast<const void*>(p) == reinterpret_cast<const void*>(big_storage) && k == 160000;
    streamed.insert(streamed.end(), p, p + k);
  });
  const auto bytes = b.serialize();
  CHECK(streamed == bytes);
  CHECK(bytes.size() == b.serialized_size());
  CHECK(big_in_place);
  CHECK(pieces == 3);  // the fields before it, the array, the fields after it
  const StateBag c = StateBag::deserialize(streamed.data(), streamed.size(), "t");
  CHECK(c.get_doubles("big") == big_values);
  CHECK(c.get_ints("counters") == std::vector<int64_t>{3, 1, 4});
}

TEST_CASE("RpdResumedEqualsUninterrupted") {
  check_resume(kRpd + "log.flush_seconds=0", {137});
  // twice interrupted, and with every update logged at a cadence the stops fall between
  check_resume(kRpd + "log.flush_seconds=1000 log.every=7", {50, 301});
  // a stop before the window of the version store is full (k < delta)
  check_resume("delay.name=uniform delay.max=40 log.flush_seconds=1000", {13});
}

TEST_CASE("RpdFollowingAScheduleResumedEqualsUninterrupted") {
  check_resume("log.flush_seconds=1000 delay.name=schedule delay.schedule=pipedream delay.follow_order=true",
               {211});
}

TEST_CASE("UpdateRulesResumedEqualUninterrupted") {
  check_resume(kRpd + "log.flush_seconds=0 method.optimizer=momentum", {123});
  check_resume(kRpd + "log.flush_seconds=1000 method.optimizer=adamw method.weight_decay=0.01 objective.grad_noise_std=0.1",
               {77, 250});
  check_resume(kRpd + "log.flush_seconds=1000 method.lr_schedule=cosine method.warmup=30", {99});
}

TEST_CASE("FreshReadMethodsResumedEqualUninterrupted") {
  check_resume("log.flush_seconds=1000 method.name=bcd", {111});
  check_resume("log.flush_seconds=1000 method.name=sgd method.optimizer=momentum", {100});
}

TEST_CASE("ScheduleMethodsResumedEqualUninterrupted") {
  const std::string common = "log.flush_seconds=1000 ";
  check_resume("log.flush_seconds=0 method.name=pipedream", {97});
  check_resume(common + "method.name=pipedream method.optimizer=adamw", {45, 203});
  check_resume(common + "method.name=paci method.accumulation=2", {131});
  check_resume(common + "method.name=localsgd method.replicas=2 method.local_steps=3", {88});
  check_resume(common + "method.name=2bw", {150});
  check_resume(common + "method.name=gpipe", {160});
  check_resume(common + "method.name=zb-h1", {120});
  check_resume(common + "method.name=pipemare", {101});
  check_resume(common + "method.name=pipedream-nostash objective.name=logistic objective.generator=synthetic", {66});
}

TEST_CASE("AResumedRunCanStopAtTheVeryFirstAndLastUpdates") {
  check_resume(kRpd + "log.flush_seconds=1000", {1});
  check_resume("log.flush_seconds=1000 method.name=pipedream", {399});
}

TEST_CASE("CheckpointsAtEveryUpdateDoNotChangeTheRun") {
  // log.flush_seconds = 0: a checkpoint after every update, none of which may perturb it
  check_resume(kRpd + "log.flush_seconds=0 log.every=5", {222});
}

TEST_CASE("TheSweepsRuleContinuesACheckpointOfTheSameConfigAndDiscardsAnotherOnlyWhenForced") {
  const Config cfg = config_for(kRpd + "log.flush_seconds=1000");
  const auto dir = test::temp_dir("resume-copy");
  const RunResult whole = run_experiment(cfg, (dir / "whole.h5").string(), false);
  RunOptions o;
  o.stop_after = 250;
  run_experiment(cfg, (dir / "a.h5").string(), o);
  CHECK(has_checkpoint_of((dir / "a.h5").string(), cfg));
  CHECK_FALSE(has_checkpoint_of((dir / "a.h5").string(), config_for(kRpd + "log.flush_seconds=1000 method.lr=0.004")));
  // the sweep's rule: the same config continues, bit for bit
  const RunResult r = run_or_resume(cfg, (dir / "a.h5").string(), RunOptions{});
  CHECK(r.status == "ok");
  check_same_numbers(dir / "whole.h5", dir / "a.h5");
  // another config at the same path would discard the checkpoint: refused, unless forced
  // (issue 34); then it runs afresh and replaces the .partial
  run_experiment(cfg, (dir / "b.h5").string(), o);
  const Config other = config_for(kRpd + "log.flush_seconds=1000 method.lr=0.004");
  CHECK_THROWS_AS(run_or_resume(other, (dir / "b.h5").string(), RunOptions{}), UserError);
  CHECK(fs::exists(dir / "b.h5.partial"));
  RunOptions force;
  force.overwrite = true;
  CHECK(run_or_resume(other, (dir / "b.h5").string(), force).status == "ok");
  auto f = h5::open_file_readonly((dir / "b.h5").string());
  CHECK(h5::read_attr_string(f.id(), "config") == other.to_toml());
}

TEST_CASE("ResumingAFinishedOrForeignFileIsAOneLineError") {
  const auto dir = test::temp_dir("resume-bad");
  RunOptions ro;
  ro.resume_from = (dir / "none.h5.partial").string();
  CHECK_THROWS_AS(run_experiment(Config(), "", ro), UserError);
  test::write_file(dir / "junk.h5.partial", "not hdf5");
  ro.resume_from = (dir / "junk.h5.partial").string();
  CHECK_THROWS_AS(run_experiment(Config(), "", ro), UserError);
}

}  // TEST_SUITE

TEST_SUITE("resume") {
TEST_CASE("TheFlushIntervalDoesNotRenameASweepsRuns") {
  // how often a run checkpoints does not change what it computes: a sweep run of another
  // log.flush_seconds is the same run (and continues from the same .partial)
  Config a = test::small_config(), b = test::small_config();
  b.apply_override("log.flush_seconds=0.5");
  CHECK(config_hash(a) == config_hash(b));
  b.apply_override("method.lr=0.004");
  CHECK(config_hash(a) != config_hash(b));
}
}  // TEST_SUITE
