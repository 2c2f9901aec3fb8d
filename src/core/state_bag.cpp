#include "src/core/state_bag.hpp"

#include <cstring>

#include "src/core/error.hpp"

namespace stale {

namespace {
constexpr char kMagic[8] = {'S', 'T', 'A', 'L', 'E', 'S', 'B', '1'};

// FNV-1a over the payload: a checkpoint slot torn by a kill is refused, never half-read
constexpr uint64_t kFnvStart = 0xcbf29ce484222325ULL;
uint64_t fnv1a(const uint8_t* p, size_t n, uint64_t h = kFnvStart) {
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}
}  // namespace

void StateBag::put(const std::string& name, const Mat& m) {
  Entry e;
  e.rows = m.rows();
  e.cols = m.cols();
  e.d.assign(m.data(), m.data() + m.size());
  entries_[name] = std::move(e);
}
void StateBag::put_doubles(const std::string& name, std::vector<double> v) {
  Entry e;
  e.rows = static_cast<int64_t>(v.size());
  e.d = std::move(v);
  entries_[name] = std::move(e);
}
void StateBag::put_ints(const std::string& name, std::vector<int64_t> v) {
  Entry e;
  e.integer = true;
  e.rows = static_cast<int64_t>(v.size());
  e.i = std::move(v);
  entries_[name] = std::move(e);
}
void StateBag::put_u64(const std::string& name, const uint64_t* words, size_t n) {
  std::vector<int64_t> v(n);
  std::memcpy(v.data(), words, n * sizeof(uint64_t));
  put_ints(name, std::move(v));
}

const StateBag::Entry& StateBag::at(const std::string& name, bool integer) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) throw UserError("checkpoint: entry '" + name + "' is missing");
  if (it->second.integer != integer)
    throw UserError("checkpoint: entry '" + name + "' holds " + (integer ? "doubles" : "integers"));
  return it->second;
}
double StateBag::get_double(const std::string& name) const {
  const Entry& e = at(name, false);
  if (e.d.size() != 1) throw UserError("checkpoint: entry '" + name + "' is not a scalar");
  return e.d[0];
}
int64_t StateBag::get_int(const std::string& name) const {
  const Entry& e = at(name, true);
  if (e.i.size() != 1) throw UserError("checkpoint: entry '" + name + "' is not a scalar");
  return e.i[0];
}
Vec StateBag::get_vec(const std::string& name) const {
  const Entry& e = at(name, false);
  return Eigen::Map<const Vec>(e.d.data(), static_cast<Index>(e.d.size()));
}
Mat StateBag::get_mat(const std::string& name) const {
  const Entry& e = at(name, false);
  return Eigen::Map<const Mat>(e.d.data(), e.rows, e.cols);
}
const std::vector<double>& StateBag::get_doubles(const std::string& name) const { return at(name, false).d; }
const std::vector<int64_t>& StateBag::get_ints(const std::string& name) const { return at(name, true).i; }
void StateBag::get_u64(const std::string& name, uint64_t* words, size_t n) const {
  const auto& v = get_ints(name);
  if (v.size() != n) throw UserError("checkpoint: entry '" + name + "' has " + std::to_string(v.size()) + " words, expected " + std::to_string(n));
  std::memcpy(words, v.data(), n * sizeof(uint64_t));
}

void StateBag::put_bag(const std::string& prefix, StateBag&& other) {
  for (auto& [k, e] : other.entries_) entries_[prefix + "/" + k] = std::move(e);
  other.entries_.clear();
}
StateBag StateBag::sub(const std::string& prefix) const {
  StateBag out;
  const std::string p = prefix + "/";
  for (auto it = entries_.lower_bound(p); it != entries_.end() && it->first.compare(0, p.size(), p) == 0; ++it)
    out.entries_[it->first.substr(p.size())] = it->second;
  return out;
}

