#include "src/pipeline/chrome_trace.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "src/core/error.hpp"
#include "src/core/new_file.hpp"

namespace stale {

void write_chrome_trace(std::ostream& out, const Schedule& s, const SimResult& r, double us_per_unit) {
  if (r.start.size() != s.ops.size())
    throw UserError("chrome trace: the simulation kept no timeline (SimOptions::timeline is off)");
  char buf[256];
  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"schedule\":\"" << s.name << "\",\"stages\":" << s.stages
      << ",\"microbatches\":" << s.microbatches << "},\"traceEvents\":[\n";
  std::snprintf(buf, sizeof buf, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"%s\"}}",
                s.name.c_str());
  out << buf;
  for (int d = 0; d < s.stages; ++d) {
    std::snprintf(buf, sizeof buf,
                  ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":%d,\"args\":{\"name\":\"stage %d\"}}", d,
                  d);
    out << buf;
  }
  for (int d = 0; d < s.stages; ++d) {
    const int64_t first = s.offsets[d];
    const auto prog = s.program(d);
    for (size_t i = 0; i < prog.size(); ++i) {
      const Op& op = prog[i];
      const double t0 = r.start[first + i], t1 = r.end[first + i];
      std::snprintf(buf, sizeof buf,
                    ",\n{\"name\":\"%c%d\",\"cat\":\"%c\",\"ph\":\"X\",\"pid\":0,\"tid\":%d,\"ts\":%.6f,\"dur\":%.6f,"
                    "\"args\":{\"microbatch\":%d,\"block\":%d,\"chunk\":%d,\"step\":%s,\"average\":%s}}",
                    op_kind_letter(op.kind), op.microbatch, op_kind_letter(op.kind), d, t0 * us_per_unit,
                    (t1 - t0) * us_per_unit, op.microbatch, op.block, op.block / s.stages,
                    op.updates() ? "true" : "false", op.averages() ? "true" : "false");
      out << buf;
    }
  }
  out << "\n]}\n";
}

void write_chrome_trace(const std::string& path, const Schedule& s, const SimResult& r, double us_per_unit) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UserError(path + ": is a directory; --trace names the trace's file, e.g. " +
                    (std::filesystem::path(path) / "trace.json").string());
  const std::string partial = path + ".partial";
  // nothing half-written stays behind: the .partial goes whatever fails after it exists
  auto fail = [&](const std::string& why) {
    std::filesystem::remove(partial, ec);
    throw UserError(path + ": " + why);
  };
  {
    NewFileStream f(partial);  // never through a link at the .partial name (src/core/new_file.hpp)
    if (!f) throw UserError(path + ": cannot write the trace (does the directory exist?)");
    write_chrome_trace(f, s, r, us_per_unit);
    f.close();
    if (!f) fail("writing the trace failed (disk full?)");
  }
  std::filesystem::rename(partial, path, ec);
  if (ec) fail("cannot rename " + partial + " into place: " + ec.message());
}

}  // namespace stale
