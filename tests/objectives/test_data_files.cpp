// The user's own data (objective.generator = "file"): every format objectives/data/data_file
// reads gives the same X, y exactly, through the config as well as directly, and every
// malformed file is one UserError naming the file and what is wrong. The fixtures are made by
// tests/objectives/data_files/make_fixtures.py (X[i, j] = (i + 1)^(j + 1)/8 − 2, y = 1, 0, …).
#include <doctest/doctest.h>

#include <cmath>

#include "objectives/data/data_file.hpp"
#include "objectives/objective_factory.hpp"
#include "src/core/error.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("objectives");

using namespace stale;

namespace {

const std::string kDir = std::string(STALE_SOURCE_DIR) + "/tests/objectives/data_files";

LinearData load(const std::string& spec, bool logistic, const std::string& label = "y") {
  return load_linear_data_file(spec, kDir, label, logistic);
}

Mat expected_X() {
  Mat X(6, 3);
  for (Index i = 0; i < 6; ++i)
    for (Index j = 0; j < 3; ++j) X(i, j) = std::pow(static_cast<double>(i + 1), static_cast<double>(j + 1)) / 8.0 - 2.0;
  return X;
}

Vec expected_y() {
  Vec y(6);
  y << 1, 0, 1, 0, 1, 0;
  return y;
}

// the message of the UserError `spec` raises ("" when it loads)
std::string error_of(const std::string& spec, bool logistic) {
  try {
    load(spec, logistic);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("EveryDataFileFormatReadsTheSameXAndYExactly") {
  struct Case {
    std::string spec, format, label;
    bool has_w;
  };
  for (const Case& c : {Case{"good.npz", "npz", "y", true}, Case{"good_X.npy,good_y.npy", "npy", "y", false},
                        Case{"good_X_fortran_f32.npy, good_y.npy", "npy", "y", false},
                        Case{"good.h5", "hdf5", "y", true}, Case{"good.csv", "csv", "label", false},
                        Case{"good_bom.csv", "csv", "label", false},
                        Case{"good.libsvm", "libsvm", "y", false}}) {
    CAPTURE(c.spec);
    CHECK(data_file_format(c.spec) == c.format);
    const LinearData d = load(c.spec, true, c.label);
    CHECK(d.X == expected_X());  // exact: the values are binary fractions (float32 holds them too)
    CHECK(d.y == expected_y());  // ±1 (csv) and integer labels (npy, h5) become {0, 1}
    CHECK(d.w_true.has_value() == c.has_w);
    if (c.has_w) CHECK(*d.w_true == Vec::Map(std::vector<double>{1.0, -1.0, 0.5}.data(), 3));
  }
  // least squares keeps real-valued targets as they are
  CHECK(load("bad_labels.npz", false).y == Vec::LinSpaced(6, 0, 5));
}

TEST_CASE("FileDataRunThroughTheConfigGiveTheSameObjectiveInEveryFormat") {
  double f_ref = 0, L_ref = 0, fstar_ref = 0;
  for (const std::string spec : {"good.npz", "good_X.npy,good_y.npy", "good.h5", "good.libsvm"}) {
    CAPTURE(spec);
    Config c = test::small_config();
    c.apply_override("objective.name=logistic");
    c.apply_override("objective.generator=file");
    c.apply_override("objective.data=\"" + spec + "\"");
    c.apply_override("objective.data_dir=\"" + kDir + "\"");
    c.apply_override("objective.batch_size=2");
    c.apply_override("objective.stages=3");
    const auto f = make_objective(c, BackendKind::Cpu);
    REQUIRE(f->dim() == 3);
    REQUIRE(f->num_batches() == 3);
    const Vec w = Vec::LinSpaced(3, -0.5, 0.25);
    const double fw = f->value(w);
    if (spec == "good.npz") {
      f_ref = fw, L_ref = f->constants().L, fstar_ref = f->constants().f_star;
    } else {
      CHECK(fw == f_ref);
      CHECK(f->constants().L == L_ref);
      CHECK(f->constants().f_star == doctest::Approx(fstar_ref).epsilon(1e-12));
    }
  }
}

TEST_CASE("LeastSquaresFromAFileGetsItsConstantsFromTheData") {
  Config c = test::small_config();
  c.apply_override("objective.generator=file");
  c.apply_override("objective.data=\"good.npz\"");
  c.apply_override("objective.data_dir=\"" + kDir + "\"");
  c.apply_override("objective.batch_size=2");
  c.apply_override("objective.stages=3");
  // y here is not X w_true, so f_* comes from the normal equations: w_* is stationary and
  // below the value at w_true; L is the Gram matrix's largest eigenvalue
  const auto f = make_objective(c, BackendKind::Cpu);
  const auto& k = f->constants();
  REQUIRE(k.w_star.has_value());
  Vec g, g0;
  f->value_grad(*k.w_star, g);
  f->value_grad(Vec::Zero(3), g0);
  CHECK(g.norm() <= 1e-10 * g0.norm());
  CHECK(k.f_star < f->value(Vec::Map(std::vector<double>{1.0, -1.0, 0.5}.data(), 3)));
  const Mat X = expected_X();
  CHECK(k.L == doctest::Approx(Eigen::SelfAdjointEigenSolver<Mat>(X.transpose() * X / 6.0).eigenvalues().maxCoeff()).epsilon(1e-12));
}

TEST_CASE("EveryMalformedDataFileIsOneLineNamingTheFileAndTheProblem") {
  struct Case {
    std::string spec, file, problem;
    bool logistic;
  };
  for (const Case& c : {
           Case{"bad_truncated.npy,good_y.npy", "bad_truncated.npy", "truncated", false},
           Case{"bad_compressed.npz", "bad_compressed.npz", "deflate-compressed (np.savez_compressed)", false},
           Case{"bad_no_y.h5", "bad_no_y.h5", "no dataset /y", false},
           Case{"bad_field.csv", "bad_field.csv:3", "column \"y\": \"oops\" is not a number", false},
           Case{"good.csv", "good.csv", "no column named \"y\"", false},
           Case{"good_X.npy,bad_short_y.npy", "good_X.npy", "y has 5 entries but X has n = 6 rows", false},
           Case{"bad_labels.npz", "bad_labels.npz", "label y[2] = 2 is not binary", true},
           Case{"bad_huge.npz", "bad_huge.npz", "overflow in double precision once squared", false},
           Case{"bad.libsvm", "bad.libsvm:2", "indices must increase", true},
           Case{"good_X.npy", "good_X.npy", "comma-separated pair", false},
           Case{"good_y.npy,good_y.npy", "good_y.npy", "expected a 2-D n × d matrix", false},
           Case{"good_X.npz", "good_X.npz", "file not found", false},
           Case{"good_X.npy,good.csv", "good.csv", "is not a .npy file", false},
       }) {
    CAPTURE(c.spec);
    const std::string msg = error_of(c.spec, c.logistic);
    CAPTURE(msg);
    CHECK(msg.find(c.file) != std::string::npos);
    CHECK(msg.find(c.problem) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }
}

TEST_CASE("AMalformedDataFileStopsTheCliWithExitCode2AndOneLine") {
  const auto dir = test::temp_dir("bad-data");
  std::string out;
  const int rc = test::run_command(test::stale_bin() + " run " + std::string(STALE_SOURCE_DIR) +
                                       "/experiments/quickstart.toml objective.generator=file objective.data=bad_no_y.h5 "
                                       "objective.data_dir=" + kDir + " --quiet --out " + (dir / "r.h5").string(),
                                   out);
  CHECK(rc == 2);
  CHECK(out.find("bad_no_y.h5: no dataset /y") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "r.h5"));
  CHECK_FALSE(std::filesystem::exists(dir / "r.h5.partial"));
}

TEST_SUITE_END();
