#pragma once
// The objective registry (src/core/registry.hpp): each objective family registers itself with
// its data generators, the objective.* keys each reads, and its factory. objective.name's and
// objective.generator's choices, `stale list`, the README's table and the unread-key rule
// read it.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "objectives/objective.hpp"
#include "src/backend/backend.hpp"
#include "src/config/config.hpp"
#include "src/core/registry.hpp"

namespace stale {

struct GeneratorSpec {
  std::string name;
  std::vector<std::string> keys;  // objective.* keys this generator reads
};

struct ObjectiveEntry {
  std::string name;
  std::string summary;
  int rank = 0;
  std::vector<std::string> keys;          // objective.* keys read whatever the generator
  std::vector<GeneratorSpec> generators;  // empty: objective.generator does not apply
  std::function<std::unique_ptr<Objective>(const Config&, BackendKind)> make;
};

using ObjectiveRegistry = Registry<ObjectiveEntry>;

const ObjectiveEntry& objective_entry(const std::string& name);

}  // namespace stale
