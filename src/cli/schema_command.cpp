#include "src/cli/schema_command.hpp"

#include <cstdio>
#include <string>

#include "src/commands/output_schema.hpp"

namespace stale {

namespace {

bool g_json = false;

// a JSON string: quotes, backslashes and control characters escaped; UTF-8 passes through
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

void print_json_rows(const char* key, const std::vector<OutputColumnRow>& rows, bool with_source, bool last) {
  std::printf("  %s: [\n", json_string(key).c_str());
  for (size_t i = 0; i < rows.size(); ++i) {
    const OutputColumnRow& r = rows[i];
    std::printf("    {\"name\": %s, \"dtype\": %s, \"unit\": %s, \"description\": %s", json_string(r.name).c_str(),
                json_string(r.dtype).c_str(), json_string(r.unit).c_str(), json_string(r.description).c_str());
    if (with_source) std::printf(", \"from\": %s", r.source.empty() ? "null" : json_string(r.source).c_str());
    std::printf("}%s\n", i + 1 < rows.size() ? "," : "");
  }
  std::printf("  ]%s\n", last ? "" : ",");
}

void print_text_rows(const char* title, const std::vector<OutputColumnRow>& rows) {
  std::printf("%s:\n", title);
  for (const auto& r : rows)
    std::printf("  %-18s %-8s %-22s %s%s\n", r.name.c_str(), r.dtype.c_str(), r.unit.c_str(), r.description.c_str(),
                r.source.empty() ? "" : ("  [last of " + r.source + "]").c_str());
}

}  // namespace

void add_schema_command(CLI::App& app) {
  auto* s = app.add_subcommand("schema", "the run file's /metrics series and the sweep index's columns: type, unit, meaning");
  s->add_flag("--json", g_json, "print the table as JSON (what scripts/check_metrics_schema.py reads)");
}

int run_schema_command() {
  if (g_json) {
    std::printf("{\n");
    print_json_rows("metrics", metric_rows(), false, false);
    print_json_rows("index", index_rows(), true, true);
    std::printf("}\n");
    return 0;
  }
  print_text_rows("/metrics (run file; one value per logged update)", metric_rows());
  print_text_rows("index.csv, index.h5 (sweep; one row per run)", index_rows());
  return 0;
}

}  // namespace stale
