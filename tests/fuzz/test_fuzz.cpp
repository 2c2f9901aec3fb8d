// A seeded mutation fuzzer over the readers of untrusted text (issue #12): the TOML config
// loader (plus the resource estimate of what it accepts), command-line overrides, the LIBSVM
// reader, the delay-table CSV reader and the sweep-file parser. Each input is a mutation of a
// valid seed (fuzz_harness.hpp's TextMutator: byte flips, inserted "interesting" tokens such as
// 9223372036854775807, 1e308, nan, a raw newline, deletions, duplications, splices of two
// seeds); the only exception a reader may throw is UserError, and nothing may be printed on
// stderr. A crash, a hang (the harness's watchdog), another exception type, or a sanitizer
// report in the --sanitize build fails the test. The readers of data files (CSV, .npy, .npz,
// HDF5, text corpora, HDF5 delay tables, run files) are test_fuzz_data_files.cpp's.
//
// STALE_FUZZ_ITERATIONS sets the number of inputs per reader (default 500); STALE_FUZZ_SEED
// the base seed. Each failure prints the input so it can become a bad_inputs case.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <toml++/toml.h>
#include <vector>

#include "delays/delay_model.hpp"
#include "objectives/data/libsvm.hpp"
#include "src/config/config.hpp"
#include "src/core/error.hpp"
#include "src/core/rng.hpp"
#include "src/checks/resource_estimate.hpp"
#include "src/sweep/sweep.hpp"
#include "tests/support/fuzz_harness.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("fuzz");

namespace fs = std::filesystem;
using namespace stale;
using namespace stale::fuzz;

namespace {

// runs `target` on `count` mutations of `seeds` (fuzz_harness.hpp): UserError is the only
// exception allowed, and nothing may be printed on stderr
void fuzz_text(const std::string& name, std::vector<std::string> seeds,
               const std::function<void(const std::string&)>& target) {
  REQUIRE(!seeds.empty());
  const fs::path scratch = test::temp_dir("fuzz-scratch");
  const uint64_t seed = static_cast<uint64_t>(env_int("STALE_FUZZ_SEED", 12)) ^ std::hash<std::string>{}(name);
  TextMutator m(seed, std::move(seeds));
  run_inputs(name, env_int("STALE_FUZZ_ITERATIONS", 500), "", scratch, [&] { return m.next(); }, target, false);
  fs::remove_all(scratch);
}

const fs::path kSource = STALE_SOURCE_DIR;

}  // namespace

TEST_CASE("FuzzTomlConfigLoaderAndResourceEstimate") {
  setenv("STALE_MEMORY_LIMIT", "64M", 1);
  auto seeds = files_in(kSource / "experiments", ".toml");
  for (auto& s : files_in(kSource / "tests" / "bad_inputs" / "configs", ".toml")) seeds.push_back(s);
  fuzz_text("toml", seeds, [](const std::string& text) {
    const Config c = Config::from_string(text, "fuzz.toml");
    (void)estimate_resources(c);
    check_resources(c, "");
    (void)c.to_toml();
  });
}

TEST_CASE("FuzzOverrides") {
  std::vector<std::string> seeds = {"objective.dim=16", "method.lr=0.01", "method.name=rpd", "costs.forward=[1, 2]",
                                    "delay.max=60", "seed=3", "log.out=\"a.h5\"", "method.prediction=false"};
  fuzz_text("override", seeds, [](const std::string& text) {
    Config c;
    c.apply_override(text);
  });
}

TEST_CASE("FuzzLibsvmReader") {
  setenv("STALE_MEMORY_LIMIT", "64M", 1);
  const fs::path dir = test::temp_dir("fuzz-libsvm");
  auto seeds = files_in(kSource / "tests" / "bad_inputs" / "libsvm", ".libsvm");
  seeds.push_back("+1 1:0.5 2:1 7:-3\n-1 1:1 3:0.25\n+1 2:1e-3 4:2\n0 1:1\n");
  const fs::path path = dir / "input.libsvm";
  fuzz_text("libsvm", seeds, [&](const std::string& text) {
    write(path, text);
    const LinearData d = load_libsvm(path.string());
    CHECK(d.X.allFinite());
  });
  fs::remove_all(dir);
}

TEST_CASE("FuzzDelayTableReader") {
  const fs::path dir = test::temp_dir("fuzz-delays");
  auto seeds = files_in(kSource / "tests" / "bad_inputs" / "delays", ".csv");
  seeds.push_back("b0,b1,b2,b3\n0,0,0,0\n1,1,0,1\n2,0,1,2\n3,1,2,0\n");
  const fs::path path = dir / "input.csv";
  fuzz_text("delay table", seeds, [&](const std::string& text) {
    write(path, text);
    auto model = make_table_delay(path.string(), 4);
    for (int64_t k = 0; k < model->horizon(); ++k)
      for (int b = 0; b < 4; ++b) {
        const int64_t v = model->delay(k, b);
        if (v < 0 || v > k) FAIL_CHECK("delay out of 0..k accepted");
      }
  });
  fs::remove_all(dir);
}

TEST_CASE("FuzzSweepFileParser") {
  const fs::path dir = test::temp_dir("fuzz-sweep");
  write(dir / "base.toml", slurp(kSource / "tests" / "bad_inputs" / "configs" / "base.toml"));
  std::vector<std::string> seeds = {
      "base = \"base.toml\"\nepsilon = 1e-2\n[set]\n\"method.updates\" = 20\n[grid]\n\"method.lr\" = [0.01, 0.02]\nseed = [0, "
      "1]\n[zip]\n\"objective.stages\" = [2, 4]\n\"delay.max\" = [1, 3]\n",
      "base = \"base.toml\"\n[grid]\n\"delay.name\" = [\"uniform\", \"constant\"]\n\"delay.max\" = [2]\n",
      "base = \"base.toml\"\n[set]\n\"objective.dim\" = 32\n\"method.name\" = \"sgd\"\n",
      "base = \"base.toml\"\nepsilon = 0.5\n[zip]\n\"method.lr\" = [0.01, 0.02, 0.04]\nseed = [1, 2, 3]\n"};
  for (auto& s : files_in(kSource / "tests" / "bad_inputs" / "sweeps", ".toml")) {
    // the cases point at ../configs/base.toml; here the base sits beside the sweep
    const auto p = s.find("../configs/base.toml");
    if (p != std::string::npos) s.replace(p, std::string("../configs/base.toml").size(), "base.toml");
    seeds.push_back(s);
  }
  const fs::path path = dir / "input.toml";
  fuzz_text("sweep", seeds, [&](const std::string& text) {
    // load_sweep expands the whole grid in memory and has no bound on its size (reported on
    // issue #12): inputs whose grid holds more than 10^4 runs are not fed to it
    try {
      const toml::table t = toml::parse(text);
      double runs = 1;
      if (auto g = t["grid"].as_table())
        for (const auto& [k, v] : *g)
          if (auto a = v.as_array()) runs *= static_cast<double>(std::max<size_t>(1, a->size()));
      if (runs > 1e4) return;
    } catch (const toml::parse_error&) {
    }
    write(path, text);
    (void)load_sweep(path.string());
  });
  fs::remove_all(dir);
}

TEST_SUITE_END();
