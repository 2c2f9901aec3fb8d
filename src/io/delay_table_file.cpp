#include "src/io/delay_table_file.hpp"

#include "src/core/error.hpp"
#include "src/io/h5.hpp"

namespace stale {

std::vector<int64_t> read_delay_table_h5(const std::string& path, int64_t& rows, int& cols) {
  const std::string where = "config: delay.path = \"" + path + "\": ";
  // the HDF5 layer's own errors name a dataset, not the file or the key: said with both here
  auto named = [&](const UserError& e) {
    const std::string what = e.what();
    return what.rfind("config: delay.path", 0) == 0 ? UserError(what) : UserError(where + what);
  };
  try {
    auto file = h5::open_file_readonly(path);
    if (!h5::exists(file.id(), "delays"))
      throw UserError(where + "has no /delays dataset (write it with `stale run` or `stale schedule --out`)");
    if (h5::dataset_class(file.id(), "delays") != H5T_INTEGER)
      throw UserError(where +
                      "/delays holds non-integer values (floats would be truncated to integers); valid: an integer "
                      "dataset of delays 0..k, e.g. written from NumPy with .astype(np.int64)");
    hsize_t r = 0, c = 0;
    auto t = h5::read_matrix_int(file.id(), "delays", r, c);
    rows = static_cast<int64_t>(r);
    cols = static_cast<int>(c);
    return t;
  } catch (const DiskFull&) {
    throw;
  } catch (const UserError& e) {
    throw named(e);
  }
}

}  // namespace stale
