#pragma once
// `stale run`'s progress on stderr: one line per recorded row, rewritten in place on a
// terminal (at most every 0.2 s) and printed as lines elsewhere (at most every 2 s); row 0 and
// the last row always. What it prints comes from the rows alone (MetricsObserver's progress
// callback), so it changes nothing the run records.
#include <chrono>
#include <cstdint>
#include <string>

#include "src/io/metrics_schema.hpp"

namespace stale {

class ProgressLine {
 public:
  // tag: the method's name; updates: K; enabled false: prints nothing
  ProgressLine(bool enabled, std::string tag, int64_t updates);
  void print(const MetricsRow& r);
  // ends the line a terminal rewrote
  void end();

 private:
  bool enabled_, tty_;
  std::string tag_;
  int64_t updates_;
  std::chrono::steady_clock::time_point last_print_;
};

}  // namespace stale
