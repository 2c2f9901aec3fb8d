#pragma once
// The one finite-difference gradient and relative error of the test suites (tolerances in
// tolerances.hpp: kFiniteDifference is the accuracy of central_difference_gradient at its
// default step).
#include <algorithm>
#include <cmath>
#include <vector>

#include "src/core/types.hpp"

namespace stale::test {

// ‖a − b‖ / ‖b‖ (b the reference; 1e-300 keeps b = 0 finite)
template <class A, class B>
double rel_err(const A& a, const B& b) {
  return (a - b).norm() / std::max(1e-300, b.norm());
}
inline double rel_err(double a, double b) { return std::abs(a - b) / std::max(1e-300, std::abs(b)); }

// central differences (f(x + h e_i) − f(x − h e_i)) / 2h of a scalar function of x, for
// every coordinate i; X is Vec or std::vector<double>, x is restored before returning
template <class F, class X>
X central_difference_gradient(F f, X x, double h = 1e-5) {
  X g = x;
  for (size_t i = 0; i < static_cast<size_t>(x.size()); ++i) {
    const auto xi = x[i];
    x[i] = xi + h;
    const double fp = f(x);
    x[i] = xi - h;
    const double fm = f(x);
    x[i] = xi;
    g[i] = (fp - fm) / (2 * h);
  }
  return g;
}

}  // namespace stale::test
