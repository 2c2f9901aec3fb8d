#pragma once
// How long each op takes (docs/design.md "Simulator"). Durations are in abstract time units; the
// default (every F and B takes 1, W takes 0, no latency, no noise) is the slot clock of the
// papers.
//
//  - forward, backward, weight: t_F, t_B, t_W per device (one value for all, or one per
//    stage). In a schedule without split backward, B does the whole backward and takes
//    t_B + t_W; with split backward (zb-h1) B takes t_B and W takes t_W. With v chunks per
//    device (interleaved) each chunk op takes 1/v of its device's cost.
//  - overlap ρ in [0, 1]: an F flagged op_flag::Overlap (DualPipe's F&B pair: that F and the
//    whole backward B, W after it) is shortened by ρ·min(t_F, t_B + t_W): the fraction of the
//    shorter half the pair hides behind the longer. 0 (default): the pair takes
//    t_F + t_B + t_W, one after the other; 1: max(t_F, t_B + t_W).
//  - latency: added to every dependency that crosses devices (activation or gradient
//    transfer); the same device's next op does not pay it.
//  - jitter σ: each op's duration is multiplied by exp(σ z − σ²/2), z ~ N(0, 1): lognormal
//    noise with mean 1, so expected costs stay the nominal ones.
//  - straggler_prob p, straggler_slowdown f: with probability p an op takes f times longer.
//  - pareto_alpha α > 0: a straggling op is slowed by a Pareto(α) factor with scale 1,
//    P(factor > x) = x^−α for x >= 1, instead of the fixed f (heavy-tailed stragglers: the
//    factor's variance is infinite for α <= 2, its mean for α <= 1). It is made from the
//    same uniform u that decided the straggle (u/p is uniform given u < p), so turning it on
//    changes no other draw.
//  - seed: draws come from stale::Rng(seed, Stream::StageTime, device), one normal and one
//    uniform per op in the device's program order, so a run is a pure function of the seed
//    and the schedule, whatever order the simulator processes devices in.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "src/core/rng.hpp"

namespace stale {

class CostModel {
 public:
  CostModel() = default;  // unit slot clock

  // "key=value" settings applied in order; throws UserError naming the key and what is valid.
  static CostModel parse(const std::vector<std::string>& settings);
  void set(const std::string& key, const std::string& value);
  void set(const std::string& setting);  // "key=value"
  static const std::vector<std::string>& keys();

  // canonical "key=value,..." text: parse(split(describe())) reproduces the model
  std::string describe() const;

  // checks the per-stage lists against a schedule's device count (UserError otherwise)
  void check_stages(int stages) const;

  double forward(int device) const { return pick(forward_, device); }
  double backward(int device) const { return pick(backward_, device); }
  double weight(int device) const { return pick(weight_, device); }
  // the least t_F + t_B any device can take for a micro-batch (whatever the device count)
  double min_forward_backward() const {
    return *std::min_element(forward_.begin(), forward_.end()) + *std::min_element(backward_.begin(), backward_.end());
  }
  double latency() const { return latency_; }
  double overlap() const { return overlap_; }
  double jitter() const { return jitter_; }
  double straggler_prob() const { return straggler_prob_; }
  double straggler_slowdown() const { return straggler_slowdown_; }
  double pareto_alpha() const { return pareto_alpha_; }
  uint64_t seed() const { return seed_; }
  bool random() const {
    return jitter_ > 0 || (straggler_prob_ > 0 && (straggler_slowdown_ != 1.0 || pareto_alpha_ > 0));
  }

  // every duration and the latency multiplied by `factor` (the noise draws are unchanged)
  CostModel scaled(double factor) const;
  bool operator==(const CostModel&) const = default;  // every setting: the plan cache's key

  // The multiplicative noise of the next op of one device; pure given (seed, device, order).
  class Noise {
   public:
    Noise(const CostModel& m, int device)
        : rng_(m.seed_, Stream::StageTime, static_cast<uint64_t>(device)),
          sigma_(m.jitter_),
          prob_(m.straggler_prob_),
          slowdown_(m.straggler_slowdown_),
          alpha_(m.pareto_alpha_) {}
    double next();

   private:
    Rng rng_;
    double sigma_, prob_, slowdown_, alpha_;
  };

 private:
  static double pick(const std::vector<double>& v, int device) { return v.size() == 1 ? v[0] : v[device]; }
  std::vector<double> forward_{1.0}, backward_{1.0}, weight_{0.0};
  double latency_ = 0.0;
  double overlap_ = 0.0;
  double jitter_ = 0.0;
  double straggler_prob_ = 0.0;
  double straggler_slowdown_ = 1.0;
  double pareto_alpha_ = 0.0;  // 0: stragglers take the fixed slowdown
  uint64_t seed_ = 0;
};

}  // namespace stale
