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

// a tiny GPT on Tiny Shakespeare (the checkout's data folder): 3 stages (embedding, one block,
// head), E = 8, PipeDream, a row every 10 updates with the sampled running mean
inline std::string tiny_charlm_toml(int updates) {
  return "seed = 1\nbackend = \"cpu\"\n[objective]\nname = \"charlm\"\nembedding = 8\nheads = 2\ncontext = 8\n"
         "batch_size = 2\nstages = 3\nsamples = 40\n[method]\nname = \"pipedream\"\nlr = 0.1\nupdates = " +
         std::to_string(updates) + "\n[log]\nevery = 10\nexact_mean = false\nprogress = false\n";
}

// the [objective] table of the small GPT the CUDA suites compare with the cpu twin: E = 32,
// 4 heads, T = 16, batch 4, 64 training windows of Tiny Shakespeare, in `stages` stages
inline std::string small_charlm_objective_toml(int stages) {
  return "[objective]\nname = \"charlm\"\nembedding = 32\nheads = 4\ncontext = 16\nbatch_size = 4\nstages = " +
         std::to_string(stages) + "\nsamples = 64\n";
}

}  // namespace stale::test
