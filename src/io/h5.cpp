#include "src/io/h5.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <list>
#include <mutex>

#include "src/core/memory.hpp"
#include "src/core/new_file.hpp"

namespace stale::h5 {

// The HDF5 library of the Debian package is built without thread safety, and runs of an
// in-process sweep write their files from several threads: every call into it goes through
// this one (recursive) lock.
std::recursive_mutex& library_mutex() {
  static std::recursive_mutex m;
  return m;
}

namespace {
// HDF5 prints its error stack on stderr by default. Our wrappers turn every failure into one
// line that names the file or object, so the stack is silenced — but only while one of our
// calls runs: the previous handler comes back when it returns, and anything else in the
// process that uses HDF5 keeps the library's default.
// The handler is swapped by the outermost of nested calls only (the library is not thread
// safe, so the setting is global and the lock below serialises every call): getting and
// setting it on every nested wrapper was a tenth of writing a short run's file.
thread_local int quiet_depth = 0;
class QuietErrors {
 public:
  QuietErrors() {
    if (quiet_depth++ > 0) return;
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietErrors() {
    if (--quiet_depth == 0) H5Eset_auto2(H5E_DEFAULT, func_, data_);
  }
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};
struct Lock {
  std::lock_guard<std::recursive_mutex> guard{library_mutex()};
  QuietErrors quiet;
};
// A full disk shows only deep in HDF5's error stack: its file driver reports the failed
// write with the system's errno (28, "No space left on device").
bool stack_says_disk_full() {
  bool full = false;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
        if (e->desc && (std::strstr(e->desc, "errno = 28,") || std::strstr(e->desc, "No space left on device")))
          *static_cast<bool*>(out) = true;
        return 0;
      },
      &full);
  return full;
}
[[noreturn]] void fail(const std::string& what) {
  if (stack_says_disk_full()) throw stale::DiskFull("HDF5: " + what + " failed: no space left on device");
  throw UserError("HDF5: " + what + " failed");
}
void ok(herr_t rc, const std::string& what) {
  const Lock lock;
  if (rc < 0) fail(what);
}
hid_t checked(hid_t id, const std::string& what) {
  const Lock lock;
  if (id < 0) fail(what);
  return id;
}
Handle scalar_space() { return Handle(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate"); }
Handle simple_space(std::vector<hsize_t> dims) {
  const Lock lock;
  return Handle(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose, "H5Screate_simple");
}
Handle open_attr_for_write(hid_t obj, const std::string& name, hid_t type, hid_t space) {
  const Lock lock;
  if (H5Aexists(obj, name.c_str()) > 0) H5Adelete(obj, name.c_str());
  return Handle(H5Acreate2(obj, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose, "create attribute " + name);
}
Handle str_type(size_t len) {
  const Lock lock;
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose, "H5Tcopy");
  ok(H5Tset_size(t.id(), std::max<size_t>(len, 1)), "H5Tset_size");
  ok(H5Tset_cset(t.id(), H5T_CSET_UTF8), "H5Tset_cset");
  return t;
}
std::vector<hsize_t> dataset_dims(hid_t dset) {
  const Lock lock;
  Handle space(H5Dget_space(dset), H5Sclose, "H5Dget_space");
  const int nd = H5Sget_simple_extent_ndims(space.id());
  std::vector<hsize_t> dims(std::max(nd, 0));
  H5Sget_simple_extent_dims(space.id(), dims.data(), nullptr);
  return dims;
}
// Integers (delay tables, the schedule's op table, step and block indices) are packed to the
// bits their chunk needs (the scale-offset filter: no zlib, lossless for integers); doubles
// get byte shuffle + deflate level 1, which compresses slowly varying series nearly as well as
// level 4 for a fraction of the time. A run's delay and op tables through deflate were a
// quarter of a small schedule run's time (results/PERFORMANCE.md).
void set_compression(hid_t plist, hid_t type) {
  const Lock lock;
  if (H5Tget_class(type) == H5T_INTEGER) {
    ok(H5Pset_scaleoffset(plist, H5Z_SO_INT, H5Z_SO_INT_MINBITS_DEFAULT), "H5Pset_scaleoffset");
    return;
  }
  ok(H5Pset_shuffle(plist), "H5Pset_shuffle");
  ok(H5Pset_deflate(plist, 1), "H5Pset_deflate");
}
// The filtered datasets a process writes again with the same values are compressed once,
// while a ReuseFilteredChunks scope lives (an in-process sweep). An ensemble's columns and a
// sweep's runs at other step sizes or seeds share their schedule, so each of their files
// holds the same op tables (and the same delay table while the columns run alike);
// compressing them again for every file was a twelfth of a 9-column E1 ensemble
// (results/PERFORMANCE.md). The first write goes through the filters and its chunks are kept
// as stored; a later write of equal values (equal bytes, types, shape and chunks) puts those
// chunks into the new dataset with H5Dwrite_chunk. Filters are deterministic, so the chunks
// are byte for byte what filtering the values again would give. Outside a scope nothing is
// kept: a lone run's file would only pay for the copies (~1.5 % of E4 at S = 128).
class FilteredChunkCache {
 public:
  struct Chunk {
    std::vector<hsize_t> offset;
    uint32_t filter_mask = 0;
    std::vector<unsigned char> bytes;
  };
  struct Key {
    // a type as the conversion and the filters see it (only native and IEEE types are written)
    struct Type {
      H5T_class_t cls;
      size_t size;
      H5T_order_t order;
      H5T_sign_t sign;
      bool operator==(const Type&) const = default;
    };
    Type mem, stored;
    std::vector<hsize_t> dims, chunk;
    bool operator==(const Key&) const = default;
  };
  static Key::Type describe(hid_t type) {
    const H5T_class_t cls = H5Tget_class(type);
    return {cls, H5Tget_size(type), H5Tget_order(type), cls == H5T_INTEGER ? H5Tget_sign(type) : H5T_SGN_ERROR};
  }

  // the stored chunks of a dataset written earlier with these values, or nullptr
  const std::vector<Chunk>* find(const Key& key, const void* values, size_t bytes) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->key == key && it->values.size() == bytes && std::memcmp(it->values.data(), values, bytes) == 0) {
        entries_.splice(entries_.end(), entries_, it);  // most recently used last
        return &entries_.back().chunks;
      }
    return nullptr;
  }
  // keep the chunks of `dset`, just written from `values` (its cache is flushed first)
  void add(hid_t dset, Key key, const void* values, size_t bytes) {
    if (bytes > kMaxValueBytes) return;
    ok(H5Dflush(dset), "H5Dflush");
    Entry e{std::move(key), {}, {}, 0};
    const auto& dims = e.key.dims;
    std::vector<hsize_t> offset(dims.size(), 0);
    for (bool more = true; more;) {
      Chunk c{offset, 0, {}};
      hsize_t size = 0;
      ok(H5Dget_chunk_storage_size(dset, offset.data(), &size), "H5Dget_chunk_storage_size");
      c.bytes.resize(size);
      ok(H5Dread_chunk(dset, H5P_DEFAULT, offset.data(), &c.filter_mask, c.bytes.data()), "H5Dread_chunk");
      e.stored_bytes += size;
      e.chunks.push_back(std::move(c));
      more = false;  // the next chunk's offset, the last axis fastest
      for (size_t axis = dims.size(); axis-- > 0 && !more;) {
        offset[axis] += e.key.chunk[axis];
        more = offset[axis] < dims[axis];
        if (!more) offset[axis] = 0;
      }
    }
    e.values.assign(static_cast<const unsigned char*>(values), static_cast<const unsigned char*>(values) + bytes);
    bytes_ += e.values.size() + e.stored_bytes;
    entries_.push_back(std::move(e));
    while ((bytes_ > kMaxBytes || entries_.size() > kMaxEntries) && !entries_.empty()) {
      bytes_ -= entries_.front().values.size() + entries_.front().stored_bytes;
      entries_.pop_front();
    }
  }
  static void write(hid_t dset, const std::vector<Chunk>& chunks) {
    for (const auto& c : chunks)
      ok(H5Dwrite_chunk(dset, H5P_DEFAULT, c.filter_mask, c.offset.data(), c.bytes.size(), c.bytes.data()),
         "H5Dwrite_chunk");
  }
  void clear() { entries_.clear(), bytes_ = 0; }
  size_t hits = 0;
  int scopes = 0;  // live ReuseFilteredChunks

 private:
  // what one table and all of them may hold (an E4 run's op tables at S = 128 are ~3 MB each),
  // and how many tables: a lookup compares keys one by one
  static constexpr size_t kMaxValueBytes = size_t{16} << 20, kMaxBytes = size_t{96} << 20, kMaxEntries = 256;
  struct Entry {
    Key key;
    std::vector<unsigned char> values;
    std::vector<Chunk> chunks;
    size_t stored_bytes;
  };
  std::list<Entry> entries_;
  size_t bytes_ = 0;
};
FilteredChunkCache& filtered_chunk_cache() {
  static FilteredChunkCache cache;  // used under the library's lock only
  return cache;
}

// A dataset of `dims` written once from mem_type data and stored as `stored`: with `compress`,
// more than 4096 values are chunked (at most chunk_rows rows a chunk) and filtered; anything
// else is contiguous, with neither a chunk index nor a filter.
Handle write_whole(hid_t parent, const std::string& name, hid_t mem_type, hid_t stored, const std::vector<hsize_t>& dims,
                   hsize_t chunk_rows, bool compress, const void* data) {
  const Lock lock;
  Handle space = simple_space(dims);
  hsize_t total = 1;
  for (auto d : dims) total *= d;
  Handle plist;  // none: contiguous (the library's default creation list)
  FilteredChunkCache::Key key;
  if (compress && total > 4096) {
    plist = Handle(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "H5Pcreate");
    std::vector<hsize_t> chunk = dims;
    chunk[0] = std::max<hsize_t>(1, std::min(dims[0], chunk_rows));
    ok(H5Pset_chunk(plist.id(), static_cast<int>(chunk.size()), chunk.data()), "H5Pset_chunk");
    set_compression(plist.id(), stored);
    key = {FilteredChunkCache::describe(mem_type), FilteredChunkCache::describe(stored), dims, chunk};
  }
  Handle dset(H5Dcreate2(parent, name.c_str(), stored, space.id(), H5P_DEFAULT, plist.valid() ? plist.id() : H5P_DEFAULT,
                         H5P_DEFAULT),
              H5Dclose, "create dataset " + name);
  if (total == 0) return dset;
  auto& cache = filtered_chunk_cache();
  if (!plist.valid() || cache.scopes == 0) {
    ok(H5Dwrite(dset.id(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "write " + name);
    return dset;
  }
  const size_t bytes = total * H5Tget_size(mem_type);
  if (const auto* chunks = cache.find(key, data, bytes)) {
    FilteredChunkCache::write(dset.id(), *chunks);
    ++cache.hits;
    return dset;
  }
  ok(H5Dwrite(dset.id(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "write " + name);
  cache.add(dset.id(), std::move(key), data, bytes);
  return dset;
}
template <class T>
void write_dataset(hid_t parent, const std::string& name, hid_t type, const T* data, std::vector<hsize_t> dims) {
  hsize_t per_row = 1;  // chunks of about 2^16 values
  for (size_t i = 1; i < dims.size(); ++i) per_row *= dims[i];
  write_whole(parent, name, type, type, dims, (hsize_t{1} << 16) / std::max<hsize_t>(1, per_row), true, data);
}
std::string shape_text(const std::vector<hsize_t>& dims) {
  std::string t = "(";
  for (size_t i = 0; i < dims.size(); ++i) t += (i ? ", " : "") + std::to_string(dims[i]);
  return t + (dims.size() == 1 ? ",)" : ")");
}
// The values a dataset's shape declares, checked before anything is allocated for them (issue
// 34: a fuzzed shape of 2^40 rows over a file of a few kilobytes asked for terabytes). The
// product must not overflow; a dataset stored without filters must store them (its bytes on
// disk cover every value: what HDF5 would otherwise read as fill values or past the file's
// end is a damaged file); and they must fit the memory budget (src/core/memory.hpp).
hsize_t declared_values(hid_t dset, const std::string& name, const std::vector<hsize_t>& dims, size_t value_bytes) {
  Handle type(H5Dget_type(dset), H5Tclose, "H5Dget_type of " + name);
  hsize_t total = 1, needed = 0;
  bool overflow = false;
  for (auto d : dims) overflow |= __builtin_mul_overflow(total, d, &total);
  overflow |=
      __builtin_mul_overflow(total, static_cast<hsize_t>(std::max(H5Tget_size(type.id()), value_bytes)), &needed);
  if (overflow)
    throw UserError("HDF5 dataset " + name + " declares the shape " + shape_text(dims) +
                    ", more than 2^64 bytes: the file is damaged");
  if (total == 0) return 0;
  Handle plist(H5Dget_create_plist(dset), H5Pclose, "H5Dget_create_plist of " + name);
  needed = total * H5Tget_size(type.id());
  if (H5Pget_nfilters(plist.id()) == 0 && H5Dget_storage_size(dset) < needed)
    throw UserError("HDF5 dataset " + name + " declares the shape " + shape_text(dims) + " (" +
                    format_bytes(static_cast<double>(needed)) + ") but stores " +
                    format_bytes(static_cast<double>(H5Dget_storage_size(dset))) +
                    ": the file is truncated or damaged");
  check_memory(static_cast<double>(total) * static_cast<double>(value_bytes),
               "HDF5 dataset " + name + " of shape " + shape_text(dims),
               "the file is damaged, or larger than this process may read");
  return total;
}
template <class T>
std::vector<T> read_all(hid_t parent, const std::string& name, hid_t type, std::vector<hsize_t>& dims) {
  const Lock lock;
  Handle dset = open_dataset(parent, name);
  dims = dataset_dims(dset.id());
  const hsize_t total = declared_values(dset.id(), name, dims, sizeof(T));
  std::vector<T> out(total);
  if (total > 0) ok(H5Dread(dset.id(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), "read " + name);
  return out;
}
}  // namespace

ReuseFilteredChunks::ReuseFilteredChunks() {
  const Lock lock;
  ++filtered_chunk_cache().scopes;
}
ReuseFilteredChunks::~ReuseFilteredChunks() {
  const Lock lock;
  auto& cache = filtered_chunk_cache();
  if (--cache.scopes == 0) cache.clear();
}
size_t reused_filtered_writes() {
  const Lock lock;
  return filtered_chunk_cache().hits;
}

Handle::Handle(hid_t id, Closer closer, const std::string& what) : id_(checked(id, what)), closer_(closer) {}
Handle& Handle::operator=(Handle&& o) noexcept {
  const Lock lock;
  if (this != &o) {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = o.id_;
    closer_ = o.closer_;
    o.id_ = -1;
  }
  return *this;
}
Handle::~Handle() { close(); }  // a failure is not reported here: close_checked is the one that says
void close_checked(Handle& h, const std::string& what) {
  const Lock lock;
  if (h.close() < 0) fail("close " + what);
}
herr_t Handle::close() {
  const Lock lock;
  herr_t r = 0;
  if (id_ >= 0 && closer_) r = closer_(id_);
  id_ = -1;
  return r;
}

Handle open_dataset(hid_t parent, const std::string& name) {
  const Lock lock;
  return Handle(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), H5Dclose, "open dataset " + name);
}
namespace {
// Links and attributes kept in their object's header up to these counts. HDF5's default
// moves a group past 8 links, or an object past 8 attributes, into "dense" storage (a
// fractal heap and a B-tree of hashed names each): a run file's root, /metrics, /schedule,
// /objective and /theory all crossed it, and building those indexes was a large part of
// writing a short run's file. Readers see the same names and values either way.
constexpr unsigned kCompactLinks = 64, kDenseLinks = 48;
constexpr unsigned kCompactAttrs = 64, kDenseAttrs = 48;
// a group creation list (also the root group's, through the file creation list) that keeps
// links and attributes compact up to the counts above
void set_compact(hid_t plist) {
  ok(H5Pset_link_phase_change(plist, kCompactLinks, kDenseLinks), "H5Pset_link_phase_change");
  ok(H5Pset_attr_phase_change(plist, kCompactAttrs, kDenseAttrs), "H5Pset_attr_phase_change");
}
Handle compact_file_creation() {
  Handle fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose, "H5Pcreate");
  set_compact(fcpl.id());
  return fcpl;
}
}  // namespace
void no_cleanup_at_exit() {
  // before any other call: the library registers its clean-up when it first starts (no Lock,
  // whose error-handler swap would start it)
  H5dont_atexit();
}

namespace {
// A new file at `path`, replacing what is there. H5F_ACC_TRUNC would open an existing name and
// truncate what it names, through a link that someone put at it too: the name is cleared and the
// file created exclusively (src/core/new_file.hpp)
Handle create_new(const std::string& path, hid_t fcpl, hid_t fapl) {
  if (!clear_for_new_file(path))
    throw UserError(path + ": cannot replace what is there (" + std::strerror(errno) + ")");
  return Handle(H5Fcreate(path.c_str(), H5F_ACC_EXCL, fcpl, fapl), H5Fclose, "create file " + path);
}
}  // namespace

Handle create_file(const std::string& path) {
  const Lock lock;
  Handle fcpl = compact_file_creation();
  return create_new(path, fcpl.id(), H5P_DEFAULT);
}
namespace {
Handle latest_format_access() {
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "H5Pcreate");
  ok(H5Pset_libver_bounds(fapl.id(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST), "H5Pset_libver_bounds");
  return fapl;
}
}  // namespace
Handle create_file_swmr_capable(const std::string& path) {
  const Lock lock;
  Handle fapl = latest_format_access();
  Handle fcpl = compact_file_creation();
  return create_new(path, fcpl.id(), fapl.id());
}
Handle open_file_rdwr(const std::string& path, bool swmr) {
  const Lock lock;
  Handle fapl = latest_format_access();
  // in SWMR mode the writer retries a metadata read whose checksum fails as a reader does (100
  // times with a growing back-off by default): a file whose metadata a full disk kept from being
  // written held the run in that loop for minutes, deaf to SIGINT. Its own file needs no retry
  // beyond a reader's few
  if (swmr) ok(H5Pset_metadata_read_attempts(fapl.id(), kSwmrReadAttempts), "H5Pset_metadata_read_attempts");
  const unsigned flags = H5F_ACC_RDWR | (swmr ? H5F_ACC_SWMR_WRITE : 0u);
  return Handle(H5Fopen(path.c_str(), flags, fapl.id()), H5Fclose, "open " + path + " for writing");
}
Handle open_file_readonly(const std::string& path) {
  const Lock lock;
  hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) {
    // a live or killed run file (.partial) is held in SWMR mode: open it as an SWMR reader.
    // An SWMR reader retries a metadata read whose checksum fails (100 times by default, with
    // a growing back-off: a truncated file hung the open for minutes); a few retries are
    // enough for a writer's flush in flight
    Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "H5Pcreate");
    ok(H5Pset_metadata_read_attempts(fapl.id(), kSwmrReadAttempts), "H5Pset_metadata_read_attempts");
    id = H5Fopen(path.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl.id());
  }
  if (id < 0) throw UserError(path + ": cannot open as HDF5 (missing file or not an HDF5 file)");
  return Handle(id, H5Fclose, "open " + path);
}
uint64_t stored_bytes(const std::string& path, const std::vector<std::string>& skip) {
  const Lock lock;
  Handle f = open_file_readonly(path);
  struct Walk {
    const std::vector<std::string>* skip;
    uint64_t bytes = 0;
  } walk{&skip, 0};
  ok(H5Ovisit2(
         f.id(), H5_INDEX_NAME, H5_ITER_NATIVE,
         [](hid_t root, const char* name, const H5O_info_t* info, void* out) -> herr_t {
           auto& w = *static_cast<Walk*>(out);
           const std::string n(name);
           for (const auto& s : *w.skip)
             if (n == s || n.rfind(s + "/", 0) == 0) return 0;
           w.bytes += info->hdr.space.total + info->meta_size.attr.heap_size + info->meta_size.attr.index_size;
           if (info->type == H5O_TYPE_DATASET) {
             const hid_t d = H5Dopen2(root, name, H5P_DEFAULT);
             if (d >= 0) {
               w.bytes += H5Dget_storage_size(d);
               H5Dclose(d);
             }
           }
           return 0;
         },
         &walk, H5O_INFO_HDR | H5O_INFO_META_SIZE),
     "list the objects of " + path);
  return walk.bytes;
}
// Run files up to this size are copied in memory and written to disk in one flush: HDF5 1.10's
// H5Ocopy crashes (SIGSEGV in H5O__dset_free_copy_file_udata) when a write fails in the middle
// of a copy — a disk that fills while a run finishes — whereas a failed flush is a clean error.
// Larger files are copied on disk, after the caller's free-space check.
constexpr std::uintmax_t kCopyInMemoryBytes = 512ull << 20;

void copy_compact(const std::string& from, const std::string& to, const std::vector<std::string>& skip) {
  const Lock lock;
  Handle src = open_file_readonly(from);
  std::error_code ec;
  const std::uintmax_t from_bytes = std::filesystem::file_size(from, ec);
  const bool in_memory = !ec && from_bytes <= kCopyInMemoryBytes;
  Handle dst = [&] {
    if (!in_memory) return create_file_swmr_capable(to);
    Handle fapl = latest_format_access();
    ok(H5Pset_fapl_core(fapl.id(), 1 << 20, 1), "H5Pset_fapl_core");  // 1 MiB steps, written to `to`
    Handle fcpl = compact_file_creation();
    return create_new(to, fcpl.id(), fapl.id());
  }();
  std::vector<std::string> names;
  auto collect = [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
    static_cast<std::vector<std::string>*>(out)->emplace_back(name);
    return 0;
  };
  ok(H5Literate(src.id(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &names), "list " + from);
  for (const auto& n : names)
    if (std::find(skip.begin(), skip.end(), n) == skip.end())
      ok(H5Ocopy(src.id(), n.c_str(), dst.id(), n.c_str(), H5P_DEFAULT, H5P_DEFAULT), "copy " + n + " of " + from);
  // the root's attributes, value for value in their stored types (all fixed-size here)
  std::vector<std::string> attrs;
  auto collect_attr = [](hid_t, const char* name, const H5A_info_t*, void* out) -> herr_t {
    static_cast<std::vector<std::string>*>(out)->emplace_back(name);
    return 0;
  };
  ok(H5Aiterate2(src.id(), H5_INDEX_NAME, H5_ITER_NATIVE, nullptr, collect_attr, &attrs), "attributes of " + from);
  for (const auto& name : attrs) {
    Handle a(H5Aopen(src.id(), name.c_str(), H5P_DEFAULT), H5Aclose, "open attribute " + name + " of " + from);
    Handle type(H5Aget_type(a.id()), H5Tclose, "type of attribute " + name);
    Handle space(H5Aget_space(a.id()), H5Sclose, "space of attribute " + name);
    if (H5Tis_variable_str(type.id()) > 0) throw InternalError("copy_compact: variable-length attribute " + name);
    std::vector<unsigned char> value(H5Aget_storage_size(a.id()));
    if (!value.empty()) ok(H5Aread(a.id(), type.id(), value.data()), "read attribute " + name);
    Handle b(H5Acreate2(dst.id(), name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
             "create attribute " + name);
    if (!value.empty()) ok(H5Awrite(b.id(), type.id(), value.data()), "write attribute " + name);
  }
  // the whole copy reaches the disk here (in memory: in one write), its failure an error of ours
  ok(H5Fflush(dst.id(), H5F_SCOPE_GLOBAL), "write " + to);
}

bool unlink(hid_t parent, const std::string& name) {
  const Lock lock;
  if (H5Lexists(parent, name.c_str(), H5P_DEFAULT) <= 0) return false;
  ok(H5Ldelete(parent, name.c_str(), H5P_DEFAULT), "delete " + name);
  return true;
}
Handle create_group(hid_t parent, const std::string& name) {
  const Lock lock;
  Handle gcpl(H5Pcreate(H5P_GROUP_CREATE), H5Pclose, "H5Pcreate");
  set_compact(gcpl.id());
  return Handle(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, gcpl.id(), H5P_DEFAULT), H5Gclose, "create group " + name);
}
Handle open_group(hid_t parent, const std::string& name) {
  const Lock lock;
  return Handle(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), H5Gclose, "open group " + name);
}
bool exists(hid_t parent, const std::string& path) {
  const Lock lock;
  // check each component so that a missing intermediate group is not an error
  size_t pos = 0;
  while (true) {
    pos = path.find('/', pos + 1);
    const std::string prefix = path.substr(0, pos);
    if (H5Lexists(parent, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (pos == std::string::npos) return true;
  }
}

void write_attr(hid_t obj, const std::string& name, const std::string& value) {
  const Lock lock;
  Handle type = str_type(value.size());
  Handle space = scalar_space();
  Handle a = open_attr_for_write(obj, name, type.id(), space.id());
  ok(H5Awrite(a.id(), type.id(), value.c_str()), "write attribute " + name);
}
void write_attr(hid_t obj, const std::string& name, double value) {
  const Lock lock;
  Handle space = scalar_space();
  Handle a = open_attr_for_write(obj, name, H5T_NATIVE_DOUBLE, space.id());
  ok(H5Awrite(a.id(), H5T_NATIVE_DOUBLE, &value), "write attribute " + name);
}
void write_attr(hid_t obj, const std::string& name, int64_t value) {
  const Lock lock;
  Handle space = scalar_space();
  Handle a = open_attr_for_write(obj, name, H5T_NATIVE_INT64, space.id());
  ok(H5Awrite(a.id(), H5T_NATIVE_INT64, &value), "write attribute " + name);
}
void write_attr(hid_t obj, const std::string& name, const std::vector<double>& value) {
  const Lock lock;
  Handle space = simple_space({value.size()});
  Handle a = open_attr_for_write(obj, name, H5T_NATIVE_DOUBLE, space.id());
  ok(H5Awrite(a.id(), H5T_NATIVE_DOUBLE, value.data()), "write attribute " + name);
}
void write_attr(hid_t obj, const std::string& name, const std::vector<int64_t>& value) {
  const Lock lock;
  Handle space = simple_space({value.size()});
  Handle a = open_attr_for_write(obj, name, H5T_NATIVE_INT64, space.id());
  ok(H5Awrite(a.id(), H5T_NATIVE_INT64, value.data()), "write attribute " + name);
}
bool attr_exists(hid_t obj, const std::string& name) {
  const Lock lock;
  return H5Aexists(obj, name.c_str()) > 0;
}
void delete_attr(hid_t obj, const std::string& name) {
  const Lock lock;
  if (H5Aexists(obj, name.c_str()) > 0) ok(H5Adelete(obj, name.c_str()), "delete attribute " + name);
}
std::string read_attr_string(hid_t obj, const std::string& name) {
  const Lock lock;
  Handle a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose, "open attribute " + name);
  Handle ftype(H5Aget_type(a.id()), H5Tclose, "H5Aget_type");
  if (H5Tis_variable_str(ftype.id()) > 0) {
    char* buf = nullptr;
    Handle mtype(H5Tget_native_type(ftype.id(), H5T_DIR_ASCEND), H5Tclose, "native type");
    ok(H5Aread(a.id(), mtype.id(), &buf), "read attribute " + name);
    std::string s = buf ? buf : "";
    H5free_memory(buf);
    return s;
  }
  // a fixed-length string of n bytes stores n bytes (a damaged type says gigabytes)
  const size_t n = H5Tget_size(ftype.id());
  if (n > H5Aget_storage_size(a.id()))
    throw UserError("HDF5 attribute " + name + " is damaged (its string type is longer than what it stores)");
  std::string s(n, '\0');
  ok(H5Aread(a.id(), ftype.id(), s.data()), "read attribute " + name);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}
double read_attr_double(hid_t obj, const std::string& name) {
  const Lock lock;
  Handle a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose, "open attribute " + name);
  double v = 0;
  ok(H5Aread(a.id(), H5T_NATIVE_DOUBLE, &v), "read attribute " + name);
  return v;
}
int64_t read_attr_int(hid_t obj, const std::string& name) {
  const Lock lock;
  Handle a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose, "open attribute " + name);
  int64_t v = 0;
  ok(H5Aread(a.id(), H5T_NATIVE_INT64, &v), "read attribute " + name);
  return v;
}

