#include "postproc/report_dump.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "functracer/schema.h"
#include "postproc/json_writer.h"
#include "postproc/trace_reader.h"

namespace ft::post {

namespace {

std::string hex_string(uint64_t v) { return fmt::format("{:#x}", v); }

void write_value(JsonWriter& w, const TraceValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) {
    w.integer(*i);
  } else if (auto* h = std::get_if<Hex>(&v)) {
    w.string(hex_string(h->v));
  } else if (auto* s = std::get_if<std::string>(&v)) {
    w.string(*s);
  } else {
    w.begin_array();
    for (uint64_t x : std::get<HexList>(v)) w.string(hex_string(x));
    w.end_array();
  }
}

}  // namespace

void append_record_json(std::string& out, int64_t pid, const TraceRecord& r,
                        Demangler& demangler) {
  JsonWriter w(out);
  std::vector<std::string_view> used = {"pid", "tid", "seq", "ts_ns", "type"};
  if (r.get_str(schema::key::kFunction)) used.push_back("function_demangled");
  w.begin_object();
  w.key("pid").integer(pid);
  w.key("tid").integer(r.tid);
  w.key("seq").unsigned_integer(r.seq);
  w.key("ts_ns").unsigned_integer(r.ts_ns);
  w.key("type").string(r.type);
  // Keys of renamed fields must outlive `used`.
  std::vector<std::string> renamed;
  renamed.reserve(r.fields.size());
  bool demangled_written = false;
  for (const TraceField& f : r.fields) {
    if (f.key == schema::key::kPid) {
      auto* v = std::get_if<int64_t>(&f.value);
      if (v && *v == pid) continue;
    }
    std::string_view key = f.key;
    bool taken = std::find(used.begin(), used.end(), key) != used.end();
    if (taken) {
      std::string k = "field_" + f.key;
      while (std::find(used.begin(), used.end(), k) != used.end()) k = "field_" + k;
      renamed.push_back(std::move(k));
      key = renamed.back();
    }
    used.push_back(key);
    w.key(key);
    write_value(w, f.value);
    if (f.key == schema::key::kFunction && !taken && !demangled_written) {
      if (auto* s = std::get_if<std::string>(&f.value)) {
        w.key("function_demangled").string(demangler.full(*s));
        demangled_written = true;
      }
    }
  }
  w.end_object();
}

Status report_dump(const ReportOptions& options, Output& out, Diagnostics& diag) {
  Demangler demangler;
  std::string line;
  for (const std::string& path : options.traces) {
    auto reader = TraceReader::open(path, diag);
    if (!reader) return reader.error();
    const std::string pid_prefix = fmt::format("{}: ", reader->pid());
    while (const TraceRecord* r = reader->next()) {
      if (options.tid && *options.tid != r->tid) continue;
      line.clear();
      if (options.json) {
        append_record_json(line, reader->pid(), *r, demangler);
      } else {
        line += pid_prefix;
        append_record(line, *r);
      }
      line += '\n';
      out.write(line);
    }
  }
  return {};
}

}  // namespace ft::post
