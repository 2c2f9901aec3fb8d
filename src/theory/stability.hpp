#pragma once
// Stability of stale block iterations on a quadratic (issue #16, part 2).
//
// For f(w) = ½ wᵀAw − bᵀw the error e_k = w_k − w_* of a method with a periodic delay
// pattern (stability_pattern.hpp) obeys a linear recursion with period-P coefficients:
//
//   e_{k+1}^(a_k) = e_k^(a_k) − γ·scale · (1/|G_k|) Σ_g Σ_j A_{a_k j} e_{k−d_{k,g,j}}^(j).
//
// Stacking the history of the last δ_max + 1 iterates makes it a first-order recursion
// x_{k+1} = T_k(γ) x_k; one period's product T_{P−1}⋯T_0 is the monodromy operator M(γ) and
// ‖e‖ grows or decays like ρ(M(γ))^{k/P} (Floquet; the spectral radius of a product does not
// depend on the phase the period starts at, since ρ(XY) = ρ(YX)).
//
// The state. Block j of e_{k−d} is one of block j's own past values: the version before the
// last ℓ updates of block j, ℓ = #{updates of block j among k−d, …, k−1}. So the state kept
// here is, per block j, its versions ℓ = 0..V_j (V_j the largest lag any read of block j has):
// Σ_j d_j (V_j + 1) numbers instead of d (δ_max + 1). The full stacked history is this state
// plus copies, and maps into it and back linearly, so the two monodromies have the same
// nonzero spectrum (tests/run/test_stability.cpp checks ρ against the full stack). For
// PipeDream V_j ≈ S while δ_max ≈ S², so the state is about S times smaller.
//
// Solvers for ρ(M(γ)):
//   - dense: M built column by column by applying one period to the identity, then all
//     eigenvalues (Eigen's real Schur form): exact to rounding; O(N³) for state size N;
//   - power: the operator applied implicitly (O(P · d_a · d) per column per period) inside a
//     subspace (simultaneous) iteration with Rayleigh–Ritz on p columns, which, unlike plain
//     power iteration, also converges when the dominant eigenvalues are a complex pair;
//     for large N (the dense solve would cost minutes); converges at the rate
//     |λ_{p+1}/λ_1| per period, slowly when many eigenvalues share the dominant modulus;
//   - eigen: per eigen-direction of A. Valid only when every update changes all blocks with
//     one delay per read (pattern.uniform_all_block(): constant δ, RPD's expected recursion,
//     gradient descent): then the recursion commutes with A, each eigenvalue λ of A evolves
//     alone as x_{k+1} = x_k − γ·scale·λ x_{k−d_k}, and ρ = max_λ ρ_scalar(γλ). A block
//     update E_a A does not commute with A, so PipeDream, PACI and 2BW never split this way
//     (unless A were block diagonal, which no generator produces).
//   - auto: eigen when valid, else dense while N ≤ dense_max, else power.
#include <cstdint>
#include <string>
#include <vector>

#include "src/core/partition.hpp"
#include "src/core/types.hpp"
#include "src/theory/stability_pattern.hpp"

namespace stale {

// The one-period map of a pattern on the per-block version state.
class StaleRecursion {
 public:
  StaleRecursion(Mat A, BlockPartition blocks, DelayPattern pattern);

  Index state_dim() const { return N_; }
  const DelayPattern& pattern() const { return pattern_; }
  const BlockPartition& blocks() const { return blocks_; }
  const Mat& hessian() const { return A_; }
  // V_j + 1: versions of block j the state keeps
  int64_t versions(int j) const { return V_[j] + 1; }

  // X ← M(γ) X, column by column (X is state_dim × c)
  void apply_period(double gamma, Mat& X) const;
  // M(γ) as a dense matrix
  Mat monodromy(double gamma) const;
  // the state at a period boundary from the errors e_k, e_{k−1}, … (newest first; k at the
  // pattern's phase 0, i.e. k = start + nP); needs history_needed() entries
  Vec state_from_errors(const std::vector<Vec>& newest_first) const;
  int64_t history_needed() const { return history_; }

 private:
  Mat A_;
  BlockPartition blocks_;
  DelayPattern pattern_;
  std::vector<int64_t> V_;     // [j] largest version lag read
  std::vector<Index> base_;    // [j] offset of block j's versions in the state
  // [update][member][j] version lag of the read
  std::vector<std::vector<std::vector<int64_t>>> lag_;
  Index N_ = 0;
  int64_t history_ = 1;
  Index offset(int j, int64_t lag) const { return base_[j] + lag * blocks_.size(j); }
};

enum class RadiusSolver { Auto, Dense, Power, Eigen };
RadiusSolver parse_radius_solver(const std::string& name);  // UserError names the valid ones
std::string solver_name(RadiusSolver s);

struct RadiusOptions {
  RadiusSolver solver = RadiusSolver::Auto;
  Index dense_max = 1500;   // auto: dense up to this state size
  int power_columns = 8;    // p of the subspace iteration
  int power_max_periods = 20000;
  double power_tol = 1e-10; // relative change of the Ritz radius over 5 consecutive periods
  uint64_t seed = 0;        // start block of the subspace iteration
};

struct RadiusResult {
  double rho = 0;           // spectral radius of the monodromy (growth per period)
  RadiusSolver solver = RadiusSolver::Dense;
  int iterations = 0;       // power: periods applied
  bool converged = true;
};

// Precomputed per-solver state (the eigenvalues of A for the eigen solver).
class StabilityPredictor {
 public:
  StabilityPredictor(const StaleRecursion& rec, RadiusOptions opt);
  RadiusResult radius(double gamma) const;
  RadiusSolver solver() const { return solver_; }
  const StaleRecursion& recursion() const { return rec_; }

 private:
  const StaleRecursion& rec_;
  RadiusOptions opt_;
  RadiusSolver solver_;
  Vec eig_A_;  // eigen solver: the eigenvalues of A
};

struct StepBound {
  double gamma_max = 0;     // the boundary found: ρ ≤ 1 + stable_tol below, > above
  double rho_below = 0, rho_above = 0;
  int evaluations = 0;
  bool converged = true;    // every radius evaluation converged
};

// The largest stable step by bisection on ρ(M(γ)) ≤ 1 + stable_tol (the tolerance lets
// neutral directions, ρ = 1 exactly, count as stable). Bracket: start at 2/(L·scale), halve
// while unstable or double while stable, then bisect to a relative width rel_tol. It finds
// the boundary next to that bracket; the stable set is assumed to be an interval (0, γ_max).
StepBound largest_stable_step(const StabilityPredictor& p, double L, double rel_tol = 1e-10, double stable_tol = 1e-9);

}  // namespace stale
