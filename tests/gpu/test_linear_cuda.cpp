// The CUDA linear models against their CPU twin (objectives/linear/linear_model_cpu.cpp): every
// Objective entry point — full value and gradient, mini-batch value and gradient, block
// gradients, the stage-wise forward / loss head / backward, and the batched gradients —
// agrees on random points, at awkward sizes (d not a multiple of 32, S not dividing d,
// batches of unequal size), to 1e-12 relative in float64 and 1e-5 in float32. On the device
// itself, as on the CPU, the stage-wise pipeline's gradient equals the mini-batch gradient
// bit for bit (what PipeDream ≡ RPD-replaying-its-delays needs). A short RPD run on each
// backend ends at the same iterate to 1e-10.
//
// Each test skips with a message when no device is present and fails under
// STALE_REQUIRE_GPU=1 (tests/support/gpu_test_util.hpp).
#include <doctest/doctest.h>

#include <cstring>

#include "objectives/linear/linear_model_cuda.hpp"
#include "src/run/runner.hpp"
#include "tests/support/gpu_test_util.hpp"

TEST_SUITE_BEGIN("gpu");

using namespace stale;
using test::rel_err;

namespace {

// d = 203 (6 blocks of 34/33: S does not divide d), n = 317 in 16 batches of 20 and 19
const char* kQuadratic = R"(
seed = 5
[objective]
name = "quadratic"
generator = "random"
dim = 203
samples = 317
batch_size = 19
stages = 6
)";

// d = 77, n = 250 in 9 batches of 28 and 27, S = 4, with the regulariser
const char* kLogistic = R"(
seed = 9
[objective]
name = "logistic"
generator = "synthetic"
dim = 77
samples = 250
batch_size = 27
stages = 4
l2 = 0.01
)";

Config config_for(const char* toml, const std::string& precision) {
  Config cfg = Config::from_string(toml, "gpu.toml");
  cfg.apply_override("precision=" + precision);
  return cfg;
}

// the stage-wise pipeline of batch m at w, comparing every intermediate of the two twins
void check_pipeline(const Objective& cpu, const Objective& gpu, int m, const Vec& w, double tol) {
  const auto& P = cpu.blocks();
  Mat act_c = cpu.input_activation(m), act_g = gpu.input_activation(m);
  std::vector<std::unique_ptr<StageCache>> cc(P.stages()), cg(P.stages());
  for (int s = 0; s < P.stages(); ++s) {
    Mat out_c, out_g;
    cpu.stage_forward(s, m, act_c, P.block(w, s), out_c, cc[s]);
    // the GPU stage is fed the CPU activation so each stage is checked on its own
    gpu.stage_forward(s, m, act_c, P.block(w, s), out_g, cg[s]);
    CAPTURE(s);
    CHECK(rel_err(out_g, out_c) <= tol);
    act_c = out_c;
    act_g = out_g;
  }
  Mat grad_c, grad_g;
  const double loss_c = cpu.loss_forward_backward(m, act_c, grad_c);
  const double loss_g = gpu.loss_forward_backward(m, act_c, grad_g);
  CHECK(rel_err(loss_g, loss_c) <= tol);
  CHECK(rel_err(grad_g, grad_c) <= tol);
  for (int s = P.stages() - 1; s >= 0; --s) {
    Vec gw_c(P.size(s)), gw_g(P.size(s));
    Mat in_c, in_g;
    cpu.stage_backward(s, m, grad_c, P.block(w, s), cc[s].get(), gw_c, in_c);
    gpu.stage_backward(s, m, grad_c, P.block(w, s), cg[s].get(), gw_g, in_g);
    CAPTURE(s);
    CHECK(rel_err(gw_g, gw_c) <= tol);
    CHECK(rel_err(in_g, in_c) <= tol);
    grad_c = in_c;
  }
}


bool bit_equal(const Vec& a, const Vec& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0;
}

