// The character-level GPT (objectives/charlm/charlm*.{hpp,cpp}): every layer's backward and the
// whole model's gradient against central finite differences (double), the stage-wise
// pipeline against the monolithic path (bit for bit), float32 against float64, thread-count
// independence, the data pipeline and the config seam.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include "objectives/charlm/charlm.hpp"
#include "objectives/charlm/charlm_cpu.hpp"
#include "objectives/charlm/charlm_layers.hpp"
#include "objectives/data/libsvm.hpp"
#include "objectives/objective_factory.hpp"
#include "tests/support/finite_difference.hpp"
#include "tests/support/skip.hpp"
#include "tests/support/tolerances.hpp"
#include "tests/support/test_util.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

TEST_SUITE_BEGIN("objectives");

using namespace stale;

namespace {

using test::rel_err;

std::vector<double> randn(Index n, uint64_t seed, double scale = 1.0) {
  Rng rng(seed, Stream::Init, 99);
  std::vector<double> v(n);
  for (auto& x : v) x = scale * rng.normal();
  return v;
}

Vec as_vec(const std::vector<double>& v) { return Eigen::Map<const Vec>(v.data(), static_cast<Index>(v.size())); }

// A layer under test: `inputs` are the buffers it differentiates, forward() returns the
// scalar L = Σ out ⊙ R (R a fixed random projection, or the loss itself), backward() adds
// dL/d input into the zeroed `grads`.
struct LayerCheck {
  std::vector<std::vector<double>*> inputs;
  std::function<double()> forward;
  std::function<void(std::vector<std::vector<double>>& grads)> backward;
};

// max over the inputs of ‖analytic − central difference‖ / ‖central difference‖
double layer_gradient_error(LayerCheck& c, double h = 1e-5) {
  std::vector<std::vector<double>> grads;
  for (auto* in : c.inputs) grads.emplace_back(in->size(), 0.0);
  c.forward();
  c.backward(grads);
  double worst = 0;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    auto& x = *c.inputs[k];
    // the layer reads x itself: copy each perturbed point into it (same size, same buffer)
    const std::vector<double> x0 = x;
    const auto fd = test::central_difference_gradient([&](const std::vector<double>& xp) {
      x = xp;
      const double v = c.forward();
      x = x0;
      return v;
    }, x0, h);
    worst = std::max(worst, rel_err(as_vec(grads[k]), as_vec(fd)));
  }
  return worst;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// a small corpus with enough distinct characters to exercise the embedding
const std::string kText =
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
    "First Citizen:\nYou are all resolved rather to die than to famish?\n\nAll:\nResolved. resolved.\n\n"
    "First Citizen:\nFirst, you know Caius Marcius is chief enemy to the people.\n";

std::shared_ptr<const CharLmData> tiny_data(int B, int T, Index windows = 24, uint64_t seed = 5) {
  std::string corpus;
  for (int i = 0; i < 4; ++i) corpus += kText;  // the validation tenth holds a 33-character window
  auto text = std::make_shared<TextData>(make_text_data(corpus));
  return std::make_shared<CharLmData>(text, B, T, windows, seed);
}

CharLmShape tiny_shape(int V, int S = 4, int E = 8, int NH = 2, int T = 5, int B = 2) {
  CharLmShape sh;
  sh.V = V, sh.E = E, sh.NH = NH, sh.T = T, sh.B = B, sh.S = S;
  return sh;
}

// a point near the GPT-2 init, perturbed so LayerNorm gains and biases are not trivial
Vec test_point(const CharLm& f, uint64_t seed, double perturb = 0.05) {
  Vec w = f.initial_point(seed);
  Rng rng(seed, Stream::Init, 1234);
  for (Index i = 0; i < w.size(); ++i) w(i) += perturb * rng.normal();
  return w;
}


Config charlm_config(const std::string& extra = "") {
  return Config::from_string(R"(
seed = 1
backend = "cpu"
[objective]
name = "charlm"
embedding = 16
heads = 2
context = 8
batch_size = 4
stages = 4
samples = 400
)" + extra, "charlm.toml");
}

}  // namespace

// ---- layers against finite differences (double)

