#pragma once
// NumPy's binary formats, read without NumPy: `.npy` (one array: magic, a Python-dict header
// with descr / fortran_order / shape, then the raw values) and `.npz` (a zip archive of
// `.npy` members, as written by np.savez). Values of any real, integer or bool dtype become
// doubles. Every malformed file is a UserError that names the file and what is wrong.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace stale {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<double> values;  // row-major (C order), whatever the file's order was
  int64_t size() const;
};

// one .npy file; `what` names it in errors (the path, or "archive.npz: member X.npy")
NpyArray parse_npy(const std::string& bytes, const std::string& what);
NpyArray load_npy(const std::string& path);
// every member of an .npz archive, keyed by its name without ".npy" (np.savez(X=..., y=...)
// gives "X" and "y"); members must be stored uncompressed (np.savez): a deflated member
// (np.savez_compressed) is an error that says so, which keeps zlib out of the build
std::map<std::string, NpyArray> load_npz(const std::string& path);

}  // namespace stale
