// The on-disk cache's records are derived data: reading one back must give exactly what
// computing it gives. Gaussian draws from the cache ≡ rng.normal(), bit for bit, on a miss,
// on a hit and after a damaged record, and the generator is left in the same state; a
// constants record read back is the one stored or none at all, whatever byte is damaged.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "objectives/cache_records.hpp"
#include "objectives/linear/linear_constants_cache.hpp"
#include "objectives/linear/normal_draw_cache.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("objectives");

using namespace stale;

namespace {

// draws `count` through the cache from a generator that first took `before` draws, and checks
// values and the following draws against a plain generator
void check_draws(size_t count, int before) {
  Rng cached(42, Stream::DataGen, 9), plain(42, Stream::DataGen, 9);
  for (int i = 0; i < before; ++i) {
    cached.normal();
    plain.normal();
  }
  std::vector<double> got(count);
  draw_normals(cached, got.data(), count);
  for (size_t i = 0; i < count; ++i) REQUIRE(got[i] == plain.normal());
  for (int i = 0; i < 3; ++i) CHECK(cached.normal() == plain.normal());
  CHECK(cached.uniform() == plain.uniform());
}

size_t record_count(const std::filesystem::path& dir) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().rfind("normals-", 0) == 0) ++n;
  return n;
}

}  // namespace

TEST_CASE("CachedNormalDrawsEqualRngNormalOnMissHitAndDamagedRecord") {
  const auto dir = test::temp_dir("normal-cache");
  setenv("STALE_CACHE_DIR", dir.c_str(), 1);
  for (int before : {0, 1}) {  // 1: the run starts on the generator's spare Box–Muller value
    for (size_t count : {size_t{1000}, kMinCachedNormals, kMinCachedNormals + 1}) {
      check_draws(count, before);  // miss: drawn, then stored
      check_draws(count, before);  // hit: read back
    }
  }
  // short runs are never stored; the two long counts at two starting states are
  CHECK(record_count(dir) == 4);

  // a damaged record (one value's byte flipped) is not trusted: drawn again, still exact
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    const char flipped = 0x5a;
    f.write(&flipped, 1);
  }
  check_draws(kMinCachedNormals, 0);
  unsetenv("STALE_CACHE_DIR");
  std::filesystem::remove_all(dir);
}

TEST_CASE("ADamagedConstantsRecordIsNotFoundNeverReadAsOtherConstants") {
  // issue 34: the record of L, μ, f_* and w_* had no checksum, so a flipped bit on disk became
  // the f_* (and the f − f_* of every run) of every later run of that data
  const auto dir = test::temp_dir("constants-cache");
  setenv("STALE_CACHE_DIR", dir.c_str(), 1);
  CachedConstants c;
  c.lambda_max = 4.25, c.lambda_min = 0.125, c.f_star = 0.3125, c.method = "newton";
  c.w_star = Vec::LinSpaced(5, -1.0, 1.0);
  const uint64_t key = 77;
  store_cached(key, 5, c);
  CachedConstants back;
  REQUIRE(load_cached(key, 5, back));
  CHECK(back.f_star == c.f_star);
  CHECK(load_cached(key, 6, back) == false);  // another dimension
  const auto path = cache_record_path("constants", key);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  int found = 0;
  for (size_t at = 0; at < bytes.size(); ++at)
    for (unsigned char bit : {0x01, 0x80}) {
      std::string damaged = bytes;
      damaged[at] = static_cast<char>(damaged[at] ^ bit);
      std::ofstream(path, std::ios::binary | std::ios::trunc) << damaged;
      CachedConstants d;
      if (!load_cached(key, 5, d)) continue;
      ++found;
      CHECK(d.lambda_max == c.lambda_max);
      CHECK(d.lambda_min == c.lambda_min);
      CHECK(d.f_star == c.f_star);
      CHECK(d.w_star == c.w_star);
      CHECK(d.method == c.method);
    }
  CHECK(found == 0);
  // truncated, or longer than a record of its dimension can be
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 1);
  CHECK_FALSE(load_cached(key, 5, back));
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes + std::string(5000, 'x');
  CHECK_FALSE(load_cached(key, 5, back));
  unsetenv("STALE_CACHE_DIR");
  std::filesystem::remove_all(dir);
}

TEST_CASE("ContentHashSeesEveryByteAndTheLength") {
  std::vector<unsigned char> buf(103);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(i * 7 + 1);
  const uint64_t h = hash_bytes(buf.data(), buf.size(), 0);
  CHECK(h == hash_bytes(buf.data(), buf.size(), 0));
  CHECK(h != hash_bytes(buf.data(), buf.size(), 1));
  CHECK(h != hash_bytes(buf.data(), buf.size() - 1, 0));
  // one flipped bit in each lane of the 32-byte blocks, the 8-byte rest and the tail
  for (size_t i = 0; i < buf.size(); ++i) {
    buf[i] ^= 0x10;
    CHECK(hash_bytes(buf.data(), buf.size(), 0) != h);
    buf[i] ^= 0x10;
  }
}

TEST_SUITE_END();
