#pragma once
// A named bag of numeric arrays: the state a run checkpoints (method, metrics, run log) and
// restores on resume (src/run/checkpoint.hpp). Every entry is a flat array of doubles or of
// 64-bit integers with a shape (rows × cols, column-major like Eigen), so that any loop's
// state — iterates, optimizer moments, RNG words, counters — round-trips bit for bit.
// serialize() gives a self-describing byte string with a checksum; deserialize() refuses a
// torn or foreign one with a UserError naming `origin`.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "src/core/rng.hpp"
#include "src/core/types.hpp"

namespace stale {

class StateBag {
 public:
  void put(const std::string& name, double v) { put_doubles(name, {v}); }
  void put(const std::string& name, int64_t v) { put_ints(name, {v}); }
  void put(const std::string& name, const Vec& v) { put_doubles(name, std::vector<double>(v.data(), v.data() + v.size())); }
  void put(const std::string& name, const Mat& m);
  void put_doubles(const std::string& name, std::vector<double> v);
  void put_ints(const std::string& name, std::vector<int64_t> v);
  void put_u64(const std::string& name, const uint64_t* words, size_t n);

  bool has(const std::string& name) const { return entries_.count(name) > 0; }
  double get_double(const std::string& name) const;
  int64_t get_int(const std::string& name) const;
  Vec get_vec(const std::string& name) const;
  Mat get_mat(const std::string& name) const;
  const std::vector<double>& get_doubles(const std::string& name) const;
  const std::vector<int64_t>& get_ints(const std::string& name) const;
  void get_u64(const std::string& name, uint64_t* words, size_t n) const;

  // every entry of `other` under "prefix/"; the entries under "prefix/" as a bag
  void put_bag(const std::string& prefix, StateBag&& other);  // takes the arrays, copies nothing
  StateBag sub(const std::string& prefix) const;
  size_t size() const { return entries_.size(); }

  std::vector<uint8_t> serialize() const;
  // the same bytes handed to `sink` in order, in pieces: an array of 64 KiB or more as itself
  // (its own storage, not copied), the fields between batched. A checkpoint streams a model's
  // state into its file this way instead of holding a second copy of it in memory.
  void serialize_to(const std::function<void(const uint8_t*, size_t)>& sink) const;
  size_t serialized_size() const;
  static StateBag deserialize(const uint8_t* data, size_t n, const std::string& origin);

 private:
  struct Entry {
    bool integer = false;
    int64_t rows = 0, cols = 1;
    std::vector<double> d;
    std::vector<int64_t> i;
  };
  const Entry& at(const std::string& name, bool integer) const;
  template <class Piece>
  void for_each_payload_piece(Piece&& piece) const;
  std::map<std::string, Entry> entries_;
};

inline void save_rng(StateBag& bag, const std::string& name, const Rng& r) {
  uint64_t w[6];
  r.save_words(w);
  bag.put_u64(name, w, 6);
}
inline void restore_rng(const StateBag& bag, const std::string& name, Rng& r) {
  uint64_t w[6];
  bag.get_u64(name, w, 6);
  r.load_words(w);
}

}  // namespace stale
