#include "objectives/linear/linear_constants_cache.hpp"

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "objectives/cache_records.hpp"
#include "src/core/rng.hpp"

namespace stale {

// The cache key: the data's content, the loss and λ, and the version of the algorithms that
// produce the constants (bump it whenever a solver or tolerance changes: old entries are
// then simply never found again).
// 4: records end with a checksum of their bytes (a damaged record was read as constants)
constexpr uint64_t kConstantsAlgorithmVersion = 4;

uint64_t constants_key(const LinearData& data, const char* loss, double lambda) {
  uint64_t h = splitmix64(kConstantsAlgorithmVersion);
  h = hash_bytes(loss, std::strlen(loss), h);
  h = hash_bytes(data.X.data(), sizeof(double) * data.X.size(), h);
  h = hash_bytes(data.y.data(), sizeof(double) * data.y.size(), h);
  h = hash_bytes(data.weight.data(), sizeof(double) * data.weight.size(), h);
  return hash_bytes(&lambda, sizeof lambda, h);
}

namespace {
std::filesystem::path cache_path(uint64_t key, const char* kind = "constants") { return cache_record_path(kind, key); }
}  // namespace

// A record: d, λ_max, λ_min, f_*, |w_*|, w_*, |method|, method, then hash_bytes of all of
// that. Without the checksum a flipped bit on disk became an f_* every later run of the data
// reported (issue 34: nothing silently wrong); a record that fails it is not found.
bool load_cached(uint64_t key, Index d, CachedConstants& c) {
  std::ifstream in(cache_path(key), std::ios::binary);
  if (!in) return false;
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // the largest record of dimension d: its fixed fields, w_*, a method name up to 4096 bytes
  const size_t fixed = 3 * sizeof(Index) + 3 * sizeof(double) + sizeof(uint64_t);
  if (bytes.size() < fixed || bytes.size() > fixed + sizeof(double) * static_cast<size_t>(d) + 4096) return false;
  uint64_t sum = 0;
  std::memcpy(&sum, bytes.data() + bytes.size() - sizeof sum, sizeof sum);
  if (sum != hash_bytes(bytes.data(), bytes.size() - sizeof sum, 0)) return false;
  size_t at = 0;
  auto take = [&](void* out, size_t n) {
    if (n > bytes.size() - sizeof sum - at) return false;
    if (n > 0) std::memcpy(out, bytes.data() + at, n);  // an empty w_* or name has no buffer
    at += n;
    return true;
  };
  Index dd = 0, nw = 0, nm = 0;
  if (!take(&dd, sizeof dd) || dd != d || !take(&c.lambda_max, sizeof(double)) ||
      !take(&c.lambda_min, sizeof(double)) || !take(&c.f_star, sizeof(double)) || !take(&nw, sizeof nw) ||
      (nw != 0 && nw != d))
    return false;
  c.w_star.resize(nw);
  if (!take(c.w_star.data(), sizeof(double) * static_cast<size_t>(nw)) || !take(&nm, sizeof nm) || nm < 0 || nm > 4096)
    return false;
  c.method.resize(static_cast<size_t>(nm));
  return take(c.method.data(), static_cast<size_t>(nm)) && at == bytes.size() - sizeof sum;
}

void store_cached(uint64_t key, Index d, const CachedConstants& c) {
  std::string bytes;
  auto put = [&](const void* p, size_t n) {
    if (n > 0) bytes.append(static_cast<const char*>(p), n);
  };
  const Index nw = c.w_star.size(), nm = static_cast<Index>(c.method.size());
  put(&d, sizeof d);
  put(&c.lambda_max, sizeof(double));
  put(&c.lambda_min, sizeof(double));
  put(&c.f_star, sizeof(double));
  put(&nw, sizeof nw);
  put(c.w_star.data(), sizeof(double) * static_cast<size_t>(nw));
  put(&nm, sizeof nm);
  put(c.method.data(), static_cast<size_t>(nm));
  const uint64_t sum = hash_bytes(bytes.data(), bytes.size(), 0);
  put(&sum, sizeof sum);
  store_record(cache_path(key),
               [&](std::ostream& out) { out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())); });
}

void keep_solution(uint64_t key, Index d, double f_star, const Vec& w, const std::string& method, bool converged,
                   CachedConstants& cc, ObjectiveConstants& c) {
  c.f_star = f_star;
  c.w_star = w;
  c.f_star_method = method;
  if (!converged) return;
  cc.f_star = f_star;
  cc.w_star = w;
  cc.method = method;
  store_cached(key, d, cc);
}

bool load_cached_gram(uint64_t key, Index d, Mat& H) {
  if (d > kMaxCachedGramDim) return false;
  std::ifstream in(cache_path(key, "gram"), std::ios::binary);
  if (!in) return false;
  Index dd = 0;
  uint64_t sum = 0;
  in.read(reinterpret_cast<char*>(&dd), sizeof dd);
  if (!in || dd != d) return false;
  H.resize(d, d);
  in.read(reinterpret_cast<char*>(H.data()), static_cast<std::streamsize>(sizeof(double) * H.size()));
  in.read(reinterpret_cast<char*>(&sum), sizeof sum);
  return in && sum == hash_bytes(H.data(), sizeof(double) * static_cast<size_t>(H.size()), 0);
}

void store_cached_gram(uint64_t key, const Mat& H) {
  const Index d = H.rows();
  if (d > kMaxCachedGramDim || H.cols() != d) return;
  store_record(cache_path(key, "gram"), [&](std::ostream& out) {
    const uint64_t sum = hash_bytes(H.data(), sizeof(double) * static_cast<size_t>(H.size()), 0);
    out.write(reinterpret_cast<const char*>(&d), sizeof d);
    out.write(reinterpret_cast<const char*>(H.data()), static_cast<std::streamsize>(sizeof(double) * H.size()));
    out.write(reinterpret_cast<const char*>(&sum), sizeof sum);
  });
}

}  // namespace stale
