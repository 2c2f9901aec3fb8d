// Inside an h5::ReuseFilteredChunks scope, a filtered table that the process writes again
// with the same values is copied from the chunks of the first write (src/io/h5.cpp): the copy
// reads back as the values, is stored in the same bytes, and anything that would change the
// stored chunks (one value, the stored type, the chunk shape) is filtered afresh. Outside a
// scope nothing is kept.
#include <doctest/doctest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "src/io/h5.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("io");

using namespace stale;

namespace {
// the raw (filtered) bytes of every chunk of a dataset, in chunk order
std::vector<std::vector<unsigned char>> stored_chunks(hid_t file, const char* name) {
  auto d = h5::open_dataset(file, name);
  const hid_t space = H5Dget_space(d.id());
  hsize_t n = 0;
  REQUIRE(H5Dget_num_chunks(d.id(), space, &n) >= 0);
  std::vector<std::vector<unsigned char>> out;
  for (hsize_t i = 0; i < n; ++i) {
    hsize_t offset[2] = {0, 0}, size = 0;
    unsigned mask = 0;
    haddr_t addr = 0;
    REQUIRE(H5Dget_chunk_info(d.id(), space, i, offset, &mask, &addr, &size) >= 0);
    std::vector<unsigned char> bytes(size);
    uint32_t filters = 0;
    REQUIRE(H5Dread_chunk(d.id(), H5P_DEFAULT, offset, &filters, bytes.data()) >= 0);
    out.push_back(std::move(bytes));
  }
  H5Sclose(space);
  return out;
}
}  // namespace

TEST_CASE("ATableWrittenAgainIsCopiedFromTheFirstWritesChunksAndReadsBackTheSame") {
  const auto dir = test::temp_dir("chunk_reuse");
  // 3 chunks of 4096 rows × 2 (the last one partial), slowly varying like an op table
  const hsize_t rows = 10000, cols = 2, chunk_rows = 4096;
  std::vector<int64_t> table(rows * cols);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int64_t>(i / 7 % 300);
  std::vector<double> times(12345);
  std::iota(times.begin(), times.end(), 0.25);
  std::vector<int64_t> changed = table;
  changed[rows * cols - 1] += 1;  // one value in the last chunk

  auto write_all = [&](const std::string& path, const std::vector<int64_t>& t) {
    auto f = h5::create_file_swmr_capable(path);
    h5::write_rows(f.id(), "table", H5T_NATIVE_INT64, cols, t.data(), rows, chunk_rows, H5T_STD_I32LE);
    h5::write_rows(f.id(), "table64", H5T_NATIVE_INT64, cols, t.data(), rows, chunk_rows);  // another stored type
    h5::write_rows(f.id(), "table_rechunked", H5T_NATIVE_INT64, cols, t.data(), rows, 1000, H5T_STD_I32LE);
    h5::write_vector(f.id(), "times", times);  // shuffle + deflate
  };
  // outside a scope nothing is kept
  write_all((dir / "outside.h5").string(), table);
  const h5::ReuseFilteredChunks reuse;
  const size_t before = h5::reused_filtered_writes();
  write_all((dir / "a.h5").string(), table);
  CHECK(h5::reused_filtered_writes() - before == 0);  // outside.h5's tables were not kept
  write_all((dir / "b.h5").string(), changed);
  CHECK(h5::reused_filtered_writes() - before == 1);  // only "times" is the same
  write_all((dir / "c.h5").string(), table);
  CHECK(h5::reused_filtered_writes() - before == 5);  // all four, as in a.h5

  auto a = h5::open_file_readonly((dir / "a.h5").string());
  auto b = h5::open_file_readonly((dir / "b.h5").string());
  auto c = h5::open_file_readonly((dir / "c.h5").string());
  for (const char* name : {"table", "table64", "table_rechunked"}) {
    CAPTURE(name);
    hsize_t r = 0, k = 0;
    CHECK(h5::read_matrix_int(c.id(), name, r, k) == table);
    CHECK(h5::read_matrix_int(b.id(), name, r, k) == changed);
    CHECK(stored_chunks(c.id(), name) == stored_chunks(a.id(), name));
    CHECK(stored_chunks(b.id(), name) != stored_chunks(a.id(), name));
  }
  CHECK(stored_chunks(a.id(), "table_rechunked").size() == 10);
  CHECK(h5::read_vector_double(c.id(), "times") == times);
  CHECK(stored_chunks(c.id(), "times") == stored_chunks(a.id(), "times"));
}

TEST_SUITE_END();
