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
#include "objectives/objective_export.hpp"
#include "src/backend/backend.hpp"
#include "src/config/config.hpp"
#include "src/core/memory.hpp"
#include "src/core/registry.hpp"

namespace stale {

struct GeneratorSpec {
  std::string name;
  std::vector<std::string> keys;  // objective.* keys this generator reads
};

// What an objective will take, from the config alone, before it is built (the resource
// estimate, src/checks/resource_estimate.hpp, adds the method's and the delay model's share).
struct ObjectiveFootprint {
  double parameters = 0;         // d; 0 where only the data file knows it (LIBSVM)
  std::string parameter_keys;    // the keys that drive d, for messages: "objective.dim"
  double element_bytes = 8;      // of one parameter (float32 char-GPT: 4)
  std::vector<ResourceItem> memory;  // the objective's own large allocations
};
struct FootprintContext {
  double in_flight = 1;  // micro-batches whose activations are held at once (S for schedule methods)
};

enum class ArrayData { None, Targets, Labels };

struct ObjectiveEntry {
  std::string name;
  std::string summary;
  int rank = 0;
  std::vector<std::string> keys;          // objective.* keys read whatever the generator
  std::vector<GeneratorSpec> generators;  // empty: objective.generator does not apply
  std::function<std::unique_ptr<Objective>(const Config&, BackendKind)> make;
  std::function<ObjectiveFootprint(const Config&, const FootprintContext&)> footprint;
  // one instance may serve every run of a sweep that has the same objective.* keys (its
  // evaluation is const and thread-safe)
  bool shared_across_runs = false;
  // on the cpu, P runs that differ only in method.lr run as one lockstep ensemble (its column
  // calls are GEMMs over the P columns)
  bool ensembles_on_cpu = false;
  // f is a quadratic with one Hessian whatever the data point (least squares; not once
  // objective.nonconvex_reg is on): the stability predictor's recursion is linear in it
  bool fixed_hessian = false;
  // its objectives are text models (Objective::text_model()): `stale sample` generates from
  // its runs
  bool generates_text = false;
  // what arrays X, y handed over from Python are to it (stale.run(X=, y=), stale.objective):
  // nothing (it takes none), real targets, or ±1 class labels (checked as such)
  ArrayData array_data = ArrayData::None;
  // the objective of a config as arrays (objective_export.hpp: stale.objective()); empty: none
  std::function<ObjectiveExport(const Config&)> export_arrays = nullptr;
};

using ObjectiveRegistry = Registry<ObjectiveEntry>;

const ObjectiveEntry& objective_entry(const std::string& name);

// the objectives whose entries take arrays X, y, as text: "quadratic or logistic"
std::string objectives_taking_arrays();

// the objectives whose entries export their arrays, as text: "quadratic, logistic or charlm"
std::string objectives_exporting_arrays();

}  // namespace stale
