// `stale sample`: text from the run of a text model. It asks the objective registry which
// objectives generate text (ObjectiveEntry::generates_text) and the objective for its
// TextModel, so a new text model needs no edit of the command; a run of any other objective
// is a one-line refusal (exit 2) that names what would do.
#include <doctest/doctest.h>

#include <cctype>
#include <set>
#include <string>

#include "objectives/data/text_data.hpp"
#include "objectives/objective_factory.hpp"
#include "objectives/objective_registry.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/skip.hpp"
#include "tests/support/test_util.hpp"

using namespace stale;

namespace {

// a least-squares run of milliseconds
std::string linear_toml() {
  return test::small_run_toml({.header = "seed = 3\nbackend = \"cpu\"\n", .dim = 24, .samples = 48, .batch_size = 6,
                               .stages = 4, .method = "sgd", .updates = 50, .log_every = 10});
}

// runs `toml` with the CLI into dir/name.h5
std::string run_config(const std::filesystem::path& dir, const std::string& name, const std::string& toml) {
  const auto cfg = dir / (name + ".toml");
  test::write_file(cfg, toml);
  const auto out = dir / (name + ".h5");
  std::string log;
  const int rc = test::run_command(test::stale_bin() + " run " + cfg.string() + " --out " + out.string() + " --quiet", log);
  INFO(log);
  REQUIRE(rc == 0);
  return out.string();
}

// stdout alone (the text) of `stale sample ARGS`, and its exit code
int sample(const std::string& args, std::string& text) {
  return test::run_command("(" + test::stale_bin() + " sample " + args + " 2>/dev/null)", text);
}

}  // namespace

TEST_SUITE_BEGIN("cli");

TEST_CASE("SampleGeneratesTextFromATextModelsRunAndIsSeeded") {
  if (!test::have_data_file("tinyshakespeare.txt")) return;
  const auto dir = test::temp_dir("sample");
  std::string toml = test::tiny_charlm_toml(40);
  toml.replace(toml.find("[log]\n"), 6, "[log]\niterates_every = 40\n");
  const std::string run = run_config(dir, "lm", toml);
  std::string a, b, c, greedy1, greedy2;
  REQUIRE(sample(run + " --chars 60 --seed 3 --prompt First", a) == 0);
  REQUIRE(sample(run + " --chars 60 --seed 3 --prompt First", b) == 0);
  REQUIRE(sample(run + " --chars 60 --seed 4 --prompt First", c) == 0);
  CHECK(a == b);  // the sampling stream is the seed's
  CHECK(a != c);
  CHECK(a.rfind("First", 0) == 0);
  CHECK(a.size() == 5 + 60 + 1);  // the prompt, 60 characters, the newline
  // every character is the corpus's (the vocabulary of Tiny Shakespeare: letters, punctuation, whitespace)
  for (char ch : a) CHECK((std::isprint(static_cast<unsigned char>(ch)) || ch == '\n'));
  REQUIRE(sample(run + " --chars 30 --temperature 0 --seed 1", greedy1) == 0);
  REQUIRE(sample(run + " --chars 30 --temperature 0 --seed 2", greedy2) == 0);
  CHECK(greedy1 == greedy2);  // τ = 0 is the arg-max: no draw
  // a prompt byte outside the vocabulary is a one-line error
  std::string log;
  CHECK(test::run_command(test::stale_bin() + " sample " + run + " --prompt \"$(printf '\\001')\"", log) == 2);
  CHECK(log.find("not in the corpus's vocabulary") != std::string::npos);
}

TEST_CASE("SampleRefusesARunOfAnObjectiveThatModelsNoTextNamingTheOnesThatDo") {
  const auto dir = test::temp_dir("sample-refused");
  const std::string run = run_config(dir, "q", linear_toml());
  std::string log;
  CHECK(test::run_command(test::stale_bin() + " sample " + run, log) == 2);
  CHECK(log.find("objective.name is \"quadratic\", which models no text") != std::string::npos);
  for (const auto& e : ObjectiveRegistry::entries())
    if (e.generates_text) CHECK(log.find("\"" + e.name + "\"") != std::string::npos);
}

// the registry's trait and the objective's capability agree, for every objective the
// registry can build from the small linear config (the text models are built by the test
// above through the command)
TEST_CASE("AnObjectiveIsATextModelExactlyWhenItsEntrySaysSo") {
  std::set<std::string> text;
  for (const auto& e : ObjectiveRegistry::entries())
    if (e.generates_text) text.insert(e.name);
  CHECK(!text.empty());
  for (const char* name : {"quadratic", "logistic"}) {
    CAPTURE(name);
    Config cfg = Config::from_string(linear_toml(), "small.toml");
    cfg.apply_override(std::string("objective.name=") + name);
    if (std::string(name) == "logistic") cfg.apply_override("objective.generator=synthetic");
    CHECK(make_objective(cfg, BackendKind::Cpu)->text_model() == nullptr);
    CHECK(text.count(name) == 0);
  }
  if (!test::have_data_file("tinyshakespeare.txt")) return;
  for (const auto& name : text) {
    CAPTURE(name);
    Config cfg = Config::from_string(test::tiny_charlm_toml(10), "lm.toml");
    cfg.apply_override("objective.name=" + name);
    const auto f = make_objective(cfg, BackendKind::Cpu);
    REQUIRE(f->text_model() != nullptr);
    CHECK(f->text_model()->context() >= 1);
    CHECK(f->text_model()->text().vocab_size() >= 2);
  }
}

TEST_SUITE_END();
