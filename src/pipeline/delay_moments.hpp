#pragma once
// The delay distribution along a run, in windows of k (issue 16: does the second moment of
// the delays stay bounded when they depend on the trajectory?). For every window of `window`
// consecutive block updates and every read block j it keeps, over the updates k in the
// window, the mean of d_k^(j), its second moment (1/n) Σ (d_k^(j))² and its maximum
// (docs/theory.md §1: d_k^(j) = k − j_k^(j), in block updates); and the largest delay of any
// block seen from k = 0 to the window's end — the measured δ_K the §3 bound holds with over
// the first K updates.
#include <cstdint>
#include <vector>

namespace stale {

class DelayMoments {
 public:
  DelayMoments() = default;
  DelayMoments(int64_t window, int blocks);

  // the delays of the next update, one per block
  void add(const std::vector<int64_t>& row);
  // closes the last window when it is partial (its `count` says how many updates it holds)
  void close();

  bool empty() const { return k_end.empty(); }
  int64_t windows() const { return static_cast<int64_t>(k_end.size()); }
  // the largest delay seen (−1: no update)
  int64_t max_overall() const { return running_max_; }

  int64_t window = 0;
  int blocks = 0;
  std::vector<int64_t> k_end;        // [w] updates done at the window's end
  std::vector<int64_t> count;        // [w] updates in the window
  std::vector<double> mean;          // [w · blocks + j]
  std::vector<double> second;        // [w · blocks + j]  (1/n) Σ d²
  std::vector<int64_t> max;          // [w · blocks + j]
  std::vector<int64_t> running_max;  // [w] max over every block and every update up to k_end

 private:
  void flush();
  int64_t k_ = 0, in_window_ = 0, running_max_ = -1;
  std::vector<double> sum_, sum_sq_;
  std::vector<int64_t> max_;
};

}  // namespace stale
