#pragma once
// One registry per component family (methods, delay models, objectives, schedules). Each
// component registers itself from its own file with a static
//
//   const bool registered = Registry<XEntry>::add({...});
//
// so adding a component is one file (plus its test): the config's choice lists, `stale list`,
// the README's "what is in the box" table and every "choose one of" message are generated
// from here. The libraries holding components are linked whole (CMake WHOLE_ARCHIVE) so that
// no registering object file is dropped by the linker.
//
// An Entry has at least `std::string name`, `std::string summary` and `int rank` (listing
// order; ties by name).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace stale {

template <class Entry>
class Registry {
 public:
  // registers e; a duplicate name is a programming error caught at start-up
  static bool add(Entry e) {
    auto& v = entries_mut();
    for (const auto& x : v)
      if (x.name == e.name) {
        std::fprintf(stderr, "internal error: two components registered as '%s'\n", e.name.c_str());
        std::abort();
      }
    v.push_back(std::move(e));
    std::stable_sort(v.begin(), v.end(), [](const Entry& a, const Entry& b) {
      return a.rank != b.rank ? a.rank < b.rank : a.name < b.name;
    });
    return true;
  }
  static const Entry* find(const std::string& name) {
    for (const auto& e : entries_mut())
      if (e.name == name) return &e;
    return nullptr;
  }
  static const std::vector<Entry>& entries() { return entries_mut(); }
  static std::vector<std::string> names() {
    std::vector<std::string> out;
    for (const auto& e : entries_mut()) out.push_back(e.name);
    return out;
  }
  static std::string names_text() {
    std::string out;
    for (const auto& e : entries_mut()) out += (out.empty() ? "" : ", ") + e.name;
    return out;
  }

 private:
  static std::vector<Entry>& entries_mut() {
    static std::vector<Entry> v;
    return v;
  }
};

}  // namespace stale
