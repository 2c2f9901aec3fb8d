// The harness against an independent reference: tests/reference/reference.py is a slow NumPy
// implementation of RPD, PipeDream (with and without stashing), PACI, 2BW, GPipe, 1F1B-flush
// and LocalSGD written from docs/theory.md alone, with its own unit-slot scheduler.
// tests/reference/make_golden.py ran it and wrote tests/reference/golden/: least-squares and
// logistic data (read here through objective.generator = "file"), and for S ∈ {2, 4, 8} the
// loss f(w_k) and iterate w_k at every block update of every method, for the convex objectives
// and for the same data with the smooth nonconvex regulariser (objective.nonconvex_reg > 0). Each method runs through
// the harness's own entry (make_method; RPD through make_rpd with the reference's delay table,
// stages and batches) and must agree at every update to 1e-12 relative, and update the same
// stage on the same batch in the same order.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include "delays/delay_model.hpp"
#include "objectives/objective_factory.hpp"
#include "optimizers/method.hpp"
#include "src/io/h5.hpp"
#include "tests/support/observers.hpp"
#include "tests/support/tolerances.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("reference");

namespace stale {
// optimizers/rpd.cpp: RPD over a delay model, with a given stage and batch order
}  // namespace stale

using namespace stale;

namespace {

// must equal GOLDEN_VERSION of tests/reference/make_golden.py
constexpr int64_t kGoldenVersion = 1;
constexpr double kTol = test::tol::kReordered;  // the NumPy reference sums in its own order
const std::string kRegenerate =
    "regenerate the golden files with `python3 tests/reference/make_golden.py` (the reference is "
    "tests/reference/reference.py) once you know which side is wrong against docs/theory.md";
const std::string kGoldenDir = std::string(STALE_SOURCE_DIR) + "/tests/reference/golden";

using Recorder = test::IterateRecorder;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, sep);)
    if (!part.empty()) out.push_back(part);
  return out;
}

struct Comparison {
  double worst_iterate = 0, worst_loss = 0;
  std::string first_failure;
};

Comparison compare(const Objective& f, const Recorder& h, const std::vector<double>& ref_iterates, hsize_t d,
                   const std::vector<double>& ref_loss, const std::vector<int64_t>& ref_stage,
                   const std::vector<int64_t>& ref_mb) {
  Comparison c;
  const size_t K = ref_loss.size() - 1;
  if (h.iterates.size() != K + 1) {
    c.first_failure = "the harness made " + std::to_string(h.iterates.size() - 1) + " updates, the reference " +
                      std::to_string(K);
    return c;
  }
  for (size_t k = 0; k <= K; ++k) {
    const Vec ref = Eigen::Map<const Vec>(ref_iterates.data() + k * d, static_cast<Index>(d));
    const double e_it = (h.iterates[k] - ref).norm() / std::max(ref.norm(), 1e-300);
    const double loss = f.value(h.iterates[k]);
    const double e_loss = std::abs(loss - ref_loss[k]) / std::max(std::abs(ref_loss[k]), 1e-300);
    c.worst_iterate = std::max(c.worst_iterate, e_it);
    c.worst_loss = std::max(c.worst_loss, e_loss);
    std::ostringstream why;
    why.precision(17);
    if (k > 0 && (h.events[k - 1].stage != ref_stage[k - 1] ||
                  h.events[k - 1].batch != ref_mb[k - 1] % static_cast<int64_t>(f.num_batches())))
      why << "update " << k << " is stage " << h.events[k - 1].stage << ", batch " << h.events[k - 1].batch
          << " in the harness, stage " << ref_stage[k - 1] << ", micro-batch " << ref_mb[k - 1]
          << " in the reference";
    else if (!(e_it <= kTol) || !(e_loss <= kTol))
      why << "at update k = " << k << ": iterate rel. error " << e_it << ", loss " << loss << " vs " << ref_loss[k]
          << " (rel. " << e_loss << ")";
    if (c.first_failure.empty() && !why.str().empty()) c.first_failure = why.str();
  }
  return c;
}

}  // namespace

TEST_CASE("EveryMethodMatchesTheNumPyReferenceAtEveryUpdateTo1e-12") {
  int cases = 0;
  for (const std::string objective : {"least_squares", "logistic", "least_squares_nonconvex", "logistic_nonconvex"}) {
    for (int S : {2, 4, 8}) {
      const std::string path = kGoldenDir + "/" + objective + "_S" + std::to_string(S) + ".h5";
      CAPTURE(path);
      auto file = h5::open_file_readonly(path);
      const int64_t version = h5::read_attr_int(file.id(), "golden_version");
      REQUIRE_MESSAGE(version == kGoldenVersion, "golden version " << version << " but the test expects "
                                                                   << kGoldenVersion << ": " << kRegenerate);
      Config base = Config::from_string("seed = 0\nbackend = \"cpu\"\n[log]\nprogress = false\n", "golden.toml");
      for (const auto& o : split(h5::read_attr_string(file.id(), "objective"), '\n')) base.apply_override(o);
      base.apply_override("objective.data_dir=\"" + kGoldenDir + "\"");
      const auto f = make_objective(base, BackendKind::Cpu);  // the data through the file reader
      REQUIRE(f->stages() == S);

      for (const auto& name : split(h5::read_attr_string(file.id(), "methods"), ',')) {
        CAPTURE(name);
        auto g = h5::open_group(file.id(), name);
        Config cfg = base;
        for (const auto& o : split(h5::read_attr_string(g.id(), "overrides"), '\n')) cfg.apply_override(o);
        hsize_t rows = 0, d = 0;
        const auto ref_iterates = h5::read_matrix_double(g.id(), "iterates", rows, d);
        const auto ref_loss = h5::read_vector_double(g.id(), "loss");
        const auto ref_stage = h5::read_vector_int(g.id(), "stage");
        const auto ref_mb = h5::read_vector_int(g.id(), "microbatch");
        REQUIRE(d == static_cast<hsize_t>(f->dim()));

        std::unique_ptr<Method> m;
        if (cfg.get_string("method.name") == "rpd") {
          hsize_t K = 0, cols = 0;
          auto table = h5::read_matrix_int(g.id(), "delays", K, cols);
          RpdOrder order;
          for (auto s : ref_stage) order.stages.push_back(static_cast<int>(s));
          for (auto b : h5::read_vector_int(g.id(), "batch")) order.batches.push_back(static_cast<int>(b));
          m = make_rpd(MethodParams::from_config(cfg),
                       make_table_delay(std::move(table), static_cast<int64_t>(K), static_cast<int>(cols), "golden"),
                       std::move(order));
        } else {
          m = make_method(cfg, *f);
        }
        Recorder h;
        Vec w = Vec::Zero(f->dim());
        m->run(*f, w, h);
        const Comparison c = compare(*f, h, ref_iterates, d, ref_loss, ref_stage, ref_mb);
        MESSAGE(objective << " S=" << S << " " << name << ": " << ref_loss.size() - 1
                          << " updates, worst rel. error iterate " << c.worst_iterate << ", loss " << c.worst_loss);
        CHECK_MESSAGE(c.first_failure.empty(), objective << " S=" << S << " " << name << ": " << c.first_failure
                                                         << "; " << kRegenerate);
        ++cases;
      }
    }
  }
  CHECK(cases == 4 * 3 * 8);
}

TEST_SUITE_END();