TEST_CASE("CharLmEncoderBackwardMatchesFiniteDifferences") {
  const int B = 2, T = 3, C = 4, V = 5;
  std::vector<int32_t> tok = {1, 4, 1, 0, 2, 1};  // repeated token ids accumulate
  auto wte = randn(V * C, 1), wpe = randn(T * C, 2), R = randn(B * T * C, 3);
  std::vector<double> out(B * T * C);
  LayerCheck c{{&wte, &wpe},
               [&] {
                 charlm::encoder_forward(out.data(), tok.data(), wte.data(), wpe.data(), B, T, C);
                 return dot(out, R);
               },
               [&](auto& g) { charlm::encoder_backward(g[0].data(), g[1].data(), R.data(), tok.data(), B, T, C); }};
  CHECK(layer_gradient_error(c) <= test::tol::kFiniteDifference);
}

TEST_CASE("CharLmLayerNormBackwardMatchesFiniteDifferences") {
  const int N = 5, C = 7;
  auto inp = randn(N * C, 1), w = randn(C, 2), b = randn(C, 3), R = randn(N * C, 4);
  std::vector<double> out(N * C), mean(N), rstd(N);
  LayerCheck c{{&inp, &w, &b},
               [&] {
                 charlm::layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N, C);
                 return dot(out, R);
               },
               [&](auto& g) {
                 charlm::layernorm_backward(g[0].data(), g[1].data(), g[2].data(), R.data(), inp.data(), w.data(),
                                            mean.data(), rstd.data(), N, C);
               }};
  CHECK(layer_gradient_error(c) <= test::tol::kFiniteDifference);
}

TEST_CASE("CharLmMatmulBackwardMatchesFiniteDifferences") {
  for (bool with_bias : {true, false}) {
    CAPTURE(with_bias);
    const int N = 13, C = 6, OC = 7;
    auto inp = randn(N * C, 1), w = randn(OC * C, 2), b = randn(OC, 3), R = randn(N * OC, 4);
    std::vector<double> out(N * OC);
    LayerCheck c{{&inp, &w},
                 [&] {
                   charlm::matmul_forward(out.data(), inp.data(), w.data(), with_bias ? b.data() : nullptr, N, C, OC);
                   return dot(out, R);
                 },
                 [&](auto& g) {
                   charlm::matmul_backward(g[0].data(), g[1].data(), with_bias ? g[2].data() : nullptr, R.data(),
                                           inp.data(), w.data(), N, C, OC);
                 }};
    if (with_bias) c.inputs.push_back(&b);
    CHECK(layer_gradient_error(c) <= test::tol::kFiniteDifference);
  }
}

TEST_CASE("CharLmAttentionBackwardMatchesFiniteDifferences") {
  const int B = 2, T = 5, C = 6, NH = 3;
  auto qkv = randn(B * T * 3 * C, 1), R = randn(B * T * C, 2);
  std::vector<double> out(B * T * C), att(B * NH * T * T);
  LayerCheck c{{&qkv},
               [&] {
                 charlm::attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
                 return dot(out, R);
               },
               [&](auto& g) { charlm::attention_backward(g[0].data(), R.data(), qkv.data(), att.data(), B, T, C, NH); }};
  CHECK(layer_gradient_error(c) <= test::tol::kFiniteDifference);
  // causal: rows of att sum to 1 and never look ahead
  charlm::attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
  for (int i = 0; i < B * NH; ++i)
    for (int t = 0; t < T; ++t) {
      double sum = 0;
      for (int t2 = 0; t2 < T; ++t2) {
        const double a = att[(i * T + t) * T + t2];
        if (t2 > t) CHECK(a == 0.0);
        sum += a;
      }
      CHECK(sum == doctest::Approx(1.0).epsilon(1e-12));
    }
}

TEST_CASE("CharLmGeluAndResidualBackwardMatchFiniteDifferences") {
  const int n = 40;
  auto x = randn(n, 1, 2.0), a = randn(n, 2), b = randn(n, 3), R = randn(n, 4);
  std::vector<double> out(n);
  LayerCheck gelu{{&x},
                  [&] {
                    charlm::gelu_forward(out.data(), x.data(), n);
                    return dot(out, R);
                  },
                  [&](auto& g) { charlm::gelu_backward(g[0].data(), x.data(), R.data(), n); }};
  CHECK(layer_gradient_error(gelu) <= test::tol::kFiniteDifference);
  LayerCheck res{{&a, &b},
                 [&] {
                   charlm::residual_forward(out.data(), a.data(), b.data(), n);
                   return dot(out, R);
                 },
                 [&](auto& g) { charlm::residual_backward(g[0].data(), g[1].data(), R.data(), n); }};
  CHECK(layer_gradient_error(res) <= test::tol::kFiniteDifference);
}

