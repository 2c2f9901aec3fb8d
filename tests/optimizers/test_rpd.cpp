// RPD against its definition: zero delay is block-coordinate SGD bit for bit; every read
// stays inside the delay bound and equals the value the block had then; the version store
// never holds more than bound + 1 versions per block; the measured mean squared gradient
// stays below the bound of docs/theory.md §3.
#include <doctest/doctest.h>

#include <map>

#include "delays/delay_model.hpp"
#include "objectives/objective_factory.hpp"
#include "optimizers/method.hpp"
#include "src/pipeline/version_store.hpp"
#include "src/run/metrics_observer.hpp"
#include "tests/support/observers.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("optimizers");

using namespace stale;

namespace {

// records every iterate so reads can be checked against history
using HistoryObserver = test::IterateRecorder;

HistoryObserver run_method(const Config& cfg) {
  auto f = make_objective(cfg, BackendKind::Cpu);
  auto m = make_method(cfg, *f);
  HistoryObserver obs;
  Vec w = Vec::Zero(f->dim());
  m->run(*f, w, obs);
  return obs;
}

}  // namespace

TEST_CASE("RpdWithZeroDelayIsBitIdenticalToBlockCoordinateSgd") {
  Config rpd = test::small_config();
  rpd.apply_override("delay.name=zero");
  Config bcd = test::small_config();
  bcd.apply_override("method.name=bcd");
  for (const char* noise : {"0", "0.3"}) {
    rpd.apply_override(std::string("objective.grad_noise_std=") + noise);
    bcd.apply_override(std::string("objective.grad_noise_std=") + noise);
    const auto a = run_method(rpd), b = run_method(bcd);
    REQUIRE(a.iterates.size() == b.iterates.size());
    bool identical = true;
    for (size_t k = 0; k < a.iterates.size(); ++k)
      identical &= std::memcmp(a.iterates[k].data(), b.iterates[k].data(), sizeof(double) * a.iterates[k].size()) == 0;
    CHECK(identical);
  }
}

TEST_CASE("RpdReadsStayWithinTheDelayBoundAndMatchHistory") {
  for (const char* model : {"uniform", "constant", "geometric"}) {
    CAPTURE(model);
    Config cfg = test::small_config(std::string("[delay]\nname = \"") + model + "\"\nmax = 17\nmean = 4.0\n");
    auto f = make_objective(cfg, BackendKind::Cpu);
    const auto obs = run_method(cfg);
    const auto& P = f->blocks();
    for (size_t k = 0; k < obs.events.size(); ++k) {
      REQUIRE(obs.delays[k].size() == static_cast<size_t>(P.stages()));
      for (int i = 0; i < P.stages(); ++i) {
        CHECK(obs.delays[k][i] <= 17);
        CHECK(obs.delays[k][i] <= static_cast<int64_t>(k));
      }
      // stale distance = ‖w_k − z_k‖ with z_k assembled from the recorded history
      Vec z(f->dim());
      for (int i = 0; i < P.stages(); ++i) P.block(z, i) = P.block(obs.iterates[k - obs.delays[k][i]], i);
      CHECK(obs.events[k].stale_dist == doctest::Approx((z - obs.iterates[k]).norm()).epsilon(1e-12));
    }
  }
}

TEST_CASE("VersionStoreHoldsAtMostBoundPlusOneVersionsAndReadsHistory") {
  const BlockPartition P(23, 4);
  for (int64_t bound : {0, 1, 2, 3, 5, 7, 8, 9, 40, 130}) {
    CAPTURE(bound);
    VersionStore store(P, Vec::Zero(23), bound);
    std::vector<Vec> history = {store.current()};
    Rng rng(bound, Stream::Eval);
    for (int k = 0; k < 600; ++k) {
      // skewed block choice so some blocks keep old versions for long
      const int s = rng.uniform() < 0.7 ? 0 : static_cast<int>(rng.uniform_int(4));
      Vec v(P.size(s));
      for (Index i = 0; i < v.size(); ++i) v(i) = rng.normal();
      store.commit(s, v);
      history.push_back(store.current());
      for (int b = 0; b < 4; ++b) {
        CHECK(store.versions_held(b) <= bound + 1);
        const int64_t kk = store.updates();
        for (int64_t j = std::max<int64_t>(0, kk - bound); j <= kk; ++j)
          CHECK(store.read(b, j) == P.block(history[j], b));
      }
    }
  }
}

