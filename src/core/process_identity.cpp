#include "src/core/process_identity.hpp"

#include <fstream>
#include <sstream>
#include <string>

namespace stale {

std::string process_identity(long pid) {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  if (!std::getline(boot, boot_id) || boot_id.empty()) return "";
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return "";
  // "pid (comm) state ppid …": comm may hold spaces and parentheses, so fields count from the last
  // ')'; the start time is field 22 of the line, the 20th after it
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  for (int i = 0; i < 20 && rest >> field; ++i) {
  }
  if (field.empty() || field.find_first_not_of("0123456789") != std::string::npos) return "";
  return boot_id + ":" + field;
}

}  // namespace stale
