#include "src/io/delay_table_file.hpp"

#include "src/core/error.hpp"
#include "src/io/h5.hpp"

namespace stale {

std::vector<int64_t> read_delay_table_h5(const std::string& path, int64_t& rows, int& cols) {
  auto file = h5::open_file_readonly(path);
  if (!h5::exists(file.id(), "delays"))
    throw UserError("config: delay.path = \"" + path +
                    "\": has no /delays dataset (write it with `stale run` or `stale schedule --out`)");
  if (h5::dataset_class(file.id(), "delays") != H5T_INTEGER)
    throw UserError("config: delay.path = \"" + path +
                    "\": /delays holds non-integer values (floats would be truncated to integers); valid: an integer "
                    "dataset of delays 0..k, e.g. written from NumPy with .astype(np.int64)");
  hsize_t r = 0, c = 0;
  auto t = h5::read_matrix_int(file.id(), "delays", r, c);
  rows = static_cast<int64_t>(r);
  cols = static_cast<int>(c);
  return t;
}

}  // namespace stale
