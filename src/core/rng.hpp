#pragma once
// Seeded random streams. One base seed; an independent stream per purpose, so that
// changing the logging cadence or adding a metric never moves a trajectory, and so that
// results do not depend on thread count (docs/design.md "Conventions").
//
// The generators are written here (splitmix64 seeding + xoshiro256**, Box–Muller normals,
// Lemire's unbiased bounded integers) rather than taken from <random>, whose distributions
// are implementation-defined: a run file must be reproducible on any standard library.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace stale {

enum class Stream : uint64_t {
  DataGen = 1,      // synthetic data, w_true, noise in labels
  BatchOrder = 2,   // which mini-batch a step reads
  StageSample = 3,  // which block RPD / BCD updates
  Delays = 4,       // delay models
  GradNoise = 5,    // additive gradient noise
  StageTime = 6,    // random stage costs in the simulator
  Init = 7,         // initial point, parameter init
  Eval = 8,         // evaluation batches
};

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Stateless hash of (seed, stream, a, b) → 64 random bits: a counter-based generator, used
// where a value must be a pure function of its indices (delay models).
// hash_bits in two steps, for many b at one (seed, stream, a): the prefix once, then one
// splitmix64 per b given hash_bits_b_part(b) (which a caller may tabulate)
inline uint64_t hash_bits_prefix(uint64_t seed, Stream stream, uint64_t a) {
  const uint64_t h = splitmix64(seed ^ splitmix64(static_cast<uint64_t>(stream) * 0x632be59bd9b4e019ULL));
  return splitmix64(h ^ splitmix64(a + 0x5851f42d4c957f2dULL));
}
inline uint64_t hash_bits_b_part(uint64_t b) { return splitmix64(b + 0x14057b7ef767814fULL); }
inline uint64_t hash_bits_finish(uint64_t prefix, uint64_t b_part) { return splitmix64(prefix ^ b_part); }

inline uint64_t hash_bits(uint64_t seed, Stream stream, uint64_t a, uint64_t b = 0) {
  return hash_bits_finish(hash_bits_prefix(seed, stream, a), hash_bits_b_part(b));
}

// uniform double in [0, 1) from 53 random bits
inline double bits_to_unit(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

class Rng {
 public:
  Rng(uint64_t seed, Stream stream, uint64_t substream = 0) {
    uint64_t x = hash_bits(seed, stream, substream, 0x51ED);
    for (auto& s : s_) s = x = splitmix64(x);
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  double uniform() { return bits_to_unit(next()); }

  // uniform integer in {0, …, n−1}, unbiased (Lemire 2019)
  uint64_t uniform_int(uint64_t n) {
    __uint128_t m = static_cast<__uint128_t>(next()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<__uint128_t>(next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  // the generator's whole state (checkpoints, src/run/checkpoint.hpp): a restored stream
  // continues with the very draws the saved one would have made
  void save_words(uint64_t out[6]) const {
    for (int i = 0; i < 4; ++i) out[i] = s_[i];
    std::memcpy(&out[4], &spare_, sizeof spare_);
    out[5] = have_spare_ ? 1 : 0;
  }
  void load_words(const uint64_t in[6]) {
    for (int i = 0; i < 4; ++i) s_[i] = in[i];
    std::memcpy(&spare_, &in[4], sizeof spare_);
    have_spare_ = in[5] != 0;
  }

  double normal() {
    if (have_spare_) {
      have_spare_ = false;
      return spare_;
    }
    double u1 = uniform();
    while (u1 <= std::numeric_limits<double>::min()) u1 = uniform();
    const double u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2.0 * M_PI * u2);
    have_spare_ = true;
    return r * std::cos(2.0 * M_PI * u2);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
  double spare_ = 0.0;
  bool have_spare_ = false;
};

}  // namespace stale
