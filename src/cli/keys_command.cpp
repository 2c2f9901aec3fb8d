#include "src/cli/keys_command.hpp"

#include <cstdio>

#include "src/config/config.hpp"

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
  if (g_markdown) {
    std::printf("| key | type | default | meaning |\n|---|---|---|---|\n");
    for (const auto& s : config_schema()) {
      std::string meaning = s.meaning;
      if (const auto choices = choices_of(s); !choices.empty()) {
        std::string c;
        for (const auto& x : choices) c += (c.empty() ? "" : ", ") + x;
        meaning += " (one of: " + c + ")";
      }
      std::printf("| `%s` | %s | `%s` | %s |\n", s.key.c_str(), type_name(s).c_str(),
                  escape_md(value_to_string(s.fallback)).c_str(), escape_md(meaning).c_str());
    }
    return 0;
  }
  int shown = 0;
  for (const auto& s : config_schema()) {
    if (s.key.rfind(g_prefix, 0) != 0) continue;
    std::string meaning = s.meaning;
    if (const auto choices = choices_of(s); !choices.empty()) {
      std::string c;
      for (const auto& x : choices) c += (c.empty() ? "" : ", ") + x;
      meaning += " (one of: " + c + ")";
    }
    std::printf("%-28s %-10s %-14s %s\n", s.key.c_str(), type_name(s).c_str(), value_to_string(s.fallback).c_str(),
                meaning.c_str());
    ++shown;
  }
  if (shown == 0) require_key(g_prefix, "stale keys");  // no key starts with it: say the closest
  return 0;
}

}  // namespace stale
