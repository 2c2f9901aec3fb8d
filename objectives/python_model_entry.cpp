// The registry entry of objective.name = "python": a stage-wise model whose stages, loss and
// data are defined in Python (stale.StageModel, python/stale/model.py; its C++ side is
// python/stage_model_objective.*). The entry exists so that a run of such a model records
// objective.name = "python" in its config, the unread-key rule knows it reads no objective.*
// key of its own, and the CLI or a sweep given that name says where it runs instead of
// "not valid": the callables live in a Python process, so only stale.run(config, model=...)
// can build it.
#include "objectives/python_model_entry.hpp"

#include "objectives/objective_registry.hpp"
#include "src/core/error.hpp"

namespace stale {
namespace {

std::unique_ptr<Objective> refuse_outside_python(const Config&, BackendKind) {
  config_error("objective.name", "\"python\" is a model defined in Python (stale.StageModel): run it from Python with "
                                 "stale.run(config, model=...), not from a config alone");
}

// d is the model's, known only to the Python process: no estimate from the config
ObjectiveFootprint python_footprint(const Config&, const FootprintContext&) { return {}; }

const bool registered = ObjectiveRegistry::add(
    {"python", "a stage-wise model defined in Python: stale.StageModel or stale.torch (run with stale.run(config, model=...))",
     3, {}, {}, refuse_outside_python, python_footprint,
     /*shared_across_runs=*/false, /*ensembles_on_cpu=*/false});

}  // namespace
}  // namespace stale
