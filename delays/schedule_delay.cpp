// The exact delay table of a simulated pipeline schedule (delay.schedule, with method.* and
// [costs]): rpd plans and simulates the schedule (optimizers/rpd.cpp) and hands its table
// here through the context; with delay.follow_order rpd also takes the schedule's stage and
// batch order, and then replays PipeDream bit for bit.
#include <algorithm>

#include "delays/delay_registry.hpp"
#include "src/config/config.hpp"
#include "src/core/error.hpp"
#include "src/pipeline/schedule.hpp"

namespace stale {
namespace {
const bool choices = set_choice_source("delay.schedule", schedule_names);
const bool registered = DelayRegistry::add(
    {"schedule", "the exact delay table of a simulated schedule (delay.schedule), optionally with its stage and batch order",
     5, {"delay.schedule", "delay.follow_order"}, [](const DelayContext& c) {
       if (!c.schedule_table)
         config_error("delay.name", "\"schedule\" replays a simulated schedule's delays and is read by method.name = \"rpd\" only");
       return make_table_delay(*c.schedule_table, c.schedule_rows, c.stages, c.schedule_origin);
     },
     // a pipeline schedule's reads reach about S versions of each of the S blocks
     [](const Config&, double S) { return (S * S + 1) / std::max(1.0, S); }, true});
}  // namespace
}  // namespace stale
