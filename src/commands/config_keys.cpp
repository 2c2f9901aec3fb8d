#include "src/commands/config_keys.hpp"

namespace stale {

std::string meaning_with_choices(const ConfigKeyRow& row) {
  if (row.choices.empty()) return row.meaning;
  std::string c;
  for (const auto& x : row.choices) c += (c.empty() ? "" : ", ") + x;
  return row.meaning + " (one of: " + c + ")";
}

std::vector<ConfigKeyRow> config_key_rows(const std::string& prefix, const std::string& origin) {
  std::vector<ConfigKeyRow> rows;
  for (const auto& s : config_schema())
    if (s.key.rfind(prefix, 0) == 0)
      rows.push_back({s.key, type_name(s), s.fallback, value_to_string(s.fallback), s.meaning, choices_of(s)});
  if (rows.empty()) require_key(prefix, origin);  // no key starts with it: say the closest
  return rows;
}

}  // namespace stale
