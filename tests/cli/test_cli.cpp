// The command line as a person uses it: bad input gives a one-line error naming the key
// and a non-zero exit, with no run file left behind; a diverging run is a recorded result.
#include <doctest/doctest.h>

#include <filesystem>

#include "src/commands/run_config.hpp"
#include "src/io/h5.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/user_error.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("cli");

using namespace stale;
namespace fs = std::filesystem;

namespace {
const std::string kBase = test::small_run_toml({.dim = 16, .samples = 40, .batch_size = 4, .stages = 4, .updates = 50});

struct Outcome {
  int rc;
  std::string out;
  bool file_left;
};

Outcome run_cli(const std::string& config_text, const std::string& args) {
  const auto dir = test::temp_dir("cli");
  test::write_file(dir / "c.toml", config_text);
  const auto out = dir / "r.h5";
  Outcome o;
  o.rc = test::run_command(test::stale_bin() + " run " + (dir / "c.toml").string() + " " + args + " --out " +
                               out.string(),
                           o.out);
  o.file_left = fs::exists(out) || fs::exists(out.string() + ".partial");
  return o;
}

void check_rejected(const Outcome& o, const std::string& must_name) {
  CAPTURE(o.out);
  CHECK(o.rc != 0);
  CHECK(o.out.find(must_name) != std::string::npos);
  CHECK(o.out.find("error:") != std::string::npos);
  // one line
  CHECK(std::count(o.out.begin(), o.out.end(), '\n') == 1);
  CHECK_FALSE(o.file_left);
}
}  // namespace

TEST_CASE("UnknownKeyIsRejectedWithASuggestion") {
  const auto o = run_cli(std::string(kBase) + "[delay]\nmaxx = 3\n", "");
  check_rejected(o, "delay.maxx");
  CHECK(o.out.find("delay.max") != std::string::npos);
}

TEST_CASE("WrongTypeIsRejectedNamingTheKey") { check_rejected(run_cli(kBase, "objective.dim=\\\"big\\\""), "objective.dim"); }

TEST_CASE("NegativeLearningRateIsRejected") { check_rejected(run_cli(kBase, "method.lr=-0.1"), "method.lr"); }

TEST_CASE("MoreStagesThanCoordinatesIsRejected") { check_rejected(run_cli(kBase, "objective.stages=17"), "objective.stages"); }

TEST_CASE("MissingDataFileIsRejected") {
  // a LIBSVM file sets n and d itself: the config gives neither
  const std::string base = "[objective]\nname = \"logistic\"\ngenerator = \"libsvm\"\nbatch_size = 4\nstages = 4\n"
                           "[method]\nlr = 0.01\nupdates = 50\n[log]\nprogress = false\n";
  check_rejected(run_cli(base, "objective.data=no_such_file.libsvm"), "objective.data");
}

TEST_CASE("UnknownChoiceListsTheValidOnes") {
  const auto o = run_cli(kBase, "delay.name=poisson");
  check_rejected(o, "delay.name");
  CHECK(o.out.find("uniform") != std::string::npos);
}

TEST_CASE("CudaWithoutADeviceSaysWhy") {
  if (std::getenv("STALE_REQUIRE_GPU")) return;  // on a GPU machine cuda is valid
  const auto o = run_cli(kBase, "backend=cuda");
  check_rejected(o, "backend");
}

TEST_CASE("DivergingRunIsRecordedAsDivergedWithExitZero") {
  const auto dir = test::temp_dir("diverge");
  test::write_file(dir / "c.toml", R"(
[objective]
name = "quadratic"
generator = "nesterov"
dim = 64
samples = 128
batch_size = 8
stages = 4
[method]
name = "rpd"
lr = 100
updates = 2000
[log]
progress = false
)");
  std::string out;
  const int rc = test::run_command(test::stale_bin() + " run " + (dir / "c.toml").string() + " --out " +
                                       (dir / "r.h5").string(), out);
  CAPTURE(out);
  CHECK(rc == 0);
  REQUIRE(fs::exists(dir / "r.h5"));
  auto f = h5::open_file_readonly((dir / "r.h5").string());
  CHECK(h5::read_attr_string(f.id(), "status") == "diverged");
  const auto k = h5::read_vector_int(f.id(), "metrics/k");
  CHECK(k.back() < 2000);
}

// One command layer (src/commands/run_config.hpp): the line `stale run` prints for a config the
// rules between keys refuse is the line of the run Python keeps in memory (stale.run() without
// out=), which once ran such a config; tests/python/test_package.py checks it from Python.
TEST_CASE("TheCliRefusesWhatARunKeptInMemoryRefusesWithTheSameLine") {
  const auto o = run_cli(kBase, "method.lr_schedule=cosine method.lr_min=0.5");
  check_rejected(o, "method.lr_min");
  const auto dir = test::temp_dir("cli-memory");
  test::write_file(dir / "c.toml", kBase);
  RunRequest r;
  r.config_path = (dir / "c.toml").string();
  r.overrides = {"method.lr_schedule=cosine", "method.lr_min=0.5"};
  r.keep_in_memory = true;
  const std::string in_memory = test::error_of([&] { run_kept_in_memory(prepare_run(r)); });
  CHECK_FALSE(in_memory.empty());
  CHECK(o.out == "error: " + in_memory + "\n");
}

