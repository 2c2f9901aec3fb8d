// The schedule executor's promise behind Objective::stage_forward_pinned (objectives/objective.hpp):
// where it pins a forward, that micro-batch's backward of the stage reads w_s at the same address,
// which stayed allocated until then; with weight stashing the values there are still the
// forward's, without it they are the live block's (the steps in between change them in place).
// An objective that keeps views of w_s instead of a copy (stale.torch in float64) relies on it.
// Checked for every schedule-driven method of the registry on a C++ objective, by a wrapper
// that reads, at each backward, the memory its pinned forward was given.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

#include "objectives/objective_factory.hpp"
#include "optimizers/method.hpp"
#include "optimizers/method_registry.hpp"
#include "src/config/config.hpp"
#include "src/pipeline/simulator.hpp"
#include "src/run/runner.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/forwarding_objective.hpp"
#include "tests/support/observers.hpp"

TEST_SUITE_BEGIN("optimizers");

using namespace stale;

namespace {

// what the wrapper keeps beside the real objective's cache: where and what a pinned forward read
struct PinCache final : StageCache {
  std::unique_ptr<StageCache> inner;
  const double* pinned_at = nullptr;  // null: an unpinned forward
  Vec values;                         // w_s as the forward read it
};

// Forwards every call to a real objective and checks the pinned forwards' promise at each backward.
class PinCheckingObjective final : public test::ForwardingObjective {
 public:
  using ForwardingObjective::ForwardingObjective;
  mutable int64_t pinned = 0, moved = 0, changed = 0, backwards_of_pinned = 0;
  mutable std::vector<int64_t> pinned_at_stage = std::vector<int64_t>(4), unpinned_at_stage = std::vector<int64_t>(4);

  void stage_forward(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out,
                     std::unique_ptr<StageCache>& cache) const override {
    ++unpinned_at_stage.at(static_cast<size_t>(s));
    forward(s, m, in, w_s, out, cache, nullptr);
  }
  void stage_forward_pinned(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out,
                            std::unique_ptr<StageCache>& cache) const override {
    ++pinned;
    ++pinned_at_stage.at(static_cast<size_t>(s));
    forward(s, m, in, w_s, out, cache, w_s.data());
  }
  void stage_backward(int s, int m, const Mat& grad_out, ConstVecRef w_s, const StageCache* cache, VecRef grad_w_s,
                      Mat& grad_in) const override {
    const auto* c = dynamic_cast<const PinCache*>(cache);
    REQUIRE(c != nullptr);
    if (c->pinned_at != nullptr) {
      ++backwards_of_pinned;
      if (w_s.data() != c->pinned_at) ++moved;
      if (std::memcmp(w_s.data(), c->values.data(), sizeof(double) * w_s.size()) != 0) ++changed;
    }
    inner_->stage_backward(s, m, grad_out, w_s, c->inner.get(), grad_w_s, grad_in);
  }

 private:
  void forward(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out, std::unique_ptr<StageCache>& cache,
               const double* pinned_at) const {
    auto c = std::make_unique<PinCache>();
    inner_->stage_forward(s, m, in, w_s, out, c->inner);
    c->pinned_at = pinned_at;
    c->values = w_s;
    cache = std::move(c);
  }
};

}  // namespace

TEST_CASE("APinnedForwardsBackwardReadsItsWeightsAtTheSameAddressStashedOrLive") {
  for (const MethodEntry& e : MethodRegistry::entries()) {
    if (e.kind != MethodKind::ScheduleDriven) continue;
    const std::string name = e.name;
    CAPTURE(name);
    Config c = Config::from_string(test::small_run_toml({.header = "seed = 3\nbackend = \"cpu\"\n",
                                                         .objective = "logistic",
                                                         .generator = "synthetic",
                                                         .dim = 26,
                                                         .samples = 96,
                                                         .batch_size = 4,
                                                         .stages = 4,
                                                         .method = name,
                                                         .lr = "0.05",
                                                         .updates = 240}),
                                   "pinned.toml");
    PinCheckingObjective f(make_objective(c, BackendKind::Cpu));
    auto method = make_method(c, f);
    const RunPlan plan = method->plan(f);
    test::IterateRecorder h;
    Vec w = Vec::Zero(f.dim());
    const RunReport report = method->run(f, plan, w, h);
    // every forward of a block that starts aligned (the executor's single-point calls; the
    // others go through a column buffer) is pinned, but PipeMare's, whose predicted weights are
    // not what its backward reads. This objective's blocks start at 0, 7, 14 and 20 doubles:
    // some aligned and some not, for any EIGEN_DEFAULT_ALIGN_BYTES (16, 32 or 64)
    int aligned_blocks = 0;
    for (int s = 0; s < 4; ++s) {
      CAPTURE(s);
      const bool aligned = f.blocks().offset(s) * Index(sizeof(double)) % EIGEN_DEFAULT_ALIGN_BYTES == 0;
      aligned_blocks += aligned;
      CHECK(f.pinned_at_stage[s] + f.unpinned_at_stage[s] > 0);
      CHECK(f.pinned_at_stage[s] == (aligned && !e.predict ? f.pinned_at_stage[s] + f.unpinned_at_stage[s] : 0));
    }
    CHECK(aligned_blocks >= 1);
    CHECK(aligned_blocks < 4);
    CHECK(f.backwards_of_pinned == f.pinned);
    CHECK(f.moved == 0);
    // the values there: the stashed version as the forward read it, or else the live block,
    // stepped since the forward exactly where updates crossed between a stage's F and B
    const bool crossed = *std::max_element(report.measured_crossed.begin(), report.measured_crossed.end()) > 0;
    CHECK((f.changed > 0) == (crossed && !e.stash && f.pinned > 0));
  }
}

TEST_SUITE_END();