std::vector<int64_t> read_attr_ints(hid_t obj, const std::string& name) {
  const Lock lock;
  Handle a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose, "open attribute " + name);
  Handle space(H5Aget_space(a.id()), H5Sclose, "attribute space " + name);
  const hssize_t n = H5Sget_simple_extent_npoints(space.id());
  // a damaged file may claim any extent: an attribute's integers are a header's few
  if (n < 0 || n > (int64_t{1} << 20)) throw UserError("HDF5: attribute " + name + " has an unreadable extent");
  std::vector<int64_t> v(static_cast<size_t>(n));
  if (n > 0) ok(H5Aread(a.id(), H5T_NATIVE_INT64, v.data()), "read attribute " + name);
  return v;
}

void write_vector(hid_t p, const std::string& n, const std::vector<double>& v) {
  const Lock lock;
  write_dataset(p, n, H5T_NATIVE_DOUBLE, v.data(), {v.size()});
}
void write_vector(hid_t p, const std::string& n, const std::vector<int64_t>& v) {
  const Lock lock;
  write_dataset(p, n, H5T_NATIVE_INT64, v.data(), {v.size()});
}
void write_matrix(hid_t p, const std::string& n, const double* d, hsize_t r, hsize_t c) {
  const Lock lock;
  write_dataset(p, n, H5T_NATIVE_DOUBLE, d, {r, c});
}
void write_matrix(hid_t p, const std::string& n, const int64_t* d, hsize_t r, hsize_t c) {
  const Lock lock;
  write_dataset(p, n, H5T_NATIVE_INT64, d, {r, c});
}
void write_strings(hid_t p, const std::string& name, const std::vector<std::string>& v) {
  const Lock lock;
  size_t len = 1;
  for (const auto& s : v) len = std::max(len, s.size());
  std::vector<char> buf(len * v.size(), '\0');
  for (size_t i = 0; i < v.size(); ++i) std::copy(v[i].begin(), v[i].end(), buf.begin() + i * len);
  Handle type = str_type(len);
  write_dataset(p, name, type.id(), buf.data(), {v.size()});
}

