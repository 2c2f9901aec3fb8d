#pragma once
// Config → Objective. Checks the cross-key rules (generator fits the name, stages ≤ dim,
// batch_size ≤ samples, the data file exists) and names the key at fault.
#include <memory>

#include "objectives/linear/linear_data.hpp"
#include "objectives/objective.hpp"
#include "src/backend/backend.hpp"
#include "src/config/config.hpp"

namespace stale {

// the data of a linear-model config (generated or loaded), batches partitioned
std::shared_ptr<LinearData> make_linear_data(const Config& cfg);
std::unique_ptr<Objective> make_objective(const Config& cfg, BackendKind backend);
// on the config's own backend (its `backend` key resolved: auto picks the GPU where there is one)
std::unique_ptr<Objective> make_objective(const Config& cfg);
// what a run file and stale.objective() say the objective is: its own description, or the
// generator it was made by where it gives none
std::string objective_description(const Objective& f, const Config& cfg);
// least squares or logistic regression (objective.name) on data already built and
// partitioned into batches: what make_objective does after make_linear_data (the Python
// package passes a user's arrays here)
std::unique_ptr<Objective> make_linear_objective_on(const Config& cfg, std::shared_ptr<LinearData> data,
                                                    BackendKind backend);

}  // namespace stale
