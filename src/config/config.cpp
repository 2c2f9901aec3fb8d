#include "src/config/config.hpp"

#include <charconv>
#include <cmath>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <sstream>
#include <toml++/toml.h>

#include "src/core/error.hpp"

namespace stale {

namespace {

std::string number_text(double x);

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

[[noreturn]] void unknown_key(const std::string& key, const std::string& origin) {
  std::string best;
  size_t best_d = 1000;
  for (const auto& s : config_schema()) {
    const size_t d = edit_distance(key, s.key);
    if (d < best_d) best_d = d, best = s.key;
  }
  const auto dot = key.find('.');
  const std::string section = dot == std::string::npos ? "" : key.substr(0, dot + 1);
  std::vector<std::string> in_section;
  for (const auto& s : config_schema())
    if (!section.empty() && s.key.rfind(section, 0) == 0) in_section.push_back(s.key);
  std::string msg = origin + ": unknown config key '" + key + "'";
  if (best_d <= 3) msg += " (did you mean '" + best + "'?)";
  if (!in_section.empty()) msg += "; valid keys in [" + section.substr(0, section.size() - 1) + "]: " + join(in_section, ", ");
  throw UserError(msg);
}

std::string range_text(const KeySpec& s) {
  std::string r;
  if (s.min) {
    r = (s.min_exclusive ? "> " : ">= ") + number_text(*s.min);
  }
  if (s.max) r += (r.empty() ? "" : " and ") + ((s.max_exclusive ? "< " : "<= ") + number_text(*s.max));
  return r;
}

std::string describe(const toml::node& n) {
  if (auto s = n.as_string()) return "the string \"" + s->get() + "\"";
  if (auto b = n.as_boolean()) return b->get() ? "true" : "false";
  if (auto i = n.as_integer()) return std::to_string(i->get());
  if (auto f = n.as_floating_point()) return number_text(f->get());
  if (n.is_array()) return "an array";
  if (n.is_table()) return "a table";
  return "a value of another type";
}

// a number as a person wrote it: integers exactly (no 1e+11), others with round-trip digits
std::string number_text(double x) {
  std::ostringstream os;
  if (std::isfinite(x) && x == std::floor(x) && std::abs(x) < 9.0e15) os << static_cast<long long>(x);
  else os << std::setprecision(17) << x;
  return os.str();
}

void check_number(const KeySpec& s, double x, const std::string& origin) {
  const bool low = s.min && (s.min_exclusive ? x <= *s.min : x < *s.min);
  const bool high = s.max && (s.max_exclusive ? x >= *s.max : x > *s.max);
  if (low || high || !std::isfinite(x)) {
    throw UserError(origin + ": " + s.key + " = " + number_text(x) + " is out of range; valid: " + range_text(s));
  }
}

// Integer keys are checked as 64-bit integers before anything narrows them: a TOML integer
// is compared exactly against the key's bounds (no round trip through double, which turns
// 2^63 − 1 into 2^63 and the cast back into undefined behaviour), and a float that stands for
// an integer (1e3) must be integral and at most 2^53 in magnitude, where every integer is a
// double exactly; 1e308 or 9.2e18 is refused instead of overflowing the conversion.
int64_t checked_integer(const KeySpec& s, const toml::node& n, const std::string& origin,
                        const std::function<UserError(const std::string&)>& wrong) {
  constexpr double kExact = 9007199254740992.0;  // 2^53
  int64_t v = 0;
  if (auto i = n.as_integer()) {
    v = i->get();
  } else if (auto f = n.as_floating_point()) {
    const double x = f->get();
    if (!std::isfinite(x) || x != std::floor(x)) throw wrong("the non-integer " + number_text(x));
    if (std::abs(x) > kExact)
      throw UserError(origin + ": " + s.key + " = " + number_text(x) +
                      " is not an integer a float can hold exactly (|value| <= 2^53); write it as an integer" +
                      (s.max ? ", valid: " + range_text(s) : std::string()));
    v = static_cast<int64_t>(x);
  } else {
    throw wrong(describe(n));
  }
  // every bound in the schema is an integer below 2^53, so comparing in long double is exact
  const long double lv = static_cast<long double>(v);
  const bool low = s.min && (s.min_exclusive ? lv <= static_cast<long double>(*s.min) : lv < static_cast<long double>(*s.min));
  const bool high = s.max && lv > static_cast<long double>(*s.max);
  if (low || high)
    throw UserError(origin + ": " + s.key + " = " + std::to_string(v) + " is out of range; valid: " + range_text(s));
  return v;
}

// Convert a TOML node to the key's type, or throw naming the key.
ConfigValue convert(const KeySpec& s, const toml::node& node, const std::string& origin) {
  auto wrong = [&](const std::string& got) -> UserError {
    return UserError(origin + ": " + s.key + " must be " + type_name(s) + ", got " + got);
  };
  auto as_number = [&](const toml::node& n, bool want_int) -> double {
    if (auto i = n.as_integer()) return static_cast<double>(i->get());
    if (auto f = n.as_floating_point()) {
      const double v = f->get();
      if (want_int && v != std::floor(v)) throw wrong("the non-integer " + number_text(v));
      return v;
    }
    throw wrong(describe(n));
  };
  switch (s.type) {
    case KeyType::Int:
      return checked_integer(s, node, origin, wrong);
    case KeyType::Float: {
      const double v = as_number(node, false);
      check_number(s, v, origin);
      return v;
    }
    case KeyType::Bool:
      if (auto b = node.as_boolean()) return b->get();
      throw wrong(describe(node));
    case KeyType::String: {
      auto str = node.as_string();
      const auto choices_here = choices_of(s);
      const bool tristate = std::find(choices_here.begin(), choices_here.end(), "true") != choices_here.end();
      if (!str && tristate && node.as_boolean()) return std::string(node.as_boolean()->get() ? "true" : "false");
      if (!str) throw wrong(describe(node));
      const std::string v = str->get();
      // a NUL ends the string where the C library reads it: log.out = "a\u0000b.h5" would write "a"
      if (v.find('\0') != std::string::npos)
        throw UserError(origin + ": " + s.key + " = \"" + one_line(v) + "\" contains a NUL byte (\\x00); valid: text "
                        "without NUL; remove the \\u0000 escape");
      const auto choices = choices_of(s);
      if (!choices.empty() && std::find(choices.begin(), choices.end(), v) == choices.end())
        throw UserError(origin + ": " + s.key + " = \"" + v + "\" is not valid; choose one of: " + join(choices, ", "));
      return v;
    }
    case KeyType::FloatList:
    case KeyType::IntList: {
      const bool want_int = s.type == KeyType::IntList;
      std::vector<double> out;
      if (auto arr = node.as_array()) {
        for (const auto& el : *arr) out.push_back(as_number(el, want_int));
      } else if (s.scalar_or_list) {
        out.push_back(as_number(node, want_int));
      } else {
        throw wrong(describe(node));
      }
      for (double x : out) check_number(s, x, origin);
      return out;
    }
  }
  throw InternalError("unhandled key type");
}

void flatten(const toml::table& t, const std::string& prefix, std::vector<std::pair<std::string, const toml::node*>>& out) {
  for (const auto& [k, v] : t) {
    const std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (auto sub = v.as_table()) {
      // a table that is itself a key (none today) would be taken whole; sections recurse
      flatten(*sub, key, out);
    } else {
      out.emplace_back(key, &v);
    }
  }
}

std::string toml_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string one_line(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += ' ';
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else out += static_cast<char>(c);
  }
  return out;
}

[[noreturn]] void config_error(const std::string& key, const std::string& what) {
  throw UserError("config: " + key + ": " + what);
}

namespace {
std::map<std::string, std::vector<std::string> (*)()>& choice_sources() {
  static std::map<std::string, std::vector<std::string> (*)()> m;
  return m;
}
}  // namespace

bool set_choice_source(const std::string& key, std::vector<std::string> (*names)()) {
  choice_sources()[key] = names;
  return true;
}

std::vector<std::string> choices_of(const KeySpec& spec) {
  auto it = choice_sources().find(spec.key);
  return it != choice_sources().end() ? it->second() : spec.choices;
}

const KeySpec& require_key(const std::string& key, const std::string& origin) {
  const KeySpec* spec = find_key(key);
  if (!spec) unknown_key(key, origin);
  return *spec;
}

const KeySpec* find_key(const std::string& key) {
  for (const auto& s : config_schema())
    if (s.key == key) return &s;
  return nullptr;
}

std::string type_name(const KeySpec& s) {
  switch (s.type) {
    case KeyType::Int: return "integer";
    case KeyType::Float: return "float";
    case KeyType::Bool: return "bool";
    case KeyType::String: return "string";
    case KeyType::FloatList: return s.scalar_or_list ? "float or float list" : "float list";
    case KeyType::IntList: return s.scalar_or_list ? "integer or integer list" : "integer list";
  }
  return "?";
}

namespace {
// the shortest text that reads back as the same double (0.9, not 0.90000000000000002), kept a
// TOML float
std::string float_text(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, x);
  std::string t(buf, res.ptr);
  if (t.find_first_of(".eE") == std::string::npos) t += ".0";
  return t;
}
}  // namespace

