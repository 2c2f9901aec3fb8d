// A seeded mutation fuzzer over the four readers of untrusted text (issue #12): the TOML config
// loader (plus the resource estimate of what it accepts), the LIBSVM reader, the delay-table
// reader and the sweep-file parser. Each input is a mutation of a valid seed (byte flips,
// inserted "interesting" tokens such as 9223372036854775807, 1e308, nan, a raw newline,
// deletions, duplications, splices of two seeds); the only exception a reader may throw is
// UserError. A crash, a hang (ctest's timeout), another exception type, or a sanitizer report
// in the --sanitize build fails the test.
//
// STALE_FUZZ_ITERATIONS sets the number of inputs per reader (default 500, i.e. 2,000 in all);
// STALE_FUZZ_SEED the base seed. Each failure prints the input so it can become a bad_inputs case.
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
#include "src/run/resource_estimate.hpp"
#include "src/run/sweep.hpp"
#include "tests/test_util.hpp"

TEST_SUITE_BEGIN("fuzz");

namespace fs = std::filesystem;
using namespace stale;

namespace {

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : fallback;
}

class Mutator {
 public:
  Mutator(uint64_t seed, std::vector<std::string> seeds) : state_(seed), seeds_(std::move(seeds)) {}

  std::string next() {
    std::string s = seeds_[below(seeds_.size())];
    const int rounds = below(2) == 0 ? 1 : 1 + static_cast<int>(below(4));  // half the inputs one edit from a seed
    for (int r = 0; r < rounds; ++r) mutate(s);
    if (s.size() > 4096) s.resize(4096);
    return s;
  }

 private:
  uint64_t below(uint64_t n) { return n == 0 ? 0 : splitmix64(state_++) % n; }

  void mutate(std::string& s) {
    static const std::vector<std::string> tokens = {
        "9223372036854775807", "-9223372036854775808", "18446744073709551616", "1e308", "-1e308", "9.2e18",
        "4294967296", "2147483648", "1e9", "1e12", "nan", "inf", "-inf", "-1", "0", "0.5", "1.5", "2abc",
        "\n", "\r\n", "\"", "'", "[", "]", "{", "}", "=", ",", ":", "#", ".", "e", "-", "+", " ", "\t",
        std::string(1, '\0'), "\xff", "\xc3\xa9", "[[a]]", "[grid]", "[zip]", "[set]", "\"\"\"", "true",
        "objective.dim", "method.updates", "delay.max", "objective.stages", "1:", ":1", "99999999999:1"};
    const uint64_t pos = below(s.size() + 1);
    switch (below(7)) {
      case 0:  // flip a byte
        if (!s.empty()) s[below(s.size())] ^= static_cast<char>(1 + below(255));
        break;
      case 1:  // insert a token
        s.insert(pos, tokens[below(tokens.size())]);
        break;
      case 2:  // replace a token-sized range with a token
        s.replace(pos, below(8), tokens[below(tokens.size())]);
        break;
      case 3:  // delete a range
        s.erase(pos, below(16));
        break;
      case 4: {  // duplicate a range
        const std::string piece = s.substr(pos, below(32));
        s.insert(below(s.size() + 1), piece);
        break;
      }
      case 5: {  // splice with another seed
        const std::string& other = seeds_[below(seeds_.size())];
        const uint64_t at = below(other.size() + 1);
        s = s.substr(0, pos) + other.substr(at);
        break;
      }
      default:  // a random digit run
        s.insert(pos, std::to_string(splitmix64(state_++) % 100000000000ULL));
    }
  }

  uint64_t state_;
  std::vector<std::string> seeds_;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<std::string> files_in(const fs::path& dir, const std::string& ext) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ext) out.push_back(slurp(e.path()));
  std::sort(out.begin(), out.end());  // directory order is not deterministic
  return out;
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

// runs `target` on `count` mutations; UserError is the only exception allowed
void fuzz(const std::string& name, std::vector<std::string> seeds, const std::function<void(const std::string&)>& target) {
  REQUIRE(!seeds.empty());
  const int64_t count = env_int("STALE_FUZZ_ITERATIONS", 500);
  Mutator m(static_cast<uint64_t>(env_int("STALE_FUZZ_SEED", 12)) ^ std::hash<std::string>{}(name), std::move(seeds));
  int64_t accepted = 0, rejected = 0;
  for (int64_t i = 0; i < count; ++i) {
    const std::string input = m.next();
    try {
      target(input);
      ++accepted;
    } catch (const UserError& e) {
      ++rejected;
      // the CLI prints one line; the message itself must never be empty
      if (std::string(e.what()).empty()) FAIL_CHECK(name << ": empty UserError for input " << i);
    } catch (const std::exception& e) {
      FAIL_CHECK(name << " input " << i << " threw " << typeid(e).name() << ": " << e.what() << "\n--- input ---\n"
                      << input << "\n-------------");
    }
  }
  MESSAGE(name << ": " << count << " inputs, " << accepted << " accepted, " << rejected << " rejected (UserError)");
  CHECK(accepted + rejected == count);
}

const fs::path kSource = STALE_SOURCE_DIR;

}  // namespace

TEST_CASE("FuzzTomlConfigLoaderAndResourceEstimate") {
  setenv("STALE_MEMORY_LIMIT", "64M", 1);
  auto seeds = files_in(kSource / "experiments", ".toml");
  for (auto& s : files_in(kSource / "tests" / "bad_inputs" / "configs", ".toml")) seeds.push_back(s);
  fuzz("toml", seeds, [](const std::string& text) {
    const Config c = Config::from_string(text, "fuzz.toml");
    (void)estimate_resources(c);
    check_resources(c, "");
    (void)c.to_toml();
  });
}

TEST_CASE("FuzzOverrides") {
  std::vector<std::string> seeds = {"objective.dim=16", "method.lr=0.01", "method.name=rpd", "costs.forward=[1, 2]",
                                    "delay.max=60", "seed=3", "log.out=\"a.h5\"", "method.prediction=false"};
  fuzz("override", seeds, [](const std::string& text) {
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
  fuzz("libsvm", seeds, [&](const std::string& text) {
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
  fuzz("delay table", seeds, [&](const std::string& text) {
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
  fuzz("sweep", seeds, [&](const std::string& text) {
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
