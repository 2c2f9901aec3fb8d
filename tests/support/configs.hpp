#pragma once
// The small run configs the suites start from, written once: a random least-squares (or
// other) problem small enough that a run takes milliseconds, with progress lines off.
#include <string>

namespace stale::test {

struct SmallRun {
  // every member has a default, so that a designated initializer may leave any out
  std::string header = "";  // top-level keys (seed, backend), before the first table
  std::string objective = "quadratic", generator = "random";
  int dim = 0, samples = 0, batch_size = 0, stages = 0;
  std::string method = "rpd", lr = "0.01";
  int updates = 0;
  std::string tables = "";  // further tables ([delay] …), before [log]
  int log_every = 0;   // 0: the default
};

// the TOML text of `r`
inline std::string small_run_toml(const SmallRun& r) {
  auto line = [](const char* key, const std::string& v) { return std::string(key) + " = " + v + "\n"; };
  auto quoted = [](const std::string& v) { return "\"" + v + "\""; };
  std::string t = r.header + "[objective]\n" + line("name", quoted(r.objective)) +
                  line("generator", quoted(r.generator)) + line("dim", std::to_string(r.dim)) +
                  line("samples", std::to_string(r.samples)) + line("batch_size", std::to_string(r.batch_size)) +
                  line("stages", std::to_string(r.stages)) + "[method]\n" + line("name", quoted(r.method)) +
                  line("lr", r.lr) + line("updates", std::to_string(r.updates)) + r.tables + "[log]\n";
  if (r.log_every > 0) t += line("every", std::to_string(r.log_every));
  return t + "progress = false\n";
}

}  // namespace stale::test