std::vector<double> read_vector_double(hid_t p, const std::string& n) {
  const Lock lock;
  std::vector<hsize_t> dims;
  return read_all<double>(p, n, H5T_NATIVE_DOUBLE, dims);
}
std::vector<int64_t> read_vector_int(hid_t p, const std::string& n) {
  const Lock lock;
  std::vector<hsize_t> dims;
  return read_all<int64_t>(p, n, H5T_NATIVE_INT64, dims);
}
std::vector<int64_t> read_matrix_int(hid_t p, const std::string& n, hsize_t& rows, hsize_t& cols) {
  const Lock lock;
  std::vector<hsize_t> dims;
  auto v = read_all<int64_t>(p, n, H5T_NATIVE_INT64, dims);
  if (dims.size() != 2) throw UserError("HDF5 dataset " + n + " is not 2-D");
  rows = dims[0], cols = dims[1];
  return v;
}
std::vector<double> read_matrix_double(hid_t p, const std::string& n, hsize_t& rows, hsize_t& cols) {
  const Lock lock;
  std::vector<hsize_t> dims;
  auto v = read_all<double>(p, n, H5T_NATIVE_DOUBLE, dims);
  if (dims.size() != 2) throw UserError("HDF5 dataset " + n + " is not 2-D");
  rows = dims[0], cols = dims[1];
  return v;
}