TEST_CASE("CharLmCrossEntropyBackwardMatchesFiniteDifferences") {
  const int N = 6, V = 9;
  auto logits = randn(N * V, 1, 2.0);
  std::vector<int32_t> tg = {0, 8, 3, 3, 5, 1};
  std::vector<double> probs(N * V);
  LayerCheck c{{&logits},
               [&] { return charlm::crossentropy_forward(probs.data(), logits.data(), tg.data(), N, V); },
               [&](auto& g) { charlm::crossentropy_backward(g[0].data(), probs.data(), tg.data(), 1.0, N, V); }};
  CHECK(layer_gradient_error(c) <= test::tol::kFiniteDifference);
  // uniform logits: the loss is ln V
  std::vector<double> zeros(N * V, 0.0);
  CHECK(charlm::crossentropy_forward(probs.data(), zeros.data(), tg.data(), N, V) == doctest::Approx(std::log(V)));
}

// ---- the whole model

TEST_CASE("CharLmModelGradientMatchesFiniteDifferences") {
  auto data = tiny_data(2, 5);
  CharLmCpu<double> f(data, tiny_shape(data->text().vocab_size(), 4));
  const Vec w = test_point(f, 3);
  const int m = 1;
  Vec g;
  f.batch_value_grad(w, m, g);
  const Vec fd = test::central_difference_gradient([&](const Vec& p) { return f.batch_loss(p, m); }, w);
  CHECK(rel_err(g, fd) <= test::tol::kFiniteDifference);
  // and stage by stage (each block's gradient on its own)
  for (int s = 0; s < f.stages(); ++s) {
    CAPTURE(s);
    CHECK(rel_err(f.blocks().block(g, s), f.blocks().block(fd, s)) <= test::tol::kFiniteDifference);
  }
}

TEST_CASE("CharLmFullObjectiveIsTheMeanOverTheEvaluationBatches") {
  auto data = tiny_data(2, 5, 40);
  CharLmCpu<double> f(data, tiny_shape(data->text().vocab_size(), 3));
  const auto& ev = data->eval_batches();
  CHECK(ev.size() == static_cast<size_t>(CharLmData::kEvalBatches));
  CHECK(std::is_sorted(ev.begin(), ev.end()));
  const Vec w = test_point(f, 4);
  Vec g, gm, sum = Vec::Zero(w.size());
  double mean = 0;
  for (int m : ev) mean += f.batch_value_grad(w, m, gm), sum += gm;
  const double v = f.value_grad(w, g);
  CHECK(v == doctest::Approx(mean / ev.size()).epsilon(test::tol::kRoundoff));
  CHECK(f.value(w) == doctest::Approx(v).epsilon(test::tol::kRoundoff));
  CHECK(rel_err(g, sum / ev.size()) <= test::tol::kRoundoff);
  CHECK(std::isfinite(f.validation_loss(w)));
}

TEST_CASE("CharLmStagewisePipelineEqualsMonolithicBitForBit") {
  // one group of windows, and five windows of 40 in two parallel groups (3 + 2 windows)
  for (const auto& [B, T] : {std::pair{3, 6}, std::pair{5, 40}}) {
  CAPTURE(B);
  auto data = tiny_data(B, T, 60);
  const CharLmShape sh = tiny_shape(data->text().vocab_size(), 5, 8, 2, T, B);
  auto check = [&](const CharLm& f, const char* what) {
    CAPTURE(what);
    const Vec w = test_point(f, 7);
    for (int m : {0, 5}) {
      Mat mono_logits, pipe_logits;
      Vec g_mono, g_pipe;
      const double loss_mono = f.batch_value_grad(w, m, g_mono);
      const double loss_fwd = dynamic_cast<const CharLmCpu<float>*>(&f)
                                  ? dynamic_cast<const CharLmCpu<float>&>(f).batch_loss(w, m, &mono_logits)
                                  : dynamic_cast<const CharLmCpu<double>&>(f).batch_loss(w, m, &mono_logits);
      const double loss_pipe = test::pipeline_value_grad(f, m, w, g_pipe, &pipe_logits);
      CHECK(loss_pipe == loss_mono);
      CHECK(loss_fwd == loss_mono);
      CHECK(mono_logits.rows() == sh.N());
      CHECK(mono_logits.cols() == sh.V);
      CHECK((pipe_logits.array() == mono_logits.array()).all());
      CHECK((g_pipe.array() == g_mono.array()).all());
      // every block gradient is the matching slice, exactly
      for (int s = 0; s < f.stages(); ++s) {
        Vec gs(f.blocks().size(s));
        f.batch_block_grad(w, m, s, gs);
        CHECK((gs.array() == f.blocks().block(g_mono, s).array()).all());
      }
    }
  };
  check(CharLmCpu<double>(data, sh), "float64");
  check(CharLmCpu<float>(data, sh), "float32");
  }
}

