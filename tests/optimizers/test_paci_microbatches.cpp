// PACI's global batch (theory.md §5; issue #15): every stage steps its own optimizer after
// every `a` backward passes, so update k (k = 1, 2, …) of every stage applies the mean
// gradient of exactly the micro-batches (k − 1)a + 1 … ka (1-indexed; the last step of a run
// takes the M mod a left over). That is what makes PACI's step the same global batch as
// 1F1B-flush with a micro-batches per step. Checked twice, independently:
//  - in the schedule's op stream: each device's B ops run in micro-batch order and the
//    Update flag sits on B(ka − 1) (0-indexed) and on the last B;
//  - in the executor's arithmetic: an objective wrapper records every stage backward (the
//    batch it ran on and the weight gradient it returned); at each update of stage j the
//    recorded backwards of stage j since its previous update must be exactly that window,
//    and the applied SGD step must be −γ × their mean.
#include <doctest/doctest.h>

#include "objectives/objective_factory.hpp"
#include "optimizers/method.hpp"
#include "optimizers/sampling.hpp"
#include "optimizers/schedule_executor.hpp"
#include "src/config/config.hpp"
#include "src/pipeline/schedule.hpp"
#include "tests/support/forwarding_objective.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("optimizers");

using namespace stale;

namespace {

// Forwards every call to a real objective and records the stage backwards, per stage.
class RecordingObjective final : public test::ForwardingObjective {
 public:
  struct Backward {
    int batch;
    Vec grad;
  };
  explicit RecordingObjective(std::unique_ptr<Objective> inner) : ForwardingObjective(std::move(inner)) {
    recorded.resize(inner_->stages());
  }
  mutable std::vector<std::vector<Backward>> recorded;  // [stage], since the stage's last update

  void stage_backward(int s, int m, const Mat& grad_out, ConstVecRef w_s, const StageCache* cache, VecRef grad_w_s,
                      Mat& grad_in) const override {
    inner_->stage_backward(s, m, grad_out, w_s, cache, grad_w_s, grad_in);
    recorded[s].push_back({m, Vec(grad_w_s)});
  }
};

// Checks each update against the window the recording objective saw.
class WindowChecker final : public RunObserver {
 public:
  WindowChecker(const RecordingObjective& f, int a, int64_t M, double lr)
      : f_(f), a_(a), M_(M), lr_(lr) {
    steps.assign(f.stages(), 0);
  }
  int64_t updates = 0, mismatched_windows = 0, mismatched_steps = 0;
  std::vector<int64_t> steps;  // updates per stage so far

  void on_start(const Vec&) override {}
  void on_update(const UpdateEvent& e, ConstVecRef delta, const Vec&) override {
    ++updates;
    const int j = e.stage;
    auto& rec = f_.recorded[j];
    // the window of update k = steps[j] + 1: micro-batches (k − 1)a … min(ka, M) − 1,
    // which are batches of the same numbers (cyclic order, more batches than micro-batches)
    const int64_t first = steps[j] * a_, last = std::min<int64_t>(first + a_, M_) - 1;
    bool same = static_cast<int64_t>(rec.size()) == last - first + 1 && e.batch == last;
    for (size_t i = 0; same && i < rec.size(); ++i) same = rec[i].batch == first + static_cast<int64_t>(i);
    if (!same) ++mismatched_windows;
    // plain SGD: the step is −γ × the mean of exactly those gradients
    Vec mean = Vec::Zero(delta.size());
    for (const auto& b : rec) mean += b.grad;
    mean /= static_cast<double>(rec.size());
    const Vec expected = -lr_ * mean;
    if ((Vec(delta) - expected).norm() > 1e-14 * std::max(1e-300, expected.norm())) ++mismatched_steps;
    rec.clear();
    ++steps[j];
  }
  bool should_stop() const override { return false; }

 private:
  const RecordingObjective& f_;
  int a_;
  int64_t M_;
  double lr_;
};

}  // namespace

TEST_CASE("PaciOpStreamStepsEachStageOnMicroBatchesKaMinusAPlusOneToKa") {
  for (int S : {1, 2, 3, 4, 5, 8}) {
    for (int a : {1, 2, 3, 4, 7, 8, 16}) {
      for (int64_t M : {int64_t{5} * a, int64_t{5} * a + (a + 1) / 2}) {
        CAPTURE(S);
        CAPTURE(a);
        CAPTURE(M);
        ScheduleParams p;
        p.stages = S;
        p.microbatches = M;
        p.accumulation = a;
        const Schedule s = make_schedule("paci", p);
        REQUIRE(s.accumulation == a);
        for (int d = 0; d < S; ++d) {
          int64_t next_b = 0, steps = 0, window_start = 0;
          bool ok = true;
          for (const Op& op : s.program(d)) {
            ok &= op.block == d;
            if (op.kind != OpKind::Backward) {
              ok &= !op.updates();
              continue;
            }
            ok &= op.microbatch == next_b++;  // backwards in micro-batch order
            if (op.updates()) {
              // this step applies micro-batches window_start … op.microbatch
              ok &= window_start == steps * a;
              ok &= op.microbatch == std::min<int64_t>((steps + 1) * a, M) - 1;
              ++steps;
              window_start = op.microbatch + 1;
            }
          }
          CHECK(ok);
          CHECK(next_b == M);
          CHECK(steps == (M + a - 1) / a);
          CHECK(window_start == M);  // nothing left unapplied
        }
      }
    }
  }
}

TEST_CASE("PaciExecutorUpdateKOfEveryStageAppliesTheMeanGradientOfMicroBatchesKaMinusAPlusOneToKa") {
  for (const char* costs : {"", "[costs]\nforward = 1.0\nbackward = 2.0\nlatency = 0.1\n"}) {
    for (int S : {2, 4}) {
      for (int a : {1, 2, 3, 4, 8}) {
        CAPTURE(costs);
        CAPTURE(S);
        CAPTURE(a);
        const int64_t M = 6 * a + (a > 1 ? 1 : 0);  // a short last window when a > 1
        Config c = Config::from_string(R"(
seed = 4
backend = "cpu"
[objective]
name = "logistic"
generator = "synthetic"
dim = 24
samples = 400
batch_size = 2
l2 = 0.01
[method]
name = "paci"
optimizer = "sgd"
lr = 0.1
[log]
progress = false
)" + std::string(costs),
                                       "paci_window.toml");
        c.apply_override("objective.stages=" + std::to_string(S));
        c.apply_override("method.accumulation=" + std::to_string(a));
        c.apply_override("method.microbatches=" + std::to_string(M));
        // every update of the M micro-batches: each stage steps after every a-th and the last
        c.apply_override("method.updates=" + std::to_string(int64_t{S} * ((M + a - 1) / a)));
        RecordingObjective f(make_objective(c, BackendKind::Cpu));
        // micro-batch mb reads batch mb: cyclic order over more batches than micro-batches
        const auto batch_of = microbatch_batches(M, f.num_batches(), true, 4);
        for (int64_t mb = 0; mb < M; ++mb) REQUIRE(batch_of[mb] == mb);
        auto method = make_method(c, f);
        WindowChecker check(f, a, M, 0.1);
        Vec w = Vec::Zero(f.dim());
        method->run(f, w, check);
        CHECK(check.updates == S * ((M + a - 1) / a));
        CHECK(check.mismatched_windows == 0);
        CHECK(check.mismatched_steps == 0);
        for (int j = 0; j < S; ++j) CHECK(f.recorded[j].empty());  // every backward was applied
      }
    }
  }
}

TEST_SUITE_END();
