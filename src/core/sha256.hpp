#pragma once
// SHA-256 of a file (FIPS 180-4), for the run file's record of the data it read: a result can
// then be tied to the exact bytes of a data set.
#include <cstdint>
#include <string>

namespace stale {

// lowercase hex digest of the file's bytes; UserError naming the file when it cannot be read
std::string sha256_file(const std::string& path, uint64_t* bytes = nullptr);
// digest of a string (tests: the FIPS 180-4 examples)
std::string sha256_text(const std::string& text);

}  // namespace stale