std::string value_to_string(const ConfigValue& v) {
  std::ostringstream os;
  std::visit([&](const auto& x) {
    using T = std::decay_t<decltype(x)>;
    if constexpr (std::is_same_v<T, std::string>) os << toml_quote(x);
    else if constexpr (std::is_same_v<T, bool>) os << (x ? "true" : "false");
    else if constexpr (std::is_same_v<T, double>) os << float_text(x);
    else if constexpr (std::is_same_v<T, std::vector<double>>) {
      os << "[";
      for (size_t i = 0; i < x.size(); ++i) os << (i ? ", " : "") << float_text(x[i]);
      os << "]";
    } else os << x;
  }, v);
  return os.str();
}

Config::Config() {
  for (const auto& s : config_schema()) values_[s.key] = s.fallback;
}

Config Config::from_string(const std::string& text, const std::string& origin) {
  Config c;
  c.origin_ = origin;
  toml::table tbl;
  try {
    tbl = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << origin << ":" << e.source().begin.line << ":" << e.source().begin.column
       << ": TOML syntax error: " << one_line(std::string(e.description()));
    throw UserError(os.str());
  }
  std::vector<std::pair<std::string, const toml::node*>> flat;
  flatten(tbl, "", flat);
  // A quoted key with a dot ("method.lr" = 0.1, as sweep files write their axes) names the
  // dotted key; TOML sees it as another key than lr under [method], so both may stand in one
  // file, and the later would win silently: refused.
  std::map<std::string, const toml::node*> seen;
  for (const auto& [key, node] : flat) {
    const auto [it, fresh] = seen.emplace(key, node);
    if (!fresh)
      throw UserError(origin + ":" + std::to_string(node->source().begin.line) + ": " + key + " is given twice (line " +
                      std::to_string(it->second->source().begin.line) +
                      " and here: a quoted \"section.key\" names the same key as key under [section]); give it once");
  }
  for (const auto& [key, node] : flat) {
    const KeySpec* spec = find_key(key);
    if (!spec) unknown_key(key, origin);
    c.values_[key] = convert(*spec, *node, origin);
    c.explicit_[key] = true;
  }
  return c;
}

