#include "src/cli/keys_command.hpp"

#include <cstdio>

#include "src/commands/config_keys.hpp"

namespace stale {

namespace {
bool g_markdown = false;
std::string g_prefix;
std::string escape_md(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else out += c;
  }
  return out;
}
}  // namespace

void add_keys_command(CLI::App& app) {
  auto* k = app.add_subcommand("keys", "list every config key with type, default and meaning");
  k->add_option("prefix", g_prefix, "only the keys that start with this, e.g. delay or method.lr");
  k->add_flag("--markdown", g_markdown, "print the README's Markdown table");
}

int run_keys_command() {
  const std::vector<ConfigKeyRow> rows = config_key_rows(g_prefix, "stale keys");
  if (g_markdown) std::printf("| key | type | default | meaning |\n|---|---|---|---|\n");
  for (const auto& r : rows) {
    if (g_markdown)
      std::printf("| `%s` | %s | `%s` | %s |\n", r.key.c_str(), r.type.c_str(), escape_md(r.fallback_text).c_str(),
                  escape_md(meaning_with_choices(r)).c_str());
    else
      std::printf("%-28s %-10s %-14s %s\n", r.key.c_str(), r.type.c_str(), r.fallback_text.c_str(),
                  meaning_with_choices(r).c_str());
  }
  return 0;
}

}  // namespace stale
