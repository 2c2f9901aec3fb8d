#pragma once
// objective.name of a model defined in Python (python_model_entry.cpp registers it): the
// command layer writes it into the config of stale.run(config, model=...) and asks a .partial's
// config for it before a resume.
namespace stale {
inline constexpr const char* kPythonModelObjective = "python";
}  // namespace stale
