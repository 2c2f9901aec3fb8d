#include "objectives/cache_records.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "src/core/new_file.hpp"
#include "src/core/rng.hpp"

namespace stale {

std::filesystem::path cache_dir() {
  if (const char* d = std::getenv("STALE_CACHE_DIR")) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME")) return std::filesystem::path(x) / "stale";
  if (const char* home = std::getenv("HOME")) return std::filesystem::path(home) / ".cache" / "stale";
  return std::filesystem::temp_directory_path() / "stale-cache";
}

std::filesystem::path cache_record_path(const char* kind, uint64_t key) {
  char name[64];
  std::snprintf(name, sizeof name, "%s-%016llx.bin", kind, static_cast<unsigned long long>(key));
  return cache_dir() / name;
}

uint64_t hash_bytes(const void* p, size_t n, uint64_t h) {
  const auto* b = static_cast<const unsigned char*>(p);
  uint64_t lane[4] = {h, splitmix64(h ^ 1), splitmix64(h ^ 2), splitmix64(h ^ 3)};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int l = 0; l < 4; ++l) {
      uint64_t word;
      std::memcpy(&word, b + i + 8 * l, 8);
      lane[l] = splitmix64(lane[l] ^ word);
    }
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, b + i, 8);
    lane[0] = splitmix64(lane[0] ^ word);
  }
  uint64_t tail = 0;
  for (; i < n; ++i) tail = (tail << 8) | b[i];
  uint64_t out = splitmix64(lane[0] ^ tail ^ n);
  for (int l = 1; l < 4; ++l) out = splitmix64(out ^ lane[l]);
  return out;
}

void store_record(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  static std::atomic<int> counter{0};
  const auto tmp = path.string() + ".partial." + std::to_string(getpid()) + "." + std::to_string(counter++);
  {
    NewFileStream out(tmp, /*binary=*/true);  // a cache folder may be shared: never through a link
    if (!out) return;
    write(out);
    out.close();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace stale