TEST_CASE("CharLmFloat32AgreesWithFloat64") {
  auto data = tiny_data(4, 16, 64);
  const CharLmShape sh = tiny_shape(data->text().vocab_size(), 4, 32, 4, 16, 4);
  CharLmCpu<double> f64(data, sh);
  CharLmCpu<float> f32(data, sh);
  const Vec w = test_point(f64, 2, 0.02);
  Mat l64, l32;
  const double v64 = f64.batch_loss(w, 3, &l64), v32 = f32.batch_loss(w, 3, &l32);
  CHECK(std::abs(v32 - v64) / v64 <= 1e-5);
  CHECK(rel_err(l32, l64) <= test::tol::kFloat32);
  Vec g64, g32;
  f64.batch_value_grad(w, 3, g64);
  f32.batch_value_grad(w, 3, g32);
  CHECK(rel_err(g32, g64) <= test::tol::kFloat32);
  for (int s = 0; s < f64.stages(); ++s) {
    CAPTURE(s);
    CHECK(rel_err(f32.blocks().block(g32, s), f64.blocks().block(g64, s)) <= test::tol::kFloat32);
  }
  CHECK(f32.precision() == "float32");
  CHECK(f64.precision() == "float64");
}

TEST_CASE("CharLmResultsDoNotDependOnTheThreadCount") {
#ifdef _OPENMP
  // three groups of four windows (charlm_cpu.cpp's kGroupRows = 128 rows)
  auto data = tiny_data(12, 32, 64);
  const CharLmShape sh = tiny_shape(data->text().vocab_size(), 4, 96, 4, 32, 12);
  CharLmCpu<float> f(data, sh);
  const Vec w = test_point(f, 9, 0.02);
  const int before = omp_get_max_threads();
  Vec g1, g2;
  omp_set_num_threads(1);
  const double l1 = f.batch_value_grad(w, 2, g1);
  omp_set_num_threads(3);
  const double l2 = f.batch_value_grad(w, 2, g2);
  omp_set_num_threads(before);
  CHECK(l1 == l2);
  CHECK((g1.array() == g2.array()).all());
  // the single-thread budget the layers set inside their parallel regions does not leak
  CHECK(omp_get_max_threads() == before);
#endif
}

TEST_CASE("CharLmInitialPointIsGpt2InitAndStartsNearUniform") {
  auto data = tiny_data(4, 16, 64);
  const CharLmShape sh = tiny_shape(data->text().vocab_size(), 6, 32, 4, 16, 4);
  CharLmCpu<float> f(data, sh);
  const Vec w = f.initial_point(0);
  CHECK(w.size() == f.dim());
  CHECK((w.array() == f.initial_point(0).array()).all());
  CHECK((w.array() != f.initial_point(1).array()).any());
  const auto B = block_layout(sh);
  const Vec b1 = f.blocks().block(w, 1);
  CHECK((b1.segment(B.ln1w, sh.E).array() == 1.0).all());
  CHECK((b1.segment(B.qkvb, 3 * sh.E).array() == 0.0).all());
  // the residual projections are scaled by 1/√(2·layers)
  auto rms = [](const Vec& v) { return std::sqrt(v.squaredNorm() / v.size()); };
  CHECK(rms(b1.segment(B.qkvw, 3 * sh.E * sh.E)) == doctest::Approx(0.02).epsilon(0.05));
  CHECK(rms(b1.segment(B.fcprojw, 4 * sh.E * sh.E)) == doctest::Approx(0.02 / std::sqrt(2.0 * 4)).epsilon(0.05));
  // small weights: near-uniform predictions, loss ≈ ln V
  CHECK(std::abs(f.batch_loss(w, 0) - std::log(sh.V)) < 0.05);
  // the Objective default stays w_0 = 0 for the linear models
  auto lin = make_objective(test::small_config(), BackendKind::Cpu);
  CHECK(lin->initial_point(0).isZero(0.0));
}

TEST_CASE("CharLmSgdStepsLowerTheBatchLoss") {
  auto data = tiny_data(4, 16, 64);
  CharLmCpu<float> f(data, tiny_shape(data->text().vocab_size(), 4, 32, 4, 16, 4));
  Vec w = f.initial_point(0), g;
  const double l0 = f.batch_value_grad(w, 0, g);
  double l = l0;
  for (int k = 0; k < 30; ++k) {
    l = f.batch_value_grad(w, 0, g);
    w -= 0.5 * g;
  }
  CHECK(l < l0 - 0.5);
}