std::string read_config_text(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open " + what + " (does it exist?)");
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxConfigBytes)
      throw UserError(path + ": more than " + std::to_string(kMaxConfigBytes >> 20) + " MiB read, and a " + what +
                      " is a few KiB; valid: a TOML text file (not a device, a data file or a pipe that never ends)");
  }
  return text;
}

Config Config::from_file(const std::string& path) {
  std::error_code ec;
  // an ifstream opens a directory on Linux and reads nothing: that would run the defaults
  if (std::filesystem::is_directory(path, ec))
    throw UserError(path + ": is a directory; give a TOML config file, e.g. experiments/quickstart.toml");
  return from_string(read_config_text(path, "config file"), path);
}

void Config::apply_override(const std::string& assignment) {
  // ~key unsets a key: back to its default, as if never given (switching a method leaves the
  // keys only the old one read)
  if (!assignment.empty() && assignment[0] == '~' && assignment.find('=') == std::string::npos) {
    const std::string key = assignment.substr(1);
    if (!find_key(key)) unknown_key(key, "override '" + assignment + "'");
    reset(key);
    return;
  }
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UserError("override '" + assignment + "': expected key=value, e.g. method.lr=0.01, or ~key to unset a key");
  const std::string key = assignment.substr(0, eq);
  const std::string value = assignment.substr(eq + 1);
  const KeySpec* spec = find_key(key);
  const std::string origin = "override '" + assignment + "'";
  if (!spec) unknown_key(key, "override");
  toml::table tbl;
  try {
    tbl = toml::parse("v = " + value);
  } catch (const toml::parse_error&) {
    // bare words (method.name=rpd) are strings
    tbl = toml::table{{"v", value}};
  }
  values_[key] = convert(*spec, *tbl.get("v"), origin);
  explicit_[key] = true;
}

