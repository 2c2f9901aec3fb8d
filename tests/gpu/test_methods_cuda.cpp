// Every registered method driving the CUDA objectives: the one loop per method (rpd's, the
// schedule executor's, the fresh-read ones) reads the version store and calls the stage-wise
// forward and backward passes of a device objective as it does those of the cpu twin, so a run
// on backend = "cuda" follows the run on the cpu. Iterates the method registry: a new method
// is covered without an edit here. Skipped without a device (failed with STALE_REQUIRE_GPU=1).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "objectives/charlm/charlm_cuda_engine.hpp"
#include "optimizers/method_registry.hpp"
#include "src/run/runner.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/gpu_test_util.hpp"

using namespace stale;

namespace {

struct Pair {
  RunResult cpu, gpu;
};

Pair run_on_both(const Config& cfg, const std::string& tag) {
  const auto dir = test::temp_dir("gpu-methods");
  Config on_cpu = cfg, on_gpu = cfg;
  on_cpu.apply_override("backend=cpu");
  on_gpu.apply_override("backend=cuda");
  Pair p{run_experiment(on_cpu, (dir / (tag + "-cpu.h5")).string(), false),
         run_experiment(on_gpu, (dir / (tag + "-gpu.h5")).string(), false)};
  REQUIRE(p.cpu.updates == p.gpu.updates);
  CHECK(p.cpu.status == "ok");
  CHECK(p.gpu.status == "ok");
  return p;
}

std::string delay_keys(const MethodEntry& m) {
  return m.kind == MethodKind::DelayDriven ? "[delay]\nname = \"uniform\"\nmax = 6\n" : "";
}

}  // namespace

TEST_SUITE_BEGIN("gpu");

// least squares and logistic regression in float64: the device sums in its own order, so
// rounding only (the tolerance of RpdRunOnCudaIsEquivalentToCpu) over 400 stale updates
TEST_CASE("EveryRegisteredMethodRunsOnTheCudaLinearModelsAsOnTheCpu") {
  if (!test::have_gpu()) return;
  int runs = 0;
  for (const char* objective : {"quadratic", "logistic"}) {
    for (const auto& m : MethodRegistry::entries()) {
      CAPTURE(objective);
      CAPTURE(m.name);
      Config cfg = test::small_config(delay_keys(m));
      cfg.apply_override(std::string("objective.name=") + objective);
      if (std::string(objective) == "logistic") cfg.apply_override("objective.generator=synthetic");
      cfg.apply_override("method.name=" + m.name);
      cfg.apply_override("objective.stages=4");  // a multiple of interleaved's method.chunks = 2
      cfg.apply_override("precision=float64");
      const Pair p = run_on_both(cfg, std::string(objective) + "-" + m.name);
      CHECK(test::rel_err(p.gpu.final_w, p.cpu.final_w) <= 1e-10);
      CHECK(test::rel_err(p.gpu.last.loss, p.cpu.last.loss) <= 1e-10);
      ++runs;
    }
  }
  CHECK(runs >= 2 * 14);  // sgd, bcd, rpd and the schedule methods, at least
}

// the char-level GPT in float32 on both sides (cuBLAS against Eigen, summed in different
// orders): 160 updates of every method keep the iterates within 1e-4 relative (MESSAGE prints
// the measured figures)
TEST_CASE("EveryRegisteredMethodRunsOnTheCudaCharLmAsOnTheCpuTwin") {
  if (!test::have_gpu() || !test::have_data_file("tinyshakespeare.txt")) return;
  if (!charlm_cuda_compiled()) {
    test::skip_test("this binary holds the stub of the charlm CUDA twin (charlm_cuda_nocuda.cpp)");
    return;
  }
  double worst_w = 0, worst_loss = 0;
  for (const auto& m : MethodRegistry::entries()) {
    CAPTURE(m.name);
    Config cfg = Config::from_string("seed = 2\nprecision = \"float32\"\n" + test::small_charlm_objective_toml(4) + R"(
[method]
lr = 0.1
updates = 160
[log]
progress = false
every = 16
exact_mean = false
)" + delay_keys(m),
                                     "charlm_methods.toml");
    cfg.apply_override("method.name=" + m.name);
    const Pair p = run_on_both(cfg, "charlm-" + m.name);
    const double dw = test::rel_err(p.gpu.final_w, p.cpu.final_w);
    const double dl = test::rel_err(p.gpu.last.loss, p.cpu.last.loss);
    CHECK(dw <= 1e-4);
    CHECK(dl <= 1e-4);
    CHECK(p.gpu.last.loss < std::log(65.0));  // it learned on the device too
    worst_w = std::max(worst_w, dw);
    worst_loss = std::max(worst_loss, dl);
  }
  MESSAGE("charlm float32, cuda against cpu: worst iterate difference " << worst_w << ", worst loss difference "
                                                                         << worst_loss);
}

TEST_SUITE_END();