// ---- data and config

TEST_CASE("CharLmTextDataVocabularySplitAndWindows") {
  const TextData d = make_text_data("abcabcabcdd", 0.5);
  CHECK(d.vocab == "abcd");
  CHECK(d.encode('c') == 2);
  CHECK(d.encode('z') == -1);
  CHECK(d.train_end == 5);
  CHECK(d.decode({3, 0, 1}) == "dab");
  const auto w1 = draw_windows(2, 9, 3, 50, 7, Stream::DataGen), w2 = draw_windows(2, 9, 3, 50, 7, Stream::DataGen);
  CHECK(w1 == w2);
  for (Index s : w1) CHECK((s >= 2 && s + 3 <= 9));

  auto data = tiny_data(3, 6, 30, 11);
  CHECK(data->num_batches() == 10);
  std::vector<int32_t> in(18), tg(18);
  data->batch(4, in.data(), tg.data());
  for (int b = 0; b < 3; ++b)
    for (int t = 0; t + 1 < 6; ++t) CHECK(tg[b * 6 + t] == in[b * 6 + t + 1]);  // targets are the inputs shifted
  std::vector<int32_t> in2(18), tg2(18);
  tiny_data(3, 6, 30, 11)->batch(4, in2.data(), tg2.data());
  CHECK(in == in2);  // a pure function of the seed
  tiny_data(3, 6, 30, 12)->batch(4, in2.data(), tg2.data());
  CHECK(in != in2);
}

TEST_CASE("CharLmFromConfigReadsTinyShakespeare") {
  if (!test::have_data_file("tinyshakespeare.txt")) return;
  auto obj = make_objective(charlm_config(), BackendKind::Cpu);
  auto* f = dynamic_cast<CharLm*>(obj.get());
  REQUIRE(f != nullptr);
  CHECK(f->name() == "charlm");
  CHECK(f->shape().V == 65);
  CHECK(f->data().text().tokens.size() == 1115394);
  CHECK(f->data().text().train_size() == 1003854);  // 90 %
  CHECK(f->num_batches() == 100);
  CHECK(f->num_samples() == 400);
  CHECK(f->stages() == 4);
  CHECK(f->dim() == charlm_parameter_count(f->shape()));
  CHECK(f->precision() == "float64");
  CHECK(std::isnan(f->constants().f_star));
  CHECK(std::isnan(f->constants().L));
  CHECK(f->description().find("65") != std::string::npos);
  Config c32 = charlm_config();
  c32.apply_override("precision=float32");
  CHECK(make_objective(c32, BackendKind::Cpu)->precision() == "float32");

  auto expect_error = [](const std::string& override_, const std::string& key) {
    Config c = charlm_config();
    c.apply_override(override_);
    std::string msg;
    try {
      make_objective(c, BackendKind::Cpu);
    } catch (const UserError& e) {
      msg = e.what();
    }
    CAPTURE(msg);
    CHECK(msg.find(key) != std::string::npos);
  };
  expect_error("objective.heads=3", "objective.heads");
  expect_error("objective.stages=2", "objective.stages");
  expect_error("objective.samples=2", "objective.samples");
  expect_error("objective.data=no-such-corpus.txt", "objective.data");
  expect_error("precision=tf32", "precision");  // the cuda backend's tensor-core mode only
}

TEST_CASE("CharLmParameterCountOfTheE5Models") {
  // the paper's model: S = 16 (14 blocks), E = 256 → 14 · (12E² + 13E) + (V + T)E + 2E + VE
  CharLmShape gpu;
  gpu.V = 65, gpu.E = 256, gpu.NH = 8, gpu.T = 128, gpu.B = 16, gpu.S = 16;
  const Index E = 256;
  CHECK(charlm_parameter_count(gpu) == 14 * (12 * E * E + 13 * E) + (65 + 128) * E + 2 * E + 65 * E);
  CHECK(charlm_parameter_count(gpu) == 11'123'200);  // ≈ 11.1M, the paper's count
  CharLmShape cpu;  // defaults: E = 64, S = 6 (4 blocks), T = 32
  CHECK(charlm_parameter_count(cpu) == 4 * (12 * 64 * 64 + 13 * 64) + (65 + 32) * 64 + 2 * 64 + 65 * 64);
}

TEST_SUITE_END();
