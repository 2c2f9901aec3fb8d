#pragma once
// Samplers of RPD step 3 (docs/theory.md §2) and the additive gradient noise, each on its own
// seeded stream so that one never shifts another.
#include <cmath>
#include <memory>
#include <vector>

#include "optimizers/method.hpp"
#include "optimizers/update_rule.hpp"
#include "src/core/rng.hpp"
#include "src/core/state_bag.hpp"

namespace stale {

// mini-batch order: i.i.d. uniform (RPD) or a fixed cycle 0, 1, …, M−1, 0, … (PD)
class BatchSampler {
 public:
  BatchSampler(int batches, bool cyclic, uint64_t seed) : M_(batches), cyclic_(cyclic), rng_(seed, Stream::BatchOrder) {}
  int next() { return cyclic_ ? static_cast<int>(t_++ % M_) : static_cast<int>(rng_.uniform_int(M_)); }
  void save(StateBag& b, const std::string& name) const {
    save_rng(b, name + "/rng", rng_);
    b.put(name + "/t", t_);
  }
  void restore(const StateBag& b, const std::string& name) {
    restore_rng(b, name + "/rng", rng_);
    t_ = b.get_int(name + "/t");
  }

 private:
  int M_;
  bool cyclic_;
  Rng rng_;
  int64_t t_ = 0;
};

// the batch each micro-batch mb = 0..M−1 reads: the sampler's draws in micro-batch order
// (shared by schedule methods and by RPD replaying a schedule, so both read the same data)
inline std::vector<int> microbatch_batches(int64_t M, int batches, bool cyclic, uint64_t seed) {
  BatchSampler s(batches, cyclic, seed);
  std::vector<int> out(M);
  for (auto& b : out) b = s.next();
  return out;
}

class StageSampler {
 public:
  StageSampler(int stages, uint64_t seed) : S_(stages), rng_(seed, Stream::StageSample) {}
  int next() { return static_cast<int>(rng_.uniform_int(S_)); }
  void save(StateBag& b, const std::string& name) const { save_rng(b, name, rng_); }
  void restore(const StateBag& b, const std::string& name) { restore_rng(b, name, rng_); }

 private:
  int S_;
  Rng rng_;
};

class GradientNoise {
 public:
  GradientNoise(double std, uint64_t seed) : std_(std), rng_(seed, Stream::GradNoise) {}
  // g += σ z with the next draws z, each element one fused multiply-add (written out, so that
  // a run and an ensemble column — draw() once, add_drawn() per column — agree bit for bit)
  void add(VecRef g) {
    if (std_ == 0) return;
    for (Index i = 0; i < g.size(); ++i) g(i) = std::fma(std_, rng_.normal(), g(i));
  }
  // the next z.size() draws as standard normals, for add_drawn on every column of an ensemble
  void draw(Vec& z) {
    for (Index i = 0; i < z.size(); ++i) z(i) = rng_.normal();
  }
  void add_drawn(VecRef g, const Vec& z) const {
    for (Index i = 0; i < g.size(); ++i) g(i) = std::fma(std_, z(i), g(i));
  }
  void save(StateBag& b, const std::string& name) const { save_rng(b, name, rng_); }
  void restore(const StateBag& b, const std::string& name) { restore_rng(b, name, rng_); }

 private:
  double std_;
  Rng rng_;
};

}  // namespace stale