H5T_class_t dataset_class(hid_t p, const std::string& n) {
  const Lock lock;
  Handle dset = open_dataset(p, n);
  Handle type(H5Dget_type(dset.id()), H5Tclose, "H5Dget_type");
  return H5Tget_class(type.id());
}

std::vector<double> read_array_double(hid_t p, const std::string& n, std::vector<hsize_t>& dims) {
  const Lock lock;
  {
    Handle dset = open_dataset(p, n);
    Handle type(H5Dget_type(dset.id()), H5Tclose, "H5Dget_type");
    const H5T_class_t c = H5Tget_class(type.id());
    if (c != H5T_FLOAT && c != H5T_INTEGER) throw UserError("HDF5 dataset " + n + " is not numeric");
  }
  return read_all<double>(p, n, H5T_NATIVE_DOUBLE, dims);
}

Appendable::Appendable(hid_t parent, const std::string& name, hid_t mem_type, hsize_t cols, hsize_t chunk_rows,
                       hid_t file_type, bool compress)
    : type_(mem_type), cols_(cols) {
  const Lock lock;
  std::vector<hsize_t> dims = {0}, maxdims = {H5S_UNLIMITED}, chunk = {std::max<hsize_t>(chunk_rows, 1)};
  if (cols > 0) dims.push_back(cols), maxdims.push_back(cols), chunk.push_back(cols);
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), maxdims.data()), H5Sclose, "space");
  Handle plist(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "H5Pcreate");
  ok(H5Pset_chunk(plist.id(), static_cast<int>(chunk.size()), chunk.data()), "H5Pset_chunk");
  if (compress) set_compression(plist.id(), file_type >= 0 ? file_type : mem_type);
  dset_ = Handle(H5Dcreate2(parent, name.c_str(), file_type >= 0 ? file_type : mem_type, space.id(), H5P_DEFAULT, plist.id(), H5P_DEFAULT), H5Dclose,
                 "create dataset " + name);
}

