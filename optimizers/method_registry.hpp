#pragma once
// The method registry (src/core/registry.hpp): every method registers itself from its own
// file with its traits and factory. method.name's choices, `stale list`, the README's table and
// the unread-key rule (src/run/config_rules.cpp) all read it.
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
  // stability predictor's recursion (src/run/stability_pattern.cpp) reads it
  bool steps_all_blocks = false;
};

using MethodRegistry = Registry<MethodEntry>;

// The entry of method.name (UserError listing the valid names).
const MethodEntry& method_entry(const std::string& name);

// A ScheduleDriven entry's factory: the executor over `schedule`, with or without stashing
// (the schedule's own setting when stash = true) and PipeMare's prediction.
std::function<std::unique_ptr<Method>(const Config&, const MethodParams&, const Objective&)> schedule_method_factory(
    const std::string& name, const std::string& schedule, bool stash, bool predict);

std::string method_kind_name(MethodKind k);

}  // namespace stale
