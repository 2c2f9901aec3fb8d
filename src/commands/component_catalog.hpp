#pragma once
// `list`: every registered component — methods, delay models, objectives, schedules, update
// rules — read from the registries, so a listing can never fall behind the code. The one
// implementation behind `stale list` (text, and the README's table with --markdown) and
// stale.components() (dicts): the front ends format the families this returns.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace stale {

// a typed fact of a registry entry (a method's kind, whether it stashes; a schedule's
// default accumulation; an objective's generators with the keys each reads)
using ComponentFact =
    std::variant<bool, int64_t, std::string, std::vector<std::string>, std::map<std::string, std::vector<std::string>>>;

struct ComponentRow {
  std::string name;
  std::string traits;             // the facts in one line, as `stale list` prints them ("" when none)
  std::vector<std::string> keys;  // the config keys it reads (beyond its family's name key)
  std::string summary;            // one line: what it is, the paper
  std::vector<std::pair<std::string, ComponentFact>> facts;  // the traits as data, in a fixed order per family
};

struct ComponentFamily {
  std::string name;  // methods | delays | objectives | schedules | rules
  std::vector<ComponentRow> rows;
};

// the family names, in listing order
std::vector<std::string> component_family_names();
// every family in listing order, or only `family` (a UserError listing the valid names when it
// is none of them)
std::vector<ComponentFamily> component_catalog(const std::string& family = "");

}  // namespace stale
