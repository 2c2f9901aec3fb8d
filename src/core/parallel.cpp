#include "src/core/parallel.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace stale {

namespace {
thread_local bool serial_thread = false;
}

int parallel_threads(double work) {
#ifdef _OPENMP
  if (serial_thread || work < kParallelMinWork || omp_in_parallel()) return 1;
  return omp_get_max_threads();
#else
  (void)work;
  return 1;
#endif
}

SerialScope::SerialScope() : previous_(serial_thread) { serial_thread = true; }
SerialScope::~SerialScope() { serial_thread = previous_; }

}  // namespace stale
