#pragma once
// The tolerances the test suites hold results to, each with the reason for its size. A
// comparison that must hold bit for bit uses memcmp or ==, never one of these.
namespace stale::test::tol {

// Central differences at h = 1e-5 in double (finite_difference.hpp): truncation error
// O(h²)·|f'''| ≈ 1e-10 and cancellation ε·|f|/h ≈ 1e-11·|f| per coordinate, relative to
// ‖∇f‖; 1e-6 leaves room for badly scaled coordinates and still catches a wrong factor or
// a missing term, which show up at 1e-2 or more.
inline constexpr double kFiniteDifference = 1e-6;

// The same sums evaluated in another order (one GEMM against a loop of products, a block
// slice against the full gradient, accumulated micro-batch gradients against one mini-batch
// gradient, the NumPy reference against the C++): a few ulps per term over up to ~10^3
// terms of mixed sign.
inline constexpr double kReordered = 1e-12;

// A handful of operations recomputed along an algebraically equal path (a mean from its
// sum, a sum of equal-weight batch losses): a few ulps.
inline constexpr double kRoundoff = 1e-14;

// Constants from iterative solvers (eigenvalues, damped Newton) against their closed forms:
// the solvers stop at ~1e-12 relative residual, which the derived L, μ and f_* amplify by
// the condition number of the small test problems (≤ 10^3).
inline constexpr double kIterativeSolver = 1e-9;

// float32 arithmetic against the float64 twin: unit roundoff 6e-8 grown through a few
// transformer layers and sums over ~10^3 terms.
inline constexpr double kFloat32 = 1e-4;

}  // namespace stale::test::tol
