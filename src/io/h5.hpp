#pragma once
// Thin RAII layer over the HDF5 C API. The only headers that include <hdf5.h> live in
// src/io/; everything above talks to the run log / schedule file through these helpers.
#include <hdf5.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "src/core/error.hpp"
#include "src/core/types.hpp"

namespace stale::h5 {

// Owns one hid_t and closes it with the right H5*close.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer, const std::string& what);
  Handle(Handle&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle();
  hid_t id() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

// serialises every call into the (not thread-safe) HDF5 library; h5.cpp takes it itself
std::recursive_mutex& library_mutex();

Handle create_file(const std::string& path);  // truncates
void flush_file(hid_t file);
Handle open_file_readonly(const std::string& path);
Handle create_group(hid_t parent, const std::string& name);
Handle open_group(hid_t parent, const std::string& name);
bool exists(hid_t parent, const std::string& path);

// attributes (on a file, group or dataset)
void write_attr(hid_t obj, const std::string& name, const std::string& value);
void write_attr(hid_t obj, const std::string& name, double value);
void write_attr(hid_t obj, const std::string& name, int64_t value);
void write_attr(hid_t obj, const std::string& name, const std::vector<double>& value);
void write_attr(hid_t obj, const std::string& name, const std::vector<int64_t>& value);
std::string read_attr_string(hid_t obj, const std::string& name);
double read_attr_double(hid_t obj, const std::string& name);
int64_t read_attr_int(hid_t obj, const std::string& name);

// whole datasets, written once (1-D or 2-D row-major)
void write_vector(hid_t parent, const std::string& name, const std::vector<double>& v);
void write_vector(hid_t parent, const std::string& name, const std::vector<int64_t>& v);
void write_matrix(hid_t parent, const std::string& name, const double* data, hsize_t rows, hsize_t cols);
void write_matrix(hid_t parent, const std::string& name, const int64_t* data, hsize_t rows, hsize_t cols);
void write_strings(hid_t parent, const std::string& name, const std::vector<std::string>& v);

std::vector<double> read_vector_double(hid_t parent, const std::string& name);
std::vector<int64_t> read_vector_int(hid_t parent, const std::string& name);
// 2-D dataset → row-major values and its shape
std::vector<int64_t> read_matrix_int(hid_t parent, const std::string& name, hsize_t& rows, hsize_t& cols);
std::vector<double> read_matrix_double(hid_t parent, const std::string& name, hsize_t& rows, hsize_t& cols);
// a dataset of any rank and numeric type, converted to double, row-major, with its shape
// (a non-numeric dataset is a UserError naming it)
std::vector<double> read_array_double(hid_t parent, const std::string& name, std::vector<hsize_t>& dims);

// A dataset that grows along its first axis (metrics series, iterate snapshots):
// chunked, deflate-compressed, rows appended in blocks.
class Appendable {
 public:
  Appendable() = default;
  // cols = 0: a 1-D series; cols > 0: rows of `cols` values. file_type < 0: stored as
  // mem_type; else HDF5 converts on write (e.g. int64 in memory, int32 on disk).
  // compress = false: no filters (full-precision iterates compress to ~77% at deflate's
  // cost, most of a small run's time: results/PERFORMANCE.md)
  Appendable(hid_t parent, const std::string& name, hid_t mem_type, hsize_t cols, hsize_t chunk_rows,
             hid_t file_type = -1, bool compress = true);
  void append(const void* data, hsize_t rows);
  hsize_t rows() const { return rows_; }

 private:
  Handle dset_;
  hid_t type_ = -1;
  hsize_t cols_ = 0, rows_ = 0;
};

}  // namespace stale::h5