TEST_CASE("InfoReportsVersionBackendsAndThreads") {
  std::string out;
  CHECK(test::run_command(test::stale_bin() + " info", out) == 0);
  CHECK(out.find("stale ") != std::string::npos);
  CHECK(out.find("OpenMP") != std::string::npos);
  CHECK(out.find("backends: cpu") != std::string::npos);
}

TEST_CASE("ReadmeComponentTableIsTheRegistries") {
  // every registered method, delay model, objective and schedule, as `stale list --markdown`
  // prints it from the registries (regenerate with scripts/update_readme_keys.sh)
  std::string table;
  REQUIRE(test::run_command(test::stale_bin() + " list --markdown", table) == 0);
  std::ifstream in(std::string(STALE_SOURCE_DIR) + "/README.md");
  const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto begin = readme.find("<!-- COMPONENTS:BEGIN");
  const auto end = readme.find("<!-- COMPONENTS:END -->");
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  const auto body_start = readme.find('\n', begin) + 1;
  CHECK(readme.substr(body_start, end - body_start) == table);
  for (const char* name : {"rpd", "pipedream", "paci", "localsgd", "uniform", "schedule", "quadratic", "charlm", "zb-h1"})
    CHECK(table.find(std::string("`") + name + "`") != std::string::npos);
}

TEST_CASE("ErrorMessagesListTheRegisteredNames") {
  std::string out;
  CHECK(test::run_command(test::stale_bin() + " run /dev/null method.name=nosuch", out) == 2);
  for (const char* name : {"rpd", "pipedream", "paci", "zb-h1", "2bw"}) CHECK(out.find(name) != std::string::npos);
  CHECK(test::run_command(test::stale_bin() + " run /dev/null delay.name=nosuch", out) == 2);
  for (const char* name : {"zero", "uniform", "geometric", "table", "schedule"}) CHECK(out.find(name) != std::string::npos);
}

TEST_CASE("ReadmeDocumentsEveryConfigKey") {
  std::string keys;
  REQUIRE(test::run_command(test::stale_bin() + " keys", keys) == 0);
  std::ifstream in(std::string(STALE_SOURCE_DIR) + "/README.md");
  const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const auto& s : config_schema()) {
    CAPTURE(s.key);
    CHECK(readme.find("`" + s.key + "`") != std::string::npos);
  }
}

TEST_CASE("VersionIsOneLineWithTheGitSha") {
  std::string out;
  const int rc = test::run_command(test::stale_bin() + " --version", out);
  CAPTURE(out);
  CHECK(rc == 0);
  CHECK(out.rfind("stale ", 0) == 0);
  CHECK(out.find("(git ") != std::string::npos);
  CHECK(std::count(out.begin(), out.end(), '\n') == 1);
}

TEST_SUITE_END();

// Without --out the overrides name the run file (the README's second command, a run of the
// same config with other keys, met the first one's file and was refused): runs/c.h5, then
// runs/c_method.lr=0.02.h5 beside it; a second run of either is refused, as with --out.
TEST_CASE("TheDefaultRunFileIsNamedByTheConfigAndItsOverrides") {
  const auto dir = test::temp_dir("default-name");
  test::write_file(dir / "c.toml", kBase);
  auto run_in_dir = [&](const std::string& args, std::string& out) {
    return test::run_command("cd " + dir.string() + " && " + test::stale_bin() + " run c.toml " + args + " --quiet", out);
  };
  std::string out;
  CHECK(run_in_dir("", out) == 0);
  CHECK(fs::exists(dir / "runs" / "c.h5"));
  CHECK(run_in_dir("method.lr=0.02 delay.name=uniform", out) == 0);
  CAPTURE(out);
  CHECK(fs::exists(dir / "runs" / "c_method.lr=0.02_delay.name=uniform.h5"));
  CHECK(run_in_dir("method.lr=0.02 delay.name=uniform", out) != 0);
  CHECK(out.find("runs/c_method.lr=0.02_delay.name=uniform.h5: a finished run file is already there") != std::string::npos);
  // a path in a value cannot make a folder; many overrides are a short hash
  CHECK(run_in_dir("log.every=5 method.lr=0.0100000000000000001 seed=1 objective.samples=40 method.updates=50 "
                   "objective.batch_size=4 objective.dim=16",
                   out) == 0);
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir / "runs")) {
    ++files;
    CHECK(e.path().filename().string().size() < 110);
  }
  CHECK(files == 3);
}
