#pragma once
// The method registry (src/core/registry.hpp): every method registers itself from its own
// file with its traits and factory. method.name's choices, `stale list`, the README's table and
// the unread-key rule (src/checks/config_rules.cpp) all read it.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "optimizers/method.hpp"
#include "src/core/registry.hpp"

namespace stale {

enum class MethodKind {
  Fresh,           // reads the current iterate (sgd, bcd)
  DelayDriven,     // reads what a delay model says (rpd)
  ScheduleDriven,  // executes a pipeline schedule's ops (pipedream, paci, gpipe, …)
};

struct MethodEntry {
  std::string name;
  std::string summary;  // one line: the rule and the paper
  int rank = 0;         // listing order
  MethodKind kind = MethodKind::Fresh;
  std::string schedule;  // ScheduleDriven: the schedule it executes
  bool stash = false;    // B reads the block version its F read
  bool predict = false;  // PipeMare's weight prediction
  // method.* keys it reads beyond those every method reads (a schedule-driven method also
  // reads the keys its schedule's traits call for: accumulation, replicas, chunks, …)
  std::vector<std::string> keys;
  std::function<std::unique_ptr<Method>(const Config&, const MethodParams&, const Objective&)> make;
  // Fresh: one update steps every block at once (sgd), not one drawn block (bcd); the
  // stability predictor's recursion (src/theory/stability_pattern.cpp) reads it
  bool steps_all_blocks = false;
};

using MethodRegistry = Registry<MethodEntry>;
struct ExecutorOptions;  // optimizers/schedule_executor.hpp

// The entry of method.name (UserError listing the valid names).
const MethodEntry& method_entry(const std::string& name);

// What a ScheduleDriven entry's executor runs with: the plan's and the method's parameters
// over `schedule`, stashing (the schedule's own setting when stash = true), and PipeMare's
// prediction where the entry predicts and method.prediction leaves it on. Its factory and the
// stability predictor both ask this.
ExecutorOptions schedule_executor_options(const Config& cfg, const std::string& schedule, bool stash, bool predict,
                                          const MethodParams& p);

// A ScheduleDriven entry's factory: the executor of schedule_executor_options.
std::function<std::unique_ptr<Method>(const Config&, const MethodParams&, const Objective&)> schedule_method_factory(
    const std::string& name, const std::string& schedule, bool stash, bool predict);

std::string method_kind_name(MethodKind k);

}  // namespace stale
