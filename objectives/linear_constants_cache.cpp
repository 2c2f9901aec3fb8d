#include "objectives/linear_constants_cache.hpp"

#include <cstring>
#include <fstream>

#include "objectives/cache_records.hpp"
#include "src/core/rng.hpp"

namespace stale {

// The cache key: the data's content, the loss and λ, and the version of the algorithms that
// produce the constants (bump it whenever a solver or tolerance changes: old entries are
// then simply never found again).
constexpr uint64_t kConstantsAlgorithmVersion = 3;  // 3: the four-lane content hash

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

bool load_cached(uint64_t key, Index d, CachedConstants& c) {
  std::ifstream in(cache_path(key), std::ios::binary);
  if (!in) return false;
  Index dd = 0, nw = 0, nm = 0;
  in.read(reinterpret_cast<char*>(&dd), sizeof dd);
  if (!in || dd != d) return false;
  in.read(reinterpret_cast<char*>(&c.lambda_max), sizeof(double));
  in.read(reinterpret_cast<char*>(&c.lambda_min), sizeof(double));
  in.read(reinterpret_cast<char*>(&c.f_star), sizeof(double));
  in.read(reinterpret_cast<char*>(&nw), sizeof nw);
  if (!in || (nw != 0 && nw != d)) return false;
  c.w_star.resize(nw);
  in.read(reinterpret_cast<char*>(c.w_star.data()), static_cast<std::streamsize>(sizeof(double) * nw));
  in.read(reinterpret_cast<char*>(&nm), sizeof nm);
  if (!in || nm < 0 || nm > 4096) return false;
  c.method.resize(static_cast<size_t>(nm));
  in.read(c.method.data(), nm);
  return static_cast<bool>(in);
}

void store_cached(uint64_t key, Index d, const CachedConstants& c) {
  store_record(cache_path(key), [&](std::ofstream& out) {
    const Index nw = c.w_star.size(), nm = static_cast<Index>(c.method.size());
    out.write(reinterpret_cast<const char*>(&d), sizeof d);
    out.write(reinterpret_cast<const char*>(&c.lambda_max), sizeof(double));
    out.write(reinterpret_cast<const char*>(&c.lambda_min), sizeof(double));
    out.write(reinterpret_cast<const char*>(&c.f_star), sizeof(double));
    out.write(reinterpret_cast<const char*>(&nw), sizeof nw);
    out.write(reinterpret_cast<const char*>(c.w_star.data()), static_cast<std::streamsize>(sizeof(double) * nw));
    out.write(reinterpret_cast<const char*>(&nm), sizeof nm);
    out.write(c.method.data(), nm);
  });
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
  store_record(cache_path(key, "gram"), [&](std::ofstream& out) {
    const uint64_t sum = hash_bytes(H.data(), sizeof(double) * static_cast<size_t>(H.size()), 0);
    out.write(reinterpret_cast<const char*>(&d), sizeof d);
    out.write(reinterpret_cast<const char*>(H.data()), static_cast<std::streamsize>(sizeof(double) * H.size()));
    out.write(reinterpret_cast<const char*>(&sum), sizeof sum);
  });
}

}  // namespace stale