void check_equivalent(const Config& cfg) {
  const auto cpu = make_objective(cfg, BackendKind::Cpu);
  const auto gpu = make_objective(cfg, BackendKind::Cuda);
  const double tol = test::tolerance(cfg);
  CHECK(gpu->backend() == "cuda");
  CHECK(gpu->precision() == cfg.get_string("precision"));
  CHECK(gpu->name() == cpu->name());
  REQUIRE(gpu->dim() == cpu->dim());
  REQUIRE(gpu->num_batches() == cpu->num_batches());
  CHECK(gpu->constants().L == cpu->constants().L);
  const int M = cpu->num_batches();
  for (uint64_t seed : {1, 2, 3}) {
    CAPTURE(seed);
    const Vec w = test::random_vec(cpu->dim(), seed);
    CHECK(rel_err(gpu->value(w), cpu->value(w)) <= tol);
    Vec gc, gg;
    const double fc = cpu->value_grad(w, gc), fg = gpu->value_grad(w, gg);
    CHECK(rel_err(fg, fc) <= tol);
    CHECK(rel_err(gg, gc) <= tol);
    for (int m : {0, M / 2, M - 1}) {
      CAPTURE(m);
      const double bc = cpu->batch_value_grad(w, m, gc), bg = gpu->batch_value_grad(w, m, gg);
      CHECK(rel_err(bg, bc) <= tol);
      CHECK(rel_err(gg, gc) <= tol);
      for (int s = 0; s < cpu->stages(); ++s) {
        Vec sc(cpu->blocks().size(s)), sg(cpu->blocks().size(s));
        cpu->batch_block_grad(w, m, s, sc);
        gpu->batch_block_grad(w, m, s, sg);
        CAPTURE(s);
        CHECK(rel_err(sg, sc) <= tol);
      }
      check_pipeline(*cpu, *gpu, m, w, tol);
      // on the device alone: pipeline gradient ≡ batch gradient ≡ block gradients, bitwise
      Vec gp, gb;
      test::pipeline_value_grad(*gpu, m, w, gp);
      gpu->batch_value_grad(w, m, gb);
      CHECK(bit_equal(gp, gb));
      for (int s = 0; s < gpu->stages(); ++s) {
        Vec sg(gpu->blocks().size(s));
        gpu->batch_block_grad(w, m, s, sg);
        CAPTURE(s);
        CHECK(bit_equal(sg, gpu->blocks().block(gp, s)));
      }
    }
  }
}

}  // namespace

TEST_CASE("CudaObjectiveWithoutDeviceSaysWhy") {
  if (cuda_device_count() > 0) return;  // only meaningful without a device
  const Config cfg = config_for(kQuadratic, "float64");
  CHECK_THROWS_WITH_AS(make_objective(cfg, BackendKind::Cuda), doctest::Contains("backend cuda"), UserError);
}

TEST_CASE("QuadraticCudaIsEquivalentToCpu") {
  if (!test::have_gpu()) return;
  for (const char* precision : {"float64", "float32"}) {
    CAPTURE(precision);
    check_equivalent(config_for(kQuadratic, precision));
  }
  // a second shape: d a multiple of neither 32 nor S, one batch holding every row
  Config big = config_for(kQuadratic, "float64");
  for (const char* kv : {"objective.dim=517", "objective.samples=1031", "objective.batch_size=1031", "objective.stages=5"})
    big.apply_override(kv);
  check_equivalent(big);
}

TEST_CASE("LogisticCudaIsEquivalentToCpu") {
  if (!test::have_gpu()) return;
  for (const char* precision : {"float64", "float32"}) {
    CAPTURE(precision);
    check_equivalent(config_for(kLogistic, precision));
  }
}

// objective.nonconvex_reg: the CUDA twin adds the regulariser on the host, with the CPU twin's
// own code, to every entry point (full, mini-batch, block, stage-wise, batched), and the
// constants it is handed are the nonconvex ones
TEST_CASE("NonconvexRegulariserCudaIsEquivalentToCpu") {
  if (!test::have_gpu()) return;
  for (const char* toml : {kQuadratic, kLogistic}) {
    for (const char* precision : {"float64", "float32"}) {
      Config cfg = config_for(toml, precision);
      cfg.apply_override("objective.nonconvex_reg=0.3");
      CAPTURE(cfg.get_string("objective.name"));
      CAPTURE(precision);
      check_equivalent(cfg);
      const auto cpu = make_objective(cfg, BackendKind::Cpu);
      const auto gpu = make_objective(cfg, BackendKind::Cuda);
      CHECK(gpu->constants().f_star_is_lower_bound);
      CHECK(gpu->constants().f_star == cpu->constants().f_star);
      const double tol = test::tolerance(cfg);
      const Mat Z = test::random_mat(cpu->dim(), 5, 29);
      Mat Gc, Gg;
      Vec vc, vg;
      cpu->value_grad_many(Z, Gc, vc);
      gpu->value_grad_many(Z, Gg, vg);
      const std::vector<int> batches = {1, 1, 0, cpu->num_batches() - 1, 1};
      Mat Bc, Bg;
      cpu->batch_grad_many(Z, batches, Bc);
      gpu->batch_grad_many(Z, batches, Bg);
      for (Index p = 0; p < Z.cols(); ++p) {
        CAPTURE(p);
        CHECK(rel_err(Gg.col(p), Gc.col(p)) <= tol);
        CHECK(rel_err(vg(p), vc(p)) <= tol);
        CHECK(rel_err(Bg.col(p), Bc.col(p)) <= tol);
      }
    }
  }
}

