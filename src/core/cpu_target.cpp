#include "src/core/cpu_target.hpp"

#include <Eigen/Core>
#include <gnu/libc-version.h>

#include "src/core/build_info.hpp"

namespace stale {

std::string toolchain() {
  return std::string(build::compiler) + ", Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." +
         std::to_string(EIGEN_MAJOR_VERSION) + "." + std::to_string(EIGEN_MINOR_VERSION) + ", glibc " +
         gnu_get_libc_version();
}

std::string cpu_target_mismatch() {
  std::string missing;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  // unused on a generic build, which needs nothing beyond x86-64
  [[maybe_unused]] auto need = [&](bool has, const char* name) {
    if (!has) missing += std::string(missing.empty() ? "" : ", ") + name;
  };
#ifdef __AVX__
  need(__builtin_cpu_supports("avx"), "AVX");
#endif
#ifdef __AVX2__
  need(__builtin_cpu_supports("avx2"), "AVX2");
#endif
#ifdef __FMA__
  need(__builtin_cpu_supports("fma"), "FMA");
#endif
#ifdef __BMI2__
  need(__builtin_cpu_supports("bmi2"), "BMI2");
#endif
#ifdef __AVX512F__
  need(__builtin_cpu_supports("avx512f"), "AVX-512F");
#endif
#endif
  if (missing.empty()) return "";
  return std::string("this build was compiled for ") + build::cpu_target + ", but this CPU lacks " + missing +
         "; rebuild here with -DSTALE_MARCH=x86-64 (generic; its run files match other generic builds only) or "
         "-DSTALE_NATIVE=ON";
}

}  // namespace stale
