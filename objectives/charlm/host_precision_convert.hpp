#pragma once
// Host-side precision conversion for the CUDA twins' transfers (objectives/charlm/charlm_cuda_engine.cu):
// the float32 engine converts host doubles to float into page-locked memory before the copy
// up, and float to double after the copy down, so the bus carries 4 bytes a value instead of
// 8. Plain C++ (nvcc compiles it as host code; tests/objectives checks it on the CPU).
//
// double → float rounds to nearest even (IEEE 754, the default rounding mode on the host and
// __double2float_rn on the device), so a value converted here equals the one a device-side
// conversion gives; float → double is exact. The split into threads is contiguous and
// elementwise: the result does not depend on the thread count.
#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace stale {

// f(a, b) over [0, n) in contiguous chunks: one thread below min_per_thread values per
// thread, at most max_threads (and at most the hardware's) otherwise
template <class F>
void parallel_chunks(int64_t n, F&& f, int max_threads = 8, int64_t min_per_thread = int64_t(1) << 20) {
  const int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int threads = static_cast<int>(std::clamp<int64_t>(std::min(n / std::max<int64_t>(1, min_per_thread), hw), 1,
                                                           std::max(1, max_threads)));
  if (threads == 1) {
    if (n > 0) f(int64_t(0), n);
    return;
  }
  const int64_t chunk = (n + threads - 1) / threads;
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (int t = 1; t < threads; ++t)
    pool.emplace_back([&f, t, chunk, n] { f(std::min(n, t * chunk), std::min(n, (t + 1) * chunk)); });
  f(int64_t(0), std::min(n, chunk));
  for (auto& th : pool) th.join();
}

template <class To, class From>
void convert_on_host(To* dst, const From* src, int64_t n, int max_threads = 8,
                     int64_t min_per_thread = int64_t(1) << 20) {
  parallel_chunks(
      n,
      [&](int64_t a, int64_t b) {
        for (int64_t i = a; i < b; ++i) dst[i] = static_cast<To>(src[i]);
      },
      max_threads, min_per_thread);
}

}  // namespace stale
