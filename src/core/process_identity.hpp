#pragma once
// Which process a pid names, beyond the number: pids are reused, so "process 4242 is alive" says
// nothing about whether it is the process that wrote a file. The boot's id and the process's start
// time (in clock ticks since boot) name one process of one boot; a .partial records its writer's,
// and a later `stale run` asks whether that very process still runs.
#include <string>

namespace stale {

// "BOOT_ID:START_TICKS" of the live process `pid` on this machine, or "" where it cannot be told
// (no such process, no /proc)
std::string process_identity(long pid);

}  // namespace stale
