#pragma once
// Helpers shared by the doctest suites: temporary directories, small configs, the CLI.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "objectives/objective.hpp"
#include "src/config/config.hpp"
#include "src/core/rng.hpp"
#include "tests/support/configs.hpp"

namespace stale::test {

// unique per process and call: parallel ctest processes and repeated calls never share one
inline std::filesystem::path temp_dir(const std::string& name) {
  static int counter = 0;
  auto p = std::filesystem::temp_directory_path() /
           ("stale-test-" + name + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

inline void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

// a small random least-squares RPD config
inline Config small_config(const std::string& extra = "") {
  return Config::from_string(small_run_toml({.header = "seed = 3\nbackend = \"cpu\"\n", .dim = 37, .samples = 60,
                                             .batch_size = 6, .stages = 5, .lr = "0.005", .updates = 400}) + extra,
                             "small.toml");
}

inline std::string stale_bin() {
  if (const char* b = std::getenv("STALE_BIN")) return b;
  return std::string(STALE_BINARY_DIR) + "/stale";
}

// run a shell command, capture stderr+stdout into `output`, return the exit code
inline int run_command(const std::string& cmd, std::string& output) {
  const auto log = temp_dir("cmd") / "out.txt";
  const int rc = std::system((cmd + " > " + log.string() + " 2>&1").c_str());
  std::ifstream in(log);
  output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// the stage-wise pipeline at w for batch m: forward through every stage, the loss head,
// backward; returns the head's loss and the weight gradient in g (the last activation in
// *last when asked)
inline double pipeline_value_grad(const Objective& f, int m, const Vec& w, Vec& g, Mat* last = nullptr) {
  const auto& P = f.blocks();
  std::vector<Mat> acts(P.stages() + 1);
  std::vector<std::unique_ptr<StageCache>> caches(P.stages());
  acts[0] = f.input_activation(m);
  for (int s = 0; s < P.stages(); ++s) f.stage_forward(s, m, acts[s], P.block(w, s), acts[s + 1], caches[s]);
  if (last) *last = acts.back();
  Mat grad;
  const double loss = f.loss_forward_backward(m, acts.back(), grad);
  g.resize(w.size());
  for (int s = P.stages() - 1; s >= 0; --s) {
    Mat grad_in;
    Vec gs(P.size(s));
    f.stage_backward(s, m, grad, P.block(w, s), caches[s].get(), gs, grad_in);
    P.block(g, s) = gs;
    grad = grad_in;
  }
  return loss;
}

}  // namespace stale::test
