#pragma once
// `keys`: the config keys with type, default, meaning and valid values, from the schema
// (src/config/schema.cpp, the one list of keys). The one implementation behind `stale keys`
// (text, and the README's table with --markdown) and stale.keys() (dicts).
#include <string>
#include <vector>

#include "src/config/config.hpp"

namespace stale {

struct ConfigKeyRow {
  std::string key;
  std::string type;          // integer, float, bool, string, float list, ...
  ConfigValue fallback;      // the default
  std::string fallback_text; // the default as TOML text
  std::string meaning;
  std::vector<std::string> choices;  // a string key's valid values (a component key: its registry's names)
};

// the meaning with the valid values appended: "... (one of: a, b, c)", as `stale keys` prints it
std::string meaning_with_choices(const ConfigKeyRow& row);

// Every key that starts with `prefix` (all of them for ""), in the schema's order. A prefix no
// key starts with is a UserError naming the closest key (require_key), `origin` saying who asked.
std::vector<ConfigKeyRow> config_key_rows(const std::string& prefix = "", const std::string& origin = "stale keys");

}  // namespace stale
