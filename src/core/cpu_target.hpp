#pragma once
// The build's instruction-set target against the CPU it runs on. The default build is compiled
// for x86-64-v3 (CMakeLists.txt, "the instruction-set target"); on a CPU without AVX2 or FMA it
// would die of SIGILL somewhere in the first vector loop. Asked first thing by every front end,
// it becomes one line instead: what is missing and how to build for this machine.
#include <string>

namespace stale {

// "" when this CPU runs everything the build was compiled for, else the one-line reason
std::string cpu_target_mismatch();

// what else decides a run's last bits on one target: the compiler (FMA contraction, inlining),
// Eigen's kernels and the C library's exp/log/tanh, as "GNU 12.2.0, Eigen 3.4.0, glibc 2.36";
// `stale info` and the Python module report it, committed digests name it
// (tests/golden/digests.json)
std::string toolchain();

}  // namespace stale
