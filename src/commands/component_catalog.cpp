#include "src/commands/component_catalog.hpp"

#include <algorithm>

#include "delays/delay_registry.hpp"
#include "objectives/objective_registry.hpp"
#include "optimizers/method_registry.hpp"
#include "optimizers/update_rule.hpp"
#include "src/core/error.hpp"
#include "src/pipeline/schedule.hpp"

namespace stale {

namespace {

std::string join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : sep) + x;
  return out;
}

std::vector<ComponentRow> method_rows() {
  std::vector<ComponentRow> out;
  for (const auto& e : MethodRegistry::entries()) {
    std::string traits = method_kind_name(e.kind);
    if (e.kind == MethodKind::ScheduleDriven) traits += " " + e.schedule;
    if (e.stash) traits += ", stash";
    if (e.predict) traits += ", prediction";
    out.push_back({e.name, traits, e.keys, e.summary,
                   {{"kind", method_kind_name(e.kind)}, {"schedule", e.schedule}, {"stash", e.stash}, {"predict", e.predict}}});
  }
  return out;
}

std::vector<ComponentRow> delay_rows() {
  std::vector<ComponentRow> out;
  for (const auto& e : DelayRegistry::entries())
    out.push_back({e.name, "", e.keys, e.summary, {{"simulates_schedule", e.simulates_schedule}}});
  return out;
}

std::vector<ComponentRow> objective_rows() {
  std::vector<ComponentRow> out;
  for (const auto& e : ObjectiveRegistry::entries()) {
    std::vector<std::string> gens;
    std::map<std::string, std::vector<std::string>> generators;
    for (const auto& g : e.generators) {
      gens.push_back(g.name + (g.keys.empty() ? "" : " (" + join(g.keys) + ")"));
      generators[g.name] = g.keys;
    }
    out.push_back({e.name, gens.empty() ? "" : "generators: " + join(gens, "; "), e.keys, e.summary,
                   {{"generators", generators}}});
  }
  return out;
}

std::vector<ComponentRow> schedule_rows() {
  std::vector<ComponentRow> out;
  for (const auto& s : schedule_catalog()) {
    std::vector<std::string> t;
    if (s.flush) t.push_back("flush");
    if (s.split_backward) t.push_back("split backward");
    if (s.accumulates) t.push_back("accumulation (default " + s.default_accumulation + ")");
    if (s.replicated) t.push_back("replicas, local steps");
    if (s.chunked) t.push_back("chunks");
    out.push_back({s.name, join(t), {}, s.summary,
                   {{"flush", s.flush},
                    {"split_backward", s.split_backward},
                    {"accumulates", s.accumulates},
                    {"default_accumulation", s.default_accumulation},
                    {"replicated", s.replicated},
                    {"chunked", s.chunked}}});
  }
  return out;
}

std::vector<ComponentRow> rule_rows() {
  std::vector<ComponentRow> out;
  for (const auto& e : UpdateRuleRegistry::entries()) {
    const auto state = static_cast<int64_t>(e.state_per_coordinate);
    out.push_back({e.name, state > 0 ? "state: " + std::to_string(state) + " per coordinate" : "", e.keys, e.summary,
                   {{"state_per_coordinate", state}}});
  }
  return out;
}

using RowsOf = std::vector<ComponentRow> (*)();
const std::vector<std::pair<std::string, RowsOf>>& families() {
  static const std::vector<std::pair<std::string, RowsOf>> f = {{"methods", method_rows},
                                                                {"delays", delay_rows},
                                                                {"objectives", objective_rows},
                                                                {"schedules", schedule_rows},
                                                                {"rules", rule_rows}};
  return f;
}

}  // namespace

std::vector<std::string> component_family_names() {
  std::vector<std::string> names;
  for (const auto& f : families()) names.push_back(f.first);
  return names;
}

std::vector<ComponentFamily> component_catalog(const std::string& family) {
  const auto names = component_family_names();
  if (!family.empty() && std::find(names.begin(), names.end(), family) == names.end())
    throw UserError("unknown component family '" + family + "'; choose one of: " + join(names));
  std::vector<ComponentFamily> out;
  for (const auto& [name, rows] : families())
    if (family.empty() || name == family) out.push_back({name, rows()});
  return out;
}

}  // namespace stale