TEST_CASE("VersionStoreLocateEqualsBlockReadsWhenOneBlockIsUpdatedMostly") {
  // one block updated nine times in ten: dozens of its versions fall in one bucket of the
  // store's index, so a read goes past the three a bucket entry holds and steps through the
  // ring, past more than the four a search step looks at; and blocks drawn uniformly (RPD's
  // case: zero to a few versions a bucket, the entry alone answers most reads)
  const BlockPartition P(40, 16);
  for (double mostly : {0.9, 0.0})
  for (int64_t bound : {1, 5, 37, 200}) {
    CAPTURE(mostly);
    CAPTURE(bound);
    VersionStore store(P, Vec::Zero(40), bound);
    std::vector<Vec> history = {store.current()};
    Rng rng(7 + bound, Stream::Eval);
    std::vector<int64_t> delays(16);
    std::vector<const double*> at;
    for (int k = 0; k < 900; ++k) {
      const int s = rng.uniform() < mostly ? 3 : static_cast<int>(rng.uniform_int(16));
      Vec v(P.size(s));
      for (Index i = 0; i < v.size(); ++i) v(i) = rng.normal();
      store.commit(s, v);
      history.push_back(store.current());
      const int64_t kk = store.updates(), reach = std::min<int64_t>(bound, kk);
      for (auto& d : delays) d = static_cast<int64_t>(rng.uniform_int(static_cast<uint64_t>(reach + 1)));
      store.locate(delays, at);
      for (int b = 0; b < 16; ++b) {
        REQUIRE(Eigen::Map<const Vec>(at[b], P.size(b)) == P.block(history[kk - delays[b]], b));
        REQUIRE(store.read(b, kk - delays[b]) == P.block(history[kk - delays[b]], b));
      }
    }
  }
}

TEST_CASE("RpdMeanSquaredGradientIsBelowTheBound") {
  // γ ≤ 1/L so the bound's assumptions hold; G is the running maximum of block gradients
  for (int delta : {0, 5, 40}) {
    CAPTURE(delta);
    Config cfg = test::small_config("[delay]\nname = \"uniform\"\nmax = " + std::to_string(delta) + "\n");
    auto f = make_objective(cfg, BackendKind::Cpu);
    REQUIRE(cfg.get_float("method.lr") <= 1.0 / f->constants().L);
    auto m = make_method(cfg, *f);
    MetricsOptions opt;
    opt.lr = cfg.get_float("method.lr");
    opt.delta = m->delay_bound(*f);
    opt.updates = cfg.get_int("method.updates");
    opt.iterates_every = 0;
    MetricsObserver obs(*f, nullptr, opt);
    Vec w = Vec::Zero(f->dim());
    m->run(*f, w, obs);
    obs.finish(w);
    CHECK(obs.last().k == opt.updates);
    CHECK(obs.last().grad_norm_sq_mean <= obs.last().bound);
    CHECK(obs.last().grad_norm_sq_mean > 0);
  }
}

TEST_CASE("SgdCountsSBlockUpdatesPerStepAndConverges") {
  Config cfg = test::small_config();
  cfg.apply_override("method.name=sgd");
  cfg.apply_override("method.lr=0.05");
  cfg.apply_override("method.updates=100000");
  const auto obs = run_method(cfg);
  CHECK(obs.events.size() == 100000 / 5);
  CHECK(obs.events.back().k == 100000);
  auto f = make_objective(cfg, BackendKind::Cpu);
  CHECK((obs.iterates.back() - *f->constants().w_star).norm() <= 1e-6);
}

TEST_SUITE_END();
