#include "src/core/memory.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "src/core/error.hpp"

namespace stale {

std::optional<double> available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream ss(line.substr(13));
    double kib = 0;
    if (ss >> kib) return kib * 1024.0;
  }
  return std::nullopt;
}

std::optional<double> parse_bytes(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(v) || v <= 0) return std::nullopt;
  std::string unit(end);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  if (!unit.empty() && (unit.back() == 'i')) unit.pop_back();
  double scale = 1;
  if (unit.empty()) scale = 1;
  else if (unit == "K" || unit == "k") scale = 1024.0;
  else if (unit == "M" || unit == "m") scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "g") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "t") scale = 1024.0 * 1024 * 1024 * 1024;
  else return std::nullopt;
  return v * scale;
}

std::optional<double> memory_limit_from_env() {
  const char* env = std::getenv("STALE_MEMORY_LIMIT");
  if (!env || !*env) return std::nullopt;
  const auto v = parse_bytes(env);
  if (!v)
    throw UserError(std::string("STALE_MEMORY_LIMIT = \"") + env +
                    "\" is not a size; give bytes or a number with K, M, G or T, e.g. 8G");
  return v;
}

double memory_budget_bytes() {
  double b = std::numeric_limits<double>::infinity();
  if (auto a = available_memory_bytes()) b = std::min(b, *a);
  if (auto l = memory_limit_from_env()) b = std::min(b, *l);
  return b;
}

std::string memory_budget_source() {
  const auto a = available_memory_bytes();
  const auto l = memory_limit_from_env();
  if (l && (!a || *l <= *a)) return format_bytes(*l) + " (STALE_MEMORY_LIMIT)";
  if (a) return format_bytes(*a) + " available (MemAvailable; cap it with STALE_MEMORY_LIMIT)";
  return "an unknown amount";
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  double v = bytes;
  while (v >= 1024.0 && u < 6) v /= 1024.0, ++u;
  char buf[64];
  if (!std::isfinite(bytes)) std::snprintf(buf, sizeof buf, "more than 2^64 B");
  else if (v >= 1024.0) std::snprintf(buf, sizeof buf, "%.3g %s", v, units[u]);
  else if (u == 0) std::snprintf(buf, sizeof buf, "%.0f B", v);
  else std::snprintf(buf, sizeof buf, "%.3g %s", v, units[u]);
  return buf;
}

std::string format_count(double x) {
  char buf[64];
  if (x == std::floor(x) && std::abs(x) < 1e15) std::snprintf(buf, sizeof buf, "%.0f", x);
  else std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

void check_memory(double bytes, const std::string& what, const std::string& advice) {
  const double budget = memory_budget_bytes();
  if (!(bytes <= budget))
    throw UserError(what + " needs " + format_bytes(bytes) + " of memory but " + memory_budget_source() +
                    (advice.empty() ? "" : "; " + advice));
}

}  // namespace stale
