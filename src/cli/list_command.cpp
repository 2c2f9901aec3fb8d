#include "src/cli/list_command.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include "src/commands/component_catalog.hpp"

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

std::string escape_md(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

void add_list_command(CLI::App& app) {
  auto* l = app.add_subcommand("list", "every registered method, delay model, objective, schedule and update rule");
  l->add_option("family", g.family, join(component_family_names(), " | ") + " (default: all)");
  l->add_flag("--markdown", g.markdown, "print the README's table");
}

int run_list_command() {
  const std::vector<ComponentFamily> families = component_catalog(g.family);
  if (g.markdown) std::printf("| family | name | traits | keys it reads | what it is |\n|---|---|---|---|---|\n");
  for (const auto& f : families) {
    if (!g.markdown) std::printf("%s:\n", f.name.c_str());
    for (const auto& r : f.rows) {
      const std::string keys = join(r.keys);
      if (g.markdown)
        std::printf("| %s | %s | %s | %s | %s |\n", f.name.c_str(), code(r.name).c_str(), escape_md(r.traits).c_str(),
                    escape_md(keys).c_str(), escape_md(r.summary).c_str());
      else
        std::printf("  %-18s %s%s%s\n", r.name.c_str(), r.summary.c_str(), r.traits.empty() ? "" : ("  [" + r.traits + "]").c_str(),
                    keys.empty() ? "" : ("  keys: " + keys).c_str());
    }
  }
  return 0;
}

}  // namespace stale
