#pragma once
// The rule that nothing is silently ignored: a key given explicitly (in the file, an override
// or a sweep) that the chosen objective, generator, method, schedule, delay model or update
// rule does not read is an error naming the key, what it applies to, and what was chosen.
// A key given at its default value changes nothing and passes. The components' registries
// say which keys each reads, so a new component brings its own keys.
#include <string>
#include <utility>
#include <vector>

#include "src/config/config.hpp"

namespace stale {

// the explicitly set keys (not at their default) that the run would not read, each with the
// one-line reason
std::vector<std::pair<std::string, std::string>> unread_keys(const Config& cfg);
// throws UserError naming all of them in one line, each with its reason, and the ways out
void check_unread_keys(const Config& cfg);
// resets them to their defaults (`stale run --drop-unread`, Python drop_unread=True, a sweep's
// unread = "drop"); returns the keys dropped
std::vector<std::string> drop_unread_keys(Config& cfg);

// Rules between keys that the schema's per-key ranges cannot say (method.lr_min <= method.lr
// under the cosine schedule); throws UserError naming the key, before anything is computed.
void check_key_relations(const Config& cfg);

// The files the run reads (objective.data, each part of "X.npy,y.npy", delay.path) exist and
// are files: a sweep checks every grid point before its first run.
void check_input_files(const Config& cfg);

}  // namespace stale
