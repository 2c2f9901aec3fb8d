#pragma once
// The threading policy (one place for it):
//  - Eigen never parallelises a product by itself (EIGEN_DONT_PARALLELIZE, set for every
//    target): its blocking, and so its summation order, would depend on the thread count.
//  - The harness's own parallel loops split their work into chunks whose boundaries do not
//    depend on the thread count, and combine the chunks in a fixed order, so a run's numbers
//    are bit-identical for any OMP_NUM_THREADS.
//  - A loop runs on several threads only when its work is above kParallelMinWork
//    multiply-adds: below it, fork/join and — on a busy machine — spinning workers that fight
//    other processes for the cores cost more than the arithmetic (measured: a logistic run
//    with d = 512, n = 600 took 2.4 s on one thread and 57.5 s on two beside a loaded core).
//  - Inside a sweep worker (SerialScope) every loop is serial: the sweep already runs one
//    run per core, and nested teams would oversubscribe them.
#include <cstdint>

namespace stale {

// multiply-adds below which a loop stays on the calling thread (≈ 2 ms of GEMV on one core)
inline constexpr double kParallelMinWork = double(1 << 22);

// threads a loop of `work` multiply-adds may use under the policy (1 = run it serially)
int parallel_threads(double work);

// While alive, parallel_threads() returns 1 on this thread.
class SerialScope {
 public:
  SerialScope();
  ~SerialScope();
  SerialScope(const SerialScope&) = delete;
  SerialScope& operator=(const SerialScope&) = delete;

 private:
  bool previous_;
};

}  // namespace stale