// layout: magic, payload size, FNV-1a of the payload, payload = count, then per entry:
// name length, name, integer flag, rows, cols, values (little-endian host words)
template <class Piece>
void StateBag::for_each_payload_piece(Piece&& piece) const {
  const auto i64 = [&](int64_t v) { piece(reinterpret_cast<const uint8_t*>(&v), sizeof v); };
  i64(static_cast<int64_t>(entries_.size()));
  for (const auto& [name, e] : entries_) {
    i64(static_cast<int64_t>(name.size()));
    piece(reinterpret_cast<const uint8_t*>(name.data()), name.size());
    i64(e.integer ? 1 : 0);
    i64(e.rows);
    i64(e.cols);
    if (e.integer) piece(reinterpret_cast<const uint8_t*>(e.i.data()), e.i.size() * sizeof(int64_t));
    else piece(reinterpret_cast<const uint8_t*>(e.d.data()), e.d.size() * sizeof(double));
  }
}

size_t StateBag::serialized_size() const {
  size_t n = 24;
  for_each_payload_piece([&](const uint8_t*, size_t k) { n += k; });
  return n;
}

void StateBag::serialize_to(const std::function<void(const uint8_t*, size_t)>& sink) const {
  // two passes: the header's size and checksum, then the bytes; the small fields go out in
  // batches of up to 64 KiB, an array of that size or more as itself
  int64_t len = 0;
  uint64_t h = kFnvStart;
  for_each_payload_piece([&](const uint8_t* p, size_t k) {
    len += static_cast<int64_t>(k);
    h = fnv1a(p, k, h);
  });
  constexpr size_t kBatch = size_t{1} << 16;
  std::vector<uint8_t> small;
  small.reserve(kBatch);
  const auto emit = [&](const uint8_t* p, size_t k) {
    if (k == 0) return;  // an empty entry: p may be null
    if (small.size() + k > kBatch && !small.empty()) sink(small.data(), small.size()), small.clear();
    if (k >= kBatch) return sink(p, k);
    small.insert(small.end(), p, p + k);
  };
  emit(reinterpret_cast<const uint8_t*>(kMagic), sizeof kMagic);
  emit(reinterpret_cast<const uint8_t*>(&len), sizeof len);
  emit(reinterpret_cast<const uint8_t*>(&h), sizeof h);
  for_each_payload_piece(emit);
  if (!small.empty()) sink(small.data(), small.size());
}

std::vector<uint8_t> StateBag::serialize() const {
  std::vector<uint8_t> out;
  out.reserve(serialized_size());
  serialize_to([&](const uint8_t* p, size_t k) { out.insert(out.end(), p, p + k); });
  return out;
}

StateBag StateBag::deserialize(const uint8_t* data, size_t n, const std::string& origin) {
  auto bad = [&](const std::string& why) { return UserError(origin + ": checkpoint is not readable (" + why + ")"); };
  if (n < 24 || std::memcmp(data, kMagic, sizeof kMagic) != 0) throw bad("no checkpoint header");
  int64_t len = 0;
  uint64_t h = 0;
  std::memcpy(&len, data + 8, 8);
  std::memcpy(&h, data + 16, 8);
  if (len < 0 || static_cast<size_t>(len) != n - 24) throw bad("size mismatch");
  const uint8_t* p = data + 24;
  if (fnv1a(p, static_cast<size_t>(len)) != h) throw bad("checksum mismatch");
  const uint8_t* end = p + len;
  auto take = [&](void* dst, size_t k) {
    if (k == 0) return;  // an empty entry: dst may be null
    if (static_cast<size_t>(end - p) < k) throw bad("truncated");
    std::memcpy(dst, p, k);
    p += k;
  };
  auto take_i64 = [&] {
    int64_t v = 0;
    take(&v, 8);
    return v;
  };
  StateBag bag;
  const int64_t count = take_i64();
  for (int64_t c = 0; c < count; ++c) {
    const int64_t nl = take_i64();
    if (nl < 0 || nl > end - p) throw bad("bad name");
    std::string name(reinterpret_cast<const char*>(p), static_cast<size_t>(nl));
    p += nl;
    Entry e;
    e.integer = take_i64() != 0;
    e.rows = take_i64();
    e.cols = take_i64();
    if (e.rows < 0 || e.cols < 0 || (e.cols > 0 && e.rows > (end - p) / 8 / e.cols)) throw bad("bad shape of " + name);
    const size_t cells = static_cast<size_t>(e.rows * e.cols);
    if (e.integer) e.i.resize(cells), take(e.i.data(), cells * 8);
    else e.d.resize(cells), take(e.d.data(), cells * 8);
    bag.entries_[name] = std::move(e);
  }
  return bag;
}

}  // namespace stale
