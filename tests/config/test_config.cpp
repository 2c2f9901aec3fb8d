// Config parsing: TOML sections, overrides, types, ranges, the resolved dump.
#include <doctest/doctest.h>

#include "src/config/config.hpp"
#include "src/core/error.hpp"

TEST_SUITE_BEGIN("config");

using namespace stale;

TEST_CASE("ConfigFillsDefaultsAndReadsSections") {
  const Config c = Config::from_string("seed = 4\n[method]\nlr = 1\nname = \"bcd\"\n", "t.toml");
  CHECK(c.get_int("seed") == 4);
  CHECK(c.get_float("method.lr") == 1.0);  // an integer is a valid float
  CHECK(c.get_string("method.name") == "bcd");
  CHECK(c.get_int("objective.dim") == 512);
  CHECK(c.is_set("method.lr"));
  CHECK_FALSE(c.is_set("objective.dim"));
}

TEST_CASE("OverridesParseTomlValuesAndBareWords") {
  Config c;
  c.apply_override("method.name=sgd");
  c.apply_override("method.lr=2.5e-3");
  c.apply_override("log.exact_mean=false");
  c.apply_override("objective.data=\"w7a.libsvm\"");
  CHECK(c.get_string("method.name") == "sgd");
  CHECK(c.get_float("method.lr") == 2.5e-3);
  CHECK(c.get_string("log.exact_mean") == "false");  // a TOML bool for the tristate key
  CHECK(c.get_string("objective.data") == "w7a.libsvm");
  CHECK_THROWS_WITH_AS(c.apply_override("method.lr"), doctest::Contains("key=value"), UserError);
}

TEST_CASE("BadValuesNameTheKeyAndWhatIsValid") {
  CHECK_THROWS_WITH_AS(Config::from_string("[objective]\ndim = 0\n", "f.toml"), doctest::Contains("objective.dim"), UserError);
  CHECK_THROWS_WITH_AS(Config::from_string("[objective]\ndim = 2.5\n", "f.toml"), doctest::Contains("integer"), UserError);
  // a key that names a component lists its registry's names: checked in tests/run, which links them
  CHECK_THROWS_WITH_AS(Config::from_string("[method]\nlr_schedule = \"linear\"\n", "f.toml"),
                       doctest::Contains("constant, cosine"), UserError);
  CHECK_THROWS_WITH_AS(Config::from_string("[method]\nlr = \"fast\"\n", "f.toml"), doctest::Contains("method.lr must be float"),
                       UserError);
  CHECK_THROWS_WITH_AS(Config::from_string("[method\n", "f.toml"), doctest::Contains("f.toml:1"), UserError);
  CHECK_THROWS_WITH_AS(Config::from_string("[methods]\nlr = 1\n", "f.toml"), doctest::Contains("unknown config key 'methods.lr'"),
                       UserError);
}

TEST_CASE("NonconvexRegMustBeFiniteAndNonNegative") {
  CHECK(Config::from_string("", "f.toml").get_float("objective.nonconvex_reg") == 0.0);  // off by default
  CHECK(Config::from_string("[objective]\nnonconvex_reg = 0.25\n", "f.toml").get_float("objective.nonconvex_reg") == 0.25);
  for (const char* bad : {"-0.5", "-1e-300", "inf", "nan", "-inf"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(Config::from_string(std::string("[objective]\nnonconvex_reg = ") + bad + "\n", "f.toml"),
                         doctest::Contains("objective.nonconvex_reg = "), UserError);
    CHECK_THROWS_WITH_AS(Config::from_string(std::string("[objective]\nnonconvex_reg = ") + bad + "\n", "f.toml"),
                         doctest::Contains("is out of range; valid: >= 0"), UserError);
  }
  CHECK_THROWS_WITH_AS(Config::from_string("[objective]\nnonconvex_reg = \"big\"\n", "f.toml"),
                       doctest::Contains("objective.nonconvex_reg must be float"), UserError);
}

TEST_CASE("ResolvedConfigRoundTrips") {
  Config c = Config::from_string("seed = 9\n[delay]\nname = \"uniform\"\nmax = 60\n", "t.toml");
  c.apply_override("objective.stages=4");
  const Config back = Config::from_string(c.to_toml(), "dump");
  CHECK(back.to_toml() == c.to_toml());
  CHECK(back.get_int("delay.max") == 60);
  CHECK(back.get_int("objective.stages") == 4);
}

// issue 34: a quoted dotted key is the dotted key (as in sweep files' [grid] and [set]); the
// same key spelled both ways would let the later one win silently, and is refused
TEST_CASE("AQuotedDottedKeyNamesTheDottedKeyAndTwoSpellingsOfOneKeyAreRefused") {
  const Config c = Config::from_string("\"method.lr\" = 0.5\n", "q.toml");
  CHECK(c.get_float("method.lr") == 0.5);
  CHECK(c.is_set("method.lr"));
  CHECK_THROWS_WITH_AS(Config::from_string("\"method.lr\" = 0.5\n[method]\nlr = 0.1\n", "q.toml"),
                       doctest::Contains("q.toml:1: method.lr is given twice (line 3 and here"), UserError);
}

TEST_CASE("AKeyGivenTwiceAmongTheOverridesIsRefusedAndOnceIsApplied") {
  Config c;
  c.apply_overrides({"method.lr=0.1", "seed=3"});
  CHECK(c.get_float("method.lr") == 0.1);
  CHECK_THROWS_WITH_AS(c.apply_overrides({"method.lr=0.1", "method.lr=0.2"}),
                       doctest::Contains("method.lr is already given as 'method.lr=0.1'"), UserError);
  CHECK_THROWS_WITH_AS(c.apply_overrides({"~method.lr", "method.lr=0.2"}), doctest::Contains("already given"), UserError);
}

TEST_CASE("ANulInAStringValueIsRefusedNamingTheKey") {
  CHECK_THROWS_WITH_AS(Config::from_string("[log]\nout = \"a\\u0000b.h5\"\n", "n.toml"),
                       doctest::Contains("log.out = \"a\\x00b.h5\" contains a NUL byte"), UserError);
}

TEST_CASE("AdamWBetasMustStayBelowOne") {
  CHECK(Config::from_string("[method]\nbeta1 = 0.999999\n", "b.toml").get_float("method.beta1") == 0.999999);
  CHECK_THROWS_WITH_AS(Config::from_string("[method]\nbeta2 = 1.0\n", "b.toml"),
                       doctest::Contains("method.beta2 = 1 is out of range; valid: >= 0 and < 1"), UserError);
}

TEST_CASE("AConfigFileIsReadUpToACapNotForever") {
  CHECK_THROWS_WITH_AS(Config::from_file("/dev/zero"), doctest::Contains("/dev/zero: more than 16 MiB read"), UserError);
}

TEST_SUITE_END();