TEST_CASE("BatchedGradientsCudaAreEquivalentToCpu") {
  if (!test::have_gpu()) return;
  for (const char* toml : {kQuadratic, kLogistic}) {
    for (const char* precision : {"float64", "float32"}) {
      const Config cfg = config_for(toml, precision);
      CAPTURE(cfg.get_string("objective.name"));
      CAPTURE(precision);
      const auto cpu = make_objective(cfg, BackendKind::Cpu);
      const auto gpu = make_objective(cfg, BackendKind::Cuda);
      const double tol = test::tolerance(cfg);
      const int M = cpu->num_batches();
      // mixed stale points of one run (batches repeat, some alone, out of order), then the
      // same step of P runs of a sweep (one batch)
      const std::vector<std::vector<int>> layouts = {{3, 0, 3, M - 1, 5, 3, 0, 2, M - 1}, std::vector<int>(8, 1)};
      for (const auto& batches : layouts) {
        const Mat Z = test::random_mat(cpu->dim(), static_cast<Index>(batches.size()), 17);
        Mat Gc, Gg;
        cpu->batch_grad_many(Z, batches, Gc);
        gpu->batch_grad_many(Z, batches, Gg);
        REQUIRE(Gg.cols() == Z.cols());
        for (Index p = 0; p < Z.cols(); ++p) {
          CAPTURE(p);
          Vec g;
          cpu->batch_value_grad(Z.col(p), batches[p], g);
          CHECK(rel_err(Gg.col(p), Gc.col(p)) <= tol);
          CHECK(rel_err(Gg.col(p), g) <= tol);
        }
      }
      const Mat Z = test::random_mat(cpu->dim(), 6, 23);
      Mat Gc, Gg;
      Vec vc, vg;
      cpu->value_grad_many(Z, Gc, vc);
      gpu->value_grad_many(Z, Gg, vg);
      for (Index p = 0; p < Z.cols(); ++p) {
        CAPTURE(p);
        CHECK(rel_err(Gg.col(p), Gc.col(p)) <= tol);
        CHECK(rel_err(vg(p), vc(p)) <= tol);
      }
    }
  }
}

TEST_CASE("RpdRunOnCudaIsEquivalentToCpu") {
  if (!test::have_gpu()) return;
  const auto dir = test::temp_dir("gpu-rpd");
  for (const char* objective : {"quadratic", "logistic"}) {
    CAPTURE(objective);
    // stale reads (uniform delays up to 6) and noisy gradients, so the run exercises the
    // version store and every stage, on awkward sizes
    Config cfg = test::small_config("[delay]\nname = \"uniform\"\nmax = 6\n");
    cfg.apply_override(std::string("objective.name=") + objective);
    if (std::string(objective) == "logistic") cfg.apply_override("objective.generator=synthetic");
    cfg.apply_override("objective.grad_noise_std=0.1");
    cfg.apply_override("precision=float64");
    Config on_cpu = cfg, on_gpu = cfg;
    on_cpu.apply_override("backend=cpu");
    on_gpu.apply_override("backend=cuda");
    const RunResult a = run_experiment(on_cpu, (dir / (std::string(objective) + "-cpu.h5")).string(), false);
    const RunResult b = run_experiment(on_gpu, (dir / (std::string(objective) + "-gpu.h5")).string(), false);
    REQUIRE(a.updates == b.updates);
    CHECK(a.status == "ok");
    CHECK(b.status == "ok");
    CHECK(rel_err(b.final_w, a.final_w) <= 1e-10);
    CHECK(rel_err(b.last.loss, a.last.loss) <= 1e-10);
  }
}

TEST_SUITE_END();
