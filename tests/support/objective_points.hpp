#pragma once
// Points and gradients the objective tests draw and take: a Gaussian point of a given scale
// from a seeded stream, and ∇f at a point.
#include "objectives/objective.hpp"
#include "src/core/rng.hpp"

namespace stale::test {

inline Vec gaussian(Index d, Rng& rng, double scale) {
  Vec v(d);
  for (Index i = 0; i < d; ++i) v(i) = scale * rng.normal();
  return v;
}

inline Vec gradient(const Objective& f, const Vec& w) {
  Vec g;
  f.value_grad(w, g);
  return g;
}

}  // namespace stale::test
