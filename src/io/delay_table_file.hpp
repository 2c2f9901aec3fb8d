#pragma once
// Reading a delay table from a run or schedule file (/delays, K × S integers): the HDF5 side
// of the table delay model, so that delays/ never sees an HDF5 type.
#include <cstdint>
#include <string>
#include <vector>

namespace stale {

// /delays of an HDF5 file as a row-major table; UserError naming the file when it has none
std::vector<int64_t> read_delay_table_h5(const std::string& path, int64_t& rows, int& cols);

}  // namespace stale
