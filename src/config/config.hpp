#pragma once
// Run configuration: TOML files plus `key=value` overrides, checked against one schema
// (schema.cpp). Every key has a type, a default, a meaning and a validity rule; unknown keys,
// wrong types and out-of-range values are UserErrors that name the key and what is valid.
// The resolved config (every key, defaults filled in) is what a run file stores.
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace stale {

enum class KeyType { Int, Float, Bool, String, FloatList, IntList };

using ConfigValue = std::variant<int64_t, double, bool, std::string, std::vector<double>>;

struct KeySpec {
  std::string key;      // dotted: "objective.dim"
  KeyType type;
  ConfigValue fallback;  // default
  std::string meaning;
  std::vector<std::string> choices = {};  // String keys: the valid values (empty = any)
  std::optional<double> min = {};         // numeric keys (each element for lists)
  std::optional<double> max = {};
  bool min_exclusive = false;
  bool max_exclusive = false;  // AdamW's β < 1: at β = 1 the moment never moves and the step divides by zero
  bool scalar_or_list = false;  // FloatList/IntList that also accept a single number
  // names a component: the valid values are its registry's (set_choice_source), checked where
  // the registry is linked; a program of the lower layers alone accepts any name here
  bool registry_choices = false;
  // declared by a component in its own file (add_component_keys), not in schema.cpp's table;
  // left out of a sweep run's name while at its default, so that adding a component renames
  // no existing run
  bool component_owned = false;
};

// The schema: every key the harness knows, in README table order: schema.cpp's table, with the
// keys components declare in their own files placed after the last key of their section, in
// name order.
const std::vector<KeySpec>& config_schema();

// Keys a component reads that no other component does, declared in the component's own file
// beside its registry entry, so that a new component with keys of its own is one file:
//   const bool keys = add_component_keys({keys::IntList("delay.profile", {}, "…", 0)});
// Call only at static initialisation (before main). A key already in the schema is a program
// error.
bool add_component_keys(std::vector<KeySpec> specs);

// The builders of KeySpecs, for schema.cpp's table and for add_component_keys.
namespace keys {
KeySpec Int(std::string k, int64_t d, std::string m, std::optional<double> lo = std::nullopt,
            std::optional<double> hi = std::nullopt);
KeySpec Float(std::string k, double d, std::string m, std::optional<double> lo = std::nullopt,
              bool lo_exclusive = false, std::optional<double> hi = std::nullopt);
// [lo, hi): a bound the value must stay below
KeySpec FloatBelow(std::string k, double d, std::string m, double lo, double hi);
KeySpec Str(std::string k, std::string d, std::string m, std::vector<std::string> choices = {});
// a key that names a component: its valid values are the registry's (set_choice_source), never
// a list here, so that a new component is one file with no edit to the schema
KeySpec Component(std::string k, std::string d, std::string m);
KeySpec FloatList(std::string k, std::vector<double> d, std::string m, double lo);
// a list of integers (each ≥ lo), stored as doubles like every list (Config::get_floats)
KeySpec IntList(std::string k, std::vector<double> d, std::string m, double lo);
KeySpec Bool(std::string k, bool d, std::string m);
}  // namespace keys

// The valid values of a String key: its schema choices, or — for keys that name a component
// (method.name, delay.name, objective.name, …) — the names in that component family's
// registry, which registers itself as the key's choice source (src/core/registry.hpp).
std::vector<std::string> choices_of(const KeySpec& spec);
bool set_choice_source(const std::string& key, std::vector<std::string> (*names)());
const KeySpec* find_key(const std::string& key);
// the key's spec, or a UserError "ORIGIN: unknown config key 'KEY' (did you mean …?)"
const KeySpec& require_key(const std::string& key, const std::string& origin);
std::string type_name(const KeySpec& spec);
std::string value_to_string(const ConfigValue& v);

// A config or sweep file is a few KiB; more than this is the wrong file.
inline constexpr size_t kMaxConfigBytes = size_t{16} << 20;

// The whole text of a config or sweep file, refused past kMaxConfigBytes (read in pieces, so
// /dev/zero stops there) or when it cannot be opened; `what` names it in the message.
std::string read_config_text(const std::string& path, const std::string& what);

class Config {
 public:
  // defaults only
  Config();
  // at most kMaxConfigBytes are read: a device or pipe that never ends (stale run /dev/zero)
  // is refused instead of read forever
  static Config from_file(const std::string& path);
  static Config from_string(const std::string& toml_text, const std::string& origin);

  // "objective.dim=256"; the value is parsed as TOML, bare words as strings. "~key" unsets the
  // key (its default, as if never given)
  void apply_override(const std::string& assignment);
  // a command line's (or a Python call's) overrides, in order; a key given twice is refused
  // (the last would win silently), ~key counting as giving it
  void apply_overrides(const std::vector<std::string>& assignments);
  void set(const std::string& key, const ConfigValue& value, const std::string& origin);

  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  const std::string& get_string(const std::string& key) const;
  // lists: a scalar given for a scalar_or_list key becomes a one-element list
  std::vector<double> get_floats(const std::string& key) const;
  bool is_set(const std::string& key) const;  // explicitly given (not the default)
  // back to the schema's default, as if never given
  void reset(const std::string& key);
  // the value as TOML text (what to_toml writes for the key)
  std::string value_text(const std::string& key) const;

  // resolved config as TOML text (all keys), stable order
  std::string to_toml() const;
  // the file the config came from ("" for defaults / strings)
  const std::string& origin() const { return origin_; }
  // directory of the config file, for resolving relative paths
  std::string base_dir() const;

 private:
  const ConfigValue& raw(const std::string& key, KeyType expect) const;
  std::map<std::string, ConfigValue> values_;
  std::map<std::string, bool> explicit_;
  std::string origin_;
};

// Control characters (a raw newline in a TOML value, a parser message over two lines) written
// as escapes, so that an error message stays one line.
std::string one_line(const std::string& text);

// A value in the config failed a cross-key rule (e.g. stages > dim). Names the key.
[[noreturn]] void config_error(const std::string& key, const std::string& what);

}  // namespace stale
