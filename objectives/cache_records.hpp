#pragma once
// The on-disk cache's mechanics, shared by every kind of record (linear_constants_cache.hpp:
// constants and Gram matrices; normal_draw_cache.hpp: long runs of Gaussian draws): where the
// records live, the content hash that keys and checks them, and the atomic write.
//
// A record is derived data: deleting the folder at any time only costs the next run its
// set-up time. A record that cannot be written is silently skipped for the same reason.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <ostream>
#include <functional>

namespace stale {

// $STALE_CACHE_DIR, else $XDG_CACHE_HOME/stale, else ~/.cache/stale, else a temp folder
std::filesystem::path cache_dir();
// the record of `kind` (e.g. "constants", "gram") under `key`
std::filesystem::path cache_record_path(const char* kind, uint64_t key);

// A 64-bit content hash, chained from `h`. Four interleaved lanes, so the multiply chains
// run side by side (measured here: 4.7 GB/s against 1.7 GB/s for one lane).
uint64_t hash_bytes(const void* p, size_t n, uint64_t h);

// Writes through `write` to a unique temporary name and renames it into place, so concurrent
// runs never read half a record.
void store_record(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write);

}  // namespace stale
