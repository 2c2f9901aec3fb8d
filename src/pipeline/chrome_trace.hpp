#pragma once
// A simulated timeline as a Chrome trace (the JSON "Trace Event Format"), which Perfetto and
// chrome://tracing load: one complete event (ph "X") per op, pid 0, tid = device, named F3 /
// B3 / W3 for micro-batch 3, with the block, chunk and step flags in args.
#include <ostream>
#include <string>

#include "src/pipeline/schedule.hpp"
#include "src/pipeline/simulator.hpp"

namespace stale {

// One time unit becomes `us_per_unit` microseconds (the default shows a unit slot as 1 ms).
void write_chrome_trace(std::ostream& out, const Schedule& s, const SimResult& r, double us_per_unit = 1000.0);
// Written to PATH.partial, then renamed, so a reader never sees half a file.
void write_chrome_trace(const std::string& path, const Schedule& s, const SimResult& r, double us_per_unit = 1000.0);

}  // namespace stale
