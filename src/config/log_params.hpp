#pragma once
// The [log] table as typed values, read from the config once (LogParams::from_config, where the
// "auto"/"true"/"false" choices become an enum) and asked by everything that logs, plans a log
// or estimates its size: the run session, the metrics cadence, the schedule executor's delay
// windows, the resource estimate and the front ends. A rule about a log key (what −1 or "auto"
// resolves to) is a member here, so that the run and the estimate ahead of it agree.
#include <cstdint>
#include <string>

namespace stale {

class Config;

enum class AutoChoice { Auto, On, Off };

struct LogParams {
  int64_t every = 1;            // metrics cadence in block updates
  int64_t iterates_every = -1;  // −1 auto (iterate_cadence), 0 none
  AutoChoice exact_mean = AutoChoice::Auto;
  AutoChoice L_estimate = AutoChoice::Auto;
  int L_power_steps = 0;
  double divergence = 1e6;
  int64_t delay_window = 0;  // 0: K/50
  bool delays = true;
  std::string out;
  bool progress = true;
  double flush_seconds = 5.0;

  static LogParams from_config(const Config& cfg);

  // the iterate snapshot cadence in updates for an iterate of d values: log.iterates_every, or
  // at −1 every logged row up to d = 4096 (the iterates then cost no more than the metrics),
  // else every 16th; 0 = none
  int64_t iterate_cadence(int64_t d) const { return resolved_iterate_cadence(every, iterates_every, d); }
  static int64_t resolved_iterate_cadence(int64_t every, int64_t iterates_every, int64_t d) {
    return iterates_every >= 0 ? iterates_every : d <= 4096 ? every : 16 * every;
  }
  // the exact running mean of ‖∇f(w_k)‖² where asked, or at "auto" where the objective makes it cheap
  bool exact_mean_for(bool cheap) const { return resolve(exact_mean, cheap); }
  // estimate L along the run where asked, or at "auto" where the objective has no certified L
  // (the estimate is then the price of having a bound at all; beside a certified L it is a check)
  bool estimate_L_for(bool no_certified_L) const { return resolve(L_estimate, no_certified_L); }

 private:
  static bool resolve(AutoChoice c, bool auto_value) { return c == AutoChoice::On || (c == AutoChoice::Auto && auto_value); }
};

}  // namespace stale