Handle write_rows(hid_t parent, const std::string& name, hid_t mem_type, hsize_t cols, const void* data, hsize_t rows,
                  hsize_t chunk_rows, hid_t file_type, bool compress) {
  std::vector<hsize_t> dims = {rows};
  if (cols > 0) dims.push_back(cols);
  return write_whole(parent, name, mem_type, file_type >= 0 ? file_type : mem_type, dims, chunk_rows, compress, data);
}

Appendable Appendable::open(hid_t parent, const std::string& name, hid_t mem_type, hsize_t cols) {
  const Lock lock;
  Appendable a;
  a.dset_ = open_dataset(parent, name);
  a.type_ = mem_type;
  a.cols_ = cols;
  a.rows_ = dataset_rows(a.dset_.id());
  return a;
}

hsize_t dataset_rows(hid_t dset) {
  const Lock lock;
  const auto dims = dataset_dims(dset);
  return dims.empty() ? 0 : dims[0];
}

Handle create_bytes(hid_t parent, const std::string& name, hsize_t chunk) {
  const Lock lock;
  hsize_t dims = 0, maxdims = H5S_UNLIMITED;
  Handle space(H5Screate_simple(1, &dims, &maxdims), H5Sclose, "space");
  Handle plist(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "H5Pcreate");
  ok(H5Pset_chunk(plist.id(), 1, &chunk), "H5Pset_chunk");
  return Handle(H5Dcreate2(parent, name.c_str(), H5T_NATIVE_UINT8, space.id(), H5P_DEFAULT, plist.id(), H5P_DEFAULT),
                H5Dclose, "create dataset " + name);
}

