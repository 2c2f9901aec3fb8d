#pragma once
// How much memory a run may take, and a check that names what would take too much.
// The limit is the smaller of the machine's MemAvailable (/proc/meminfo: what can be
// allocated without swapping) and $STALE_MEMORY_LIMIT (bytes, or with a K/M/G/T suffix,
// e.g. "8G"), so that a shared node or a Slurm job can cap a run below what the machine has.
// Checks run before the allocation they guard, so an absurd size (objective.dim = 1e12, a
// LIBSVM feature index of 1e9) is a one-line UserError instead of std::bad_alloc.
#include <cstdint>
#include <optional>
#include <string>

namespace stale {

// MemAvailable in bytes; nullopt where /proc/meminfo is missing or unreadable
std::optional<double> available_memory_bytes();
// $STALE_MEMORY_LIMIT in bytes; nullopt when unset. Throws UserError when it is not a size.
std::optional<double> memory_limit_from_env();
// the smaller of the two, or +inf when neither is known
double memory_budget_bytes();
// "where the budget comes from", for messages: "MemAvailable 21.3 GiB" / "STALE_MEMORY_LIMIT = 8G"
std::string memory_budget_source();
// 1.5 GiB, 320 MiB, 12 KiB, 17 B
std::string format_bytes(double bytes);
// a count in a message: "600", "1000000000000" (integers below 10^15), else "2.5e+17"
std::string format_count(double x);
// parses "4096", "512M", "8G", "1.5T" (binary units); nullopt when malformed
std::optional<double> parse_bytes(const std::string& text);

// One large allocation (or file) a config will cause, named by the keys that drive its size:
// the unit of the resource estimate (src/checks/resource_estimate.hpp), which each component's
// registry entry contributes to.
struct ResourceItem {
  std::string what;  // "data X (n × d)"
  std::string keys;  // "objective.samples × objective.dim = 600 × 1000000000000"
  double bytes = 0;
};

// Throws a one-line UserError "<what> needs <bytes> of memory but <budget> ...; <advice>"
// when bytes exceeds the budget. `what` names the input that drives the size.
void check_memory(double bytes, const std::string& what, const std::string& advice);

}  // namespace stale
