#include "src/cli/list_command.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include "delays/delay_registry.hpp"
#include "objectives/objective_registry.hpp"
#include "optimizers/method_registry.hpp"
#include "optimizers/update_rule.hpp"
#include "src/core/error.hpp"
#include "src/pipeline/schedule.hpp"

namespace stale {

namespace {

struct Args {
  std::string family;
  bool markdown = false;
} g;

std::string join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : sep) + x;
  return out;
}

std::string code(const std::string& s) { return "`" + s + "`"; }

struct Row {
  std::string name, traits, keys, summary;
};

std::vector<Row> method_rows() {
  std::vector<Row> out;
  for (const auto& e : MethodRegistry::entries()) {
    std::string traits = method_kind_name(e.kind);
    if (e.kind == MethodKind::ScheduleDriven) traits += " " + e.schedule;
    if (e.stash) traits += ", stash";
    if (e.predict) traits += ", prediction";
    out.push_back({e.name, traits, join(e.keys), e.summary});
  }
  return out;
}

std::vector<Row> delay_rows() {
  std::vector<Row> out;
  for (const auto& e : DelayRegistry::entries()) out.push_back({e.name, "", join(e.keys), e.summary});
  return out;
}

std::vector<Row> objective_rows() {
  std::vector<Row> out;
  for (const auto& e : ObjectiveRegistry::entries()) {
    std::vector<std::string> gens;
    for (const auto& gspec : e.generators)
      gens.push_back(gspec.name + (gspec.keys.empty() ? "" : " (" + join(gspec.keys) + ")"));
    out.push_back({e.name, gens.empty() ? "" : "generators: " + join(gens, "; "), join(e.keys), e.summary});
  }
  return out;
}

std::vector<Row> rule_rows() {
  std::vector<Row> out;
  for (const auto& e : UpdateRuleRegistry::entries())
    out.push_back({e.name, e.state_per_coordinate > 0 ? "state: " + std::to_string(static_cast<int>(e.state_per_coordinate)) +
                                                            " per coordinate"
                                                      : "",
                   join(e.keys), e.summary});
  return out;
}

std::vector<Row> schedule_rows() {
  std::vector<Row> out;
  for (const auto& s : schedule_catalog()) {
    std::vector<std::string> t;
    if (s.flush) t.push_back("flush");
    if (s.split_backward) t.push_back("split backward");
    if (s.accumulates) t.push_back("accumulation (default " + s.default_accumulation + ")");
    if (s.replicated) t.push_back("replicas, local steps");
    if (s.chunked) t.push_back("chunks");
    out.push_back({s.name, join(t), "", s.summary});
  }
  return out;
}

const std::vector<std::pair<std::string, std::vector<Row> (*)()>>& families() {
  static const std::vector<std::pair<std::string, std::vector<Row> (*)()>> f = {
      {"methods", method_rows}, {"delays", delay_rows}, {"objectives", objective_rows}, {"schedules", schedule_rows},
      {"rules", rule_rows}};
  return f;
}

std::string escape_md(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

void add_list_command(CLI::App& app) {
  auto* l = app.add_subcommand("list", "every registered method, delay model, objective, schedule and update rule");
  l->add_option("family", g.family, "methods | delays | objectives | schedules | rules (default: all)");
  l->add_flag("--markdown", g.markdown, "print the README's table");
}

int run_list_command() {
  std::vector<std::string> valid;
  for (const auto& f : families()) valid.push_back(f.first);
  if (!g.family.empty() && std::find(valid.begin(), valid.end(), g.family) == valid.end())
    throw UserError("stale list: unknown family '" + g.family + "'; choose one of: " + join(valid));
  if (g.markdown) std::printf("| family | name | traits | keys it reads | what it is |\n|---|---|---|---|---|\n");
  for (const auto& [family, rows] : families()) {
    if (!g.family.empty() && family != g.family) continue;
    if (!g.markdown) std::printf("%s:\n", family.c_str());
    for (const auto& r : rows()) {
      if (g.markdown)
        std::printf("| %s | %s | %s | %s | %s |\n", family.c_str(), code(r.name).c_str(), escape_md(r.traits).c_str(),
                    escape_md(r.keys).c_str(), escape_md(r.summary).c_str());
      else
        std::printf("  %-18s %s%s%s\n", r.name.c_str(), r.summary.c_str(), r.traits.empty() ? "" : ("  [" + r.traits + "]").c_str(),
                    r.keys.empty() ? "" : ("  keys: " + r.keys).c_str());
    }
  }
  return 0;
}

}  // namespace stale