void reserve_bytes(hid_t dset, hsize_t n) {
  const Lock lock;
  if (dataset_rows(dset) < n) ok(H5Dset_extent(dset, &n), "extend dataset");
}

void write_bytes_at(hid_t dset, hsize_t offset, const uint8_t* data, size_t k) {
  const Lock lock;
  hsize_t n = k;
  if (n == 0) return;
  Handle fspace(H5Dget_space(dset), H5Sclose, "space");
  ok(H5Sselect_hyperslab(fspace.id(), H5S_SELECT_SET, &offset, nullptr, &n, nullptr), "select");
  Handle mspace(H5Screate_simple(1, &n, nullptr), H5Sclose, "mspace");
  ok(H5Dwrite(dset, H5T_NATIVE_UINT8, mspace.id(), fspace.id(), H5P_DEFAULT, data), "write bytes");
}

std::vector<uint8_t> read_bytes(hid_t dset, hsize_t n) {
  const Lock lock;
  // a slot is stored unfiltered, every byte written: asked for more than it stores (a damaged
  // length, an extent of 2^40 bytes) is an error, not an allocation
  if (n > H5Dget_storage_size(dset))
    throw UserError("HDF5: " + std::to_string(n) + " bytes asked of a dataset that stores " +
                    std::to_string(H5Dget_storage_size(dset)));
  check_memory(static_cast<double>(n), "HDF5: a byte dataset of " + std::to_string(n) + " bytes",
               "the file is damaged");
  std::vector<uint8_t> out(n);
  if (n > 0) read_rows(dset, H5T_NATIVE_UINT8, 0, n, 0, out.data());
  return out;
}