void Config::apply_overrides(const std::vector<std::string>& assignments) {
  std::map<std::string, std::string> given;  // key → the assignment that set it
  for (const auto& a : assignments) {
    const bool unset = !a.empty() && a[0] == '~' && a.find('=') == std::string::npos;
    const std::string key = unset ? a.substr(1) : a.substr(0, a.find('='));
    const auto [it, fresh] = given.emplace(key, a);
    if (!fresh && !key.empty())
      throw UserError("override '" + a + "': " + key + " is already given as '" + it->second +
                      "' among the overrides (the last would win silently); give each key once");
    apply_override(a);
  }
}

void Config::reset(const std::string& key) {
  const KeySpec* spec = find_key(key);
  if (!spec) unknown_key(key, origin_);
  values_[key] = spec->fallback;
  explicit_.erase(key);
}

void Config::set(const std::string& key, const ConfigValue& value, const std::string& origin) {
  const KeySpec* spec = find_key(key);
  if (!spec) unknown_key(key, origin);
  // round-trip through TOML so that the same checks apply
  toml::table tbl;
  std::visit([&](const auto& x) {
    using T = std::decay_t<decltype(x)>;
    if constexpr (std::is_same_v<T, std::vector<double>>) {
      toml::array a;
      for (double d : x) a.push_back(d);
      tbl.insert("v", a);
    } else {
      tbl.insert("v", x);
    }
  }, value);
  values_[key] = convert(*spec, *tbl.get("v"), origin);
  explicit_[key] = true;
}

const ConfigValue& Config::raw(const std::string& key, KeyType expect) const {
  const KeySpec* spec = find_key(key);
  STALE_CHECK(spec != nullptr, "config key '" + key + "' is not in the schema");
  STALE_CHECK(spec->type == expect, "config key '" + key + "' read with the wrong type");
  return values_.at(key);
}

int64_t Config::get_int(const std::string& key) const { return std::get<int64_t>(raw(key, KeyType::Int)); }
double Config::get_float(const std::string& key) const { return std::get<double>(raw(key, KeyType::Float)); }
bool Config::get_bool(const std::string& key) const { return std::get<bool>(raw(key, KeyType::Bool)); }
const std::string& Config::get_string(const std::string& key) const {
  return std::get<std::string>(raw(key, KeyType::String));
}
std::vector<double> Config::get_floats(const std::string& key) const {
  const KeySpec* spec = find_key(key);
  STALE_CHECK(spec && (spec->type == KeyType::FloatList || spec->type == KeyType::IntList), key);
  return std::get<std::vector<double>>(values_.at(key));
}
bool Config::is_set(const std::string& key) const { return explicit_.count(key) > 0; }
std::string Config::value_text(const std::string& key) const {
  STALE_CHECK(find_key(key) != nullptr, "config key '" + key + "' is not in the schema");
  return value_to_string(values_.at(key));
}

std::string Config::to_toml() const {
  std::ostringstream os;
  std::string section = "";
  for (const auto& s : config_schema()) {
    const auto dot = s.key.find('.');
    const std::string sec = dot == std::string::npos ? "" : s.key.substr(0, dot);
    const std::string name = dot == std::string::npos ? s.key : s.key.substr(dot + 1);
    if (sec != section) {
      os << "\n[" << sec << "]\n";
      section = sec;
    }
    os << name << " = " << value_to_string(values_.at(s.key)) << "\n";
  }
  return os.str();
}

std::string Config::base_dir() const {
  if (origin_.empty()) return ".";
  const auto parent = std::filesystem::path(origin_).parent_path();
  return parent.empty() ? "." : parent.string();
}

}  // namespace stale
