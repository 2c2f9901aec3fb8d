#pragma once
// An objective as named values and arrays: what a twin of it written elsewhere needs to be the
// same function (stale.objective() in Python; stale.torch's least_squares_stages and
// charlm_stages build their PyTorch stages from it). An objective family offers one through its
// registry entry (ObjectiveEntry::export_arrays); the front ends turn it into their own types
// without knowing which objective it is. A name with '/' nests ("X_csr/indptr" is X_csr's
// indptr).
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace stale {

template <class T>
struct ExportArray {
  std::vector<T> values;      // row-major
  std::vector<size_t> shape;  // empty: one dimension, values.size() long
};

struct ExportTuple {  // a short tuple of counts (a shape), not an array
  std::vector<int64_t> values;
};

// (a string literal would convert to bool: put std::string values)
using ExportValue = std::variant<std::monostate /* None */, bool, double, int64_t, std::string, ExportTuple,
                                 ExportArray<double>, ExportArray<int64_t>, ExportArray<int32_t>>;

struct ObjectiveExport {
  std::vector<std::pair<std::string, ExportValue>> items;  // in the order they were put
  void put(std::string name, ExportValue v) { items.emplace_back(std::move(name), std::move(v)); }
};

}  // namespace stale