void overwrite_ints(hid_t dset, const std::vector<int64_t>& v) {
  const Lock lock;
  ok(H5Dwrite(dset, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), "overwrite dataset");
}

void read_rows(hid_t dset, hid_t mem_type, hsize_t start, hsize_t count, hsize_t cols, void* out) {
  const Lock lock;
  if (count == 0) return;
  std::vector<hsize_t> st = {start}, cn = {count};
  if (cols > 0) st.push_back(0), cn.push_back(cols);
  Handle fspace(H5Dget_space(dset), H5Sclose, "space");
  ok(H5Sselect_hyperslab(fspace.id(), H5S_SELECT_SET, st.data(), nullptr, cn.data(), nullptr), "select rows");
  Handle mspace(H5Screate_simple(static_cast<int>(cn.size()), cn.data(), nullptr), H5Sclose, "mspace");
  ok(H5Dread(dset, mem_type, mspace.id(), fspace.id(), H5P_DEFAULT, out), "read rows");
}

void Appendable::append(const void* data, hsize_t rows) {
  const Lock lock;
  if (rows == 0) return;
  std::vector<hsize_t> newdims = {rows_ + rows}, start = {rows_}, count = {rows};
  if (cols_ > 0) newdims.push_back(cols_), start.push_back(0), count.push_back(cols_);
  ok(H5Dset_extent(dset_.id(), newdims.data()), "extend dataset");
  Handle fspace(H5Dget_space(dset_.id()), H5Sclose, "space");
  ok(H5Sselect_hyperslab(fspace.id(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr), "select");
  Handle mspace(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose, "mspace");
  ok(H5Dwrite(dset_.id(), type_, mspace.id(), fspace.id(), H5P_DEFAULT, data), "append");
  rows_ += rows;
}

}  // namespace stale::h5

namespace stale::h5 {
void flush_file(hid_t file) {
  const Lock lock;
  ok(H5Fflush(file, H5F_SCOPE_GLOBAL), "H5Fflush");
}
}  // namespace stale::h5
