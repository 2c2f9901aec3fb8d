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
  // closes it now and says whether HDF5 could (negative: it could not, e.g. a file whose last
  // writes met a full disk); the destructor closes too, but cannot report
  herr_t close();

 private:
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

// metadata reads an SWMR reader of this process tries before it gives up on a damaged file
inline constexpr unsigned kSwmrReadAttempts = 4;

// serialises every call into the (not thread-safe) HDF5 library; h5.cpp takes it itself
std::recursive_mutex& library_mutex();

// For a command-line process, called first: HDF5 closes what is still open at exit no more.
// A file whose last write met a full disk cannot be closed, and the library's own clean-up at
// exit then printed "infinite loop closing library" and a dump of its open objects after the
// one-line error; everything of ours is closed by its Handle before exit anyway.
void no_cleanup_at_exit();

Handle create_file(const std::string& path);  // replaces what is at path (never through a link)
// closes h now; DiskFull when HDF5 could not write what it held for lack of space, else UserError
// naming `what` when the close failed (the destructor cannot report either)
void close_checked(Handle& h, const std::string& what);
// a file in the HDF5 1.10 format, which single-writer/multiple-reader (SWMR) mode needs
Handle create_file_swmr_capable(const std::string& path);
// reopen a file created by create_file_swmr_capable for writing: with `swmr`, in SWMR mode
// (datasets grow, readers with SWMR read see a consistent file at every moment, and a killed
// writer leaves one; no object or attribute may be created); without, in ordinary mode
Handle open_file_rdwr(const std::string& path, bool swmr);
void flush_file(hid_t file);
// A copy of a closed file `from` at `to` (replaced) holding only what its objects hold: every
// object under the root (H5Ocopy: chunks are copied as stored, without refiltering) and the
// root's attributes. A file written in SWMR mode keeps the space of every chunk it rewrote at a
// flush (a streamed run flushing every update: 331 MB for 0.9 MB of data); its copy does not.
// Objects named in `skip` (under the root) are left out.
void copy_compact(const std::string& from, const std::string& to, const std::vector<std::string>& skip = {});
// read-only; a file a writer holds (or held when it was killed) in SWMR mode opens with SWMR read
Handle open_file_readonly(const std::string& path);
// about what copy_compact(path, …, skip) writes: the stored bytes of every object's data and
// headers, without the space a SWMR writer left dead
uint64_t stored_bytes(const std::string& path, const std::vector<std::string>& skip = {});
Handle open_dataset(hid_t parent, const std::string& name);
bool unlink(hid_t parent, const std::string& name);
Handle create_group(hid_t parent, const std::string& name);
Handle open_group(hid_t parent, const std::string& name);
bool exists(hid_t parent, const std::string& path);

// attributes (on a file, group or dataset)
void write_attr(hid_t obj, const std::string& name, const std::string& value);
void write_attr(hid_t obj, const std::string& name, double value);
void write_attr(hid_t obj, const std::string& name, int64_t value);
void write_attr(hid_t obj, const std::string& name, const std::vector<double>& value);
void write_attr(hid_t obj, const std::string& name, const std::vector<int64_t>& value);
void delete_attr(hid_t obj, const std::string& name);  // if it exists
bool attr_exists(hid_t obj, const std::string& name);
std::string read_attr_string(hid_t obj, const std::string& name);
double read_attr_double(hid_t obj, const std::string& name);
int64_t read_attr_int(hid_t obj, const std::string& name);
std::vector<int64_t> read_attr_ints(hid_t obj, const std::string& name);  // a 1-D integer attribute

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
// the stored type's class (H5T_INTEGER, H5T_FLOAT, …): HDF5 converts floats to integers on a
// read, truncating 1.7 to 1 without a word, so a reader that wants integers checks first
H5T_class_t dataset_class(hid_t parent, const std::string& name);
std::vector<double> read_matrix_double(hid_t parent, const std::string& name, hsize_t& rows, hsize_t& cols);
// a dataset of any rank and numeric type, converted to double, row-major, with its shape
// (a non-numeric dataset is a UserError naming it)
std::vector<double> read_array_double(hid_t parent, const std::string& name, std::vector<hsize_t>& dims);

// raw bytes (checkpoint slots): a 1-D growable uint8 dataset, written from its start (it never
// shrinks: the length that counts is recorded beside it), and read back
Handle create_bytes(hid_t parent, const std::string& name, hsize_t chunk);
// grow the dataset to at least n bytes, then write bytes [offset, offset + k) piece by piece
void reserve_bytes(hid_t dset, hsize_t n);
void write_bytes_at(hid_t dset, hsize_t offset, const uint8_t* data, size_t k);
std::vector<uint8_t> read_bytes(hid_t dset, hsize_t n);
// overwrite a whole existing dataset of int64 values (same length)
void overwrite_ints(hid_t dset, const std::vector<int64_t>& v);
// rows [start, start + count) of a dataset whose rows hold `cols` values (0: 1-D), as mem_type
void read_rows(hid_t dset, hid_t mem_type, hsize_t start, hsize_t count, hsize_t cols, void* out);
hsize_t dataset_rows(hid_t dset);

// A dataset written once with exactly `rows` rows of `cols` values (cols = 0: 1-D) from
// mem_type data, stored as file_type (< 0: as mem_type). Contiguous, with neither a chunk
// index nor a filter, up to 4096 values or without `compress` (the rule of write_vector and
// write_matrix): a run file's ~25 series written this way cost a quarter of what growable
// datasets with 1024-row chunks cost (results/PERFORMANCE.md). Larger ones with `compress`
// are chunked (at most chunk_rows rows a chunk) and filtered as an Appendable's.
Handle write_rows(hid_t parent, const std::string& name, hid_t mem_type, hsize_t cols, const void* data, hsize_t rows,
                  hsize_t chunk_rows, hid_t file_type = -1, bool compress = true);
// While one of these lives, write_rows, write_vector and write_matrix keep the stored chunks
// of what they filter and copy them into a later dataset written with equal values instead of
// filtering again (src/io/h5.cpp): for a process that writes many run files of one schedule,
// an in-process sweep. The last one to end drops what was kept.
class ReuseFilteredChunks {
 public:
  ReuseFilteredChunks();
  ~ReuseFilteredChunks();
  ReuseFilteredChunks(const ReuseFilteredChunks&) = delete;
  ReuseFilteredChunks& operator=(const ReuseFilteredChunks&) = delete;
};
// how many filtered datasets this process wrote from kept chunks
size_t reused_filtered_writes();

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
  // an existing dataset (a reopened file), appended to after its current rows
  static Appendable open(hid_t parent, const std::string& name, hid_t mem_type, hsize_t cols);
  hid_t id() const { return dset_.id(); }
  void append(const void* data, hsize_t rows);
  hsize_t rows() const { return rows_; }

 private:
  Handle dset_;
  hid_t type_ = -1;
  hsize_t cols_ = 0, rows_ = 0;
};

}  // namespace stale::h5
